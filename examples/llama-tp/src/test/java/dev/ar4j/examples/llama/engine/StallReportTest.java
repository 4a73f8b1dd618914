package dev.ar4j.examples.llama.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The stall report names each busy rank, its thread, its state and where it is held; its delay is whole seconds. */
class StallReportTest {

    private static void heldInAKnownPlace(CountDownLatch entered, CountDownLatch release) throws InterruptedException {
        entered.countDown();
        release.await(30, TimeUnit.SECONDS);
    }

    /**
     * A thread that has entered {@link #heldInAKnownPlace} and stays there until closed (then it is released and
     * joined, at most 10 s).
     */
    private record HeldThread(Thread thread, CountDownLatch release) implements AutoCloseable {

        /** Starts it and waits (at most 10 s) until it is inside {@link #heldInAKnownPlace}. */
        static HeldThread start(String name) throws InterruptedException {
            CountDownLatch entered = new CountDownLatch(1), release = new CountDownLatch(1);
            Thread t = new Thread(() -> {
                try {
                    heldInAKnownPlace(entered, release);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, name);
            t.start();
            HeldThread held = new HeldThread(t, release);
            if (!entered.await(10, TimeUnit.SECONDS)) {
                held.close();
                throw new AssertionError(name + " did not reach heldInAKnownPlace in 10 s");
            }
            return held;
        }

        @Override
        public void close() throws InterruptedException {
            release.countDown();
            thread.join(10_000);
        }
    }

    @Test
    void aBusyRankIsNamedWithWhereItIsHeld() throws Exception {
        try (HeldThread held = HeldThread.start("rank-3")) {
            Thread t = held.thread();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (t.getState() != Thread.State.TIMED_WAITING) {
                assertTrue(System.nanoTime() < deadline, "the held thread never parked: " + t.getState());
                Thread.onSpinWait();
            }
            String text = StallReport.describe("reference run", Duration.ofSeconds(10),
                    List.of(new StallReport.Busy(3, t)), Map.of());
            assertTrue(text.startsWith("ar4j-llama: reference run still running after 10 s on 1 rank"), text);
            assertTrue(text.contains("rank 3 (thread rank-3, TIMED_WAITING)"), text);
            assertTrue(text.contains("StallReportTest.heldInAKnownPlace"), text);
            long frames = text.lines().filter(l -> l.startsWith("    at ")).count();
            assertTrue(frames >= 2 && frames <= StallReport.FRAMES, text);
        }
    }

    @Test
    void anotherThreadInOwnCodeIsNamedAfterTheRanks() throws Exception {
        try (HeldThread held = HeldThread.start("freeing-thread")) {
            Thread other = held.thread();
            StackTraceElement[] own = other.getStackTrace();
            StackTraceElement[] foreign = {new StackTraceElement("java.lang.Object", "wait", "Object.java", 1)};
            assertTrue(StallReport.inOwnCode(own), "a thread in StallReportTest is in dev.ar4j code");
            assertTrue(!StallReport.inOwnCode(foreign) && !StallReport.inOwnCode(new StackTraceElement[0]));
            String text = StallReport.describe("prefill", Duration.ofSeconds(10), List.of(), Map.of(other, own));
            assertTrue(text.contains("on 0 ranks"), text);
            assertTrue(text.contains("other thread in dev.ar4j.* code: freeing-thread ("), text);
            assertTrue(text.contains("StallReportTest.heldInAKnownPlace"), text);
            // The JVM-wide form finds it too (it is parked in this test's code), and leaves out the calling thread.
            String all = StallReport.describe("prefill", Duration.ofSeconds(10), List.of());
            assertTrue(all.contains("freeing-thread") && !all.contains(Thread.currentThread().getName() + " ("), all);
        }
    }

    @Test
    void theDelayIsWholeSecondsAndOffByDefault() {
        assertEquals(Duration.ZERO, StallReport.delay((String) null));
        assertEquals(Duration.ZERO, StallReport.delay(" "));
        assertEquals(Duration.ZERO, StallReport.delay("0"));
        assertEquals(Duration.ofSeconds(10), StallReport.delay("10"));
        for (String bad : new String[] {"-1", "1.5", "ten"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> StallReport.delay(bad));
            assertTrue(e.getMessage().contains("-Dar4j.llama.stallReport=" + bad)
                    && e.getMessage().contains("whole seconds"), e.getMessage());
        }
    }
}
