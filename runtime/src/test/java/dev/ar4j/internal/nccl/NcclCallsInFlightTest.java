package dev.ar4j.internal.nccl;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The count of calls in flight that keeps a communicator from being freed under a call: never a call inside after the free. */
@Timeout(30)
class NcclCallsInFlightTest {

    @Test
    void noCallIsInsideOnceTheCloserHasWaitedAndNoneEntersAfter() throws Exception {
        for (int round = 0; round < 20; round++) {
            NcclCallsInFlight inFlight = new NcclCallsInFlight();
            AtomicBoolean freed = new AtomicBoolean();
            AtomicBoolean stop = new AtomicBoolean();
            AtomicLong entered = new AtomicLong();
            AtomicLong insideAfterFree = new AtomicLong();
            List<Thread> callers = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                Thread caller = new Thread(() -> {
                    while (!stop.get()) {
                        if (inFlight.enter()) {
                            entered.incrementAndGet();
                            for (int spin = 0; spin < 50; spin++) {
                                if (freed.get()) {
                                    insideAfterFree.incrementAndGet();
                                }
                                Thread.onSpinWait();
                            }
                            inFlight.exit();
                        }
                    }
                });
                caller.start();
                callers.add(caller);
            }
            while (entered.get() < 1000) {
                Thread.onSpinWait();
            }
            assertTrue(inFlight.beginClose());
            assertFalse(inFlight.beginClose(), "one closer only");
            assertTrue(inFlight.awaitQuiescent(2_000_000_000L));
            freed.set(true);
            long enteredAtFree = entered.get();
            Thread.sleep(5);
            stop.set(true);
            for (Thread caller : callers) {
                caller.join(5_000);
            }
            assertEquals(0, insideAfterFree.get(), "a call was inside after the free (round " + round + ")");
            assertEquals(enteredAtFree, entered.get(), "a call entered after close began");
            assertEquals(0, inFlight.inside());
        }
    }

    @Test
    void aCallThatStaysInsideMakesTheWaitGiveUpBounded() {
        NcclCallsInFlight inFlight = new NcclCallsInFlight();
        assertTrue(inFlight.enter());
        assertTrue(inFlight.beginClose());
        long start = System.nanoTime();
        assertFalse(inFlight.awaitQuiescent(100_000_000L));
        long millis = (System.nanoTime() - start) / 1_000_000;
        assertTrue(millis >= 100 && millis < 2_000, "gave up after " + millis + " ms");
        assertTrue(inFlight.isClosing());
        assertFalse(inFlight.enter());
        inFlight.exit();
        assertTrue(inFlight.awaitQuiescent(1_000_000L));
    }
}
