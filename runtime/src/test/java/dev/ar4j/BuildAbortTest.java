package dev.ar4j;

import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The {@link BuildAbort} handle without a GPU: an abort before the build, one handle for several builds, bad input. */
class BuildAbortTest {

    private static Communicator.Builder twoRanks() {
        return Communicator.builder().rank(1).worldSize(2).masterAddress("127.0.0.1", 29999).device(0)
                .nccl(false).rendezvousTimeout(Duration.ofSeconds(60));
    }

    @Test
    void aBuildWhoseHandleWasAbortedFailsBeforeItTouchesTheGpuOrTheNetwork() {
        BuildAbort abort = new BuildAbort();
        assertFalse(abort.isAborted());
        abort.abort("cancelled before the start");
        abort.abort("a second reason is ignored");
        assertTrue(abort.isAborted());
        assertTrue(abort.toString().contains("cancelled before the start"), abort.toString());
        long start = System.nanoTime();
        BuildAbortedException e = assertThrows(BuildAbortedException.class, () -> twoRanks().abortWith(abort).build());
        assertTrue(e.getMessage().contains("cancelled before the start") && e.getMessage().contains("before it started"),
                e.getMessage());
        assertTrue(System.nanoTime() - start < 2_000_000_000L, "a build aborted beforehand must fail at once");
        assertTrue(e instanceof Ar4jException);
    }

    @Test
    void oneHandleEndsEveryBuildItIsGivenTo() {
        BuildAbort abort = new BuildAbort();
        abort.abort("so that the builds end at once");
        Communicator.Builder builder = twoRanks().abortWith(abort);
        assertThrows(BuildAbortedException.class, builder::build);
        assertThrows(BuildAbortedException.class, builder::build);
        assertThrows(BuildAbortedException.class, () -> twoRanks().rank(0).abortWith(abort).build());
    }

    @Test
    void nullsAreRefused() {
        assertThrows(NullPointerException.class, () -> new BuildAbort().abort(null));
        assertThrows(NullPointerException.class, () -> Communicator.builder().abortWith(null));
    }
}
