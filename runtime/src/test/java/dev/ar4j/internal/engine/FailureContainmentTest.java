package dev.ar4j.internal.engine;

import dev.ar4j.Ar4jException;
import dev.ar4j.PeerLostException;
import dev.ar4j.PeerTimeoutException;
import dev.ar4j.internal.engine.FailureState.Failure;
import dev.ar4j.internal.engine.FailureState.Kind;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The failure machinery without a GPU: the watchdog against fake probes (seeded counters, no
 * timing luck), the call guard's one-thread rule and close protocol, the failure state, and
 * containment telling the listener exactly once.
 */
class FailureContainmentTest {

    private static final long WAIT_S = 10;

    private static Failure lost(int peer) {
        return new Failure(Kind.PEER_LOST, peer, "rank 0: rank " + peer + " lost", null);
    }

    @Test
    void watchdogHandsTheFirstProbedFailureToTheHandlerOnce() throws Exception {
        AtomicInteger polls = new AtomicInteger();
        int failAt = 7;  // the probe reports a timeout of rank 1 on its 7th poll
        Watchdog.Probe kernels = () -> polls.incrementAndGet() >= failAt
                ? new Failure(Kind.PEER_TIMEOUT, 1, "rank 0: kernel gave up on rank 1", null) : null;
        Watchdog.Probe never = () -> null;
        AtomicInteger handled = new AtomicInteger();
        AtomicReference<Failure> seen = new AtomicReference<>();
        CountDownLatch done = new CountDownLatch(1);
        Watchdog w = new Watchdog("test-watchdog", Duration.ofMillis(1), List.of(kernels, never), f -> {
            handled.incrementAndGet();
            seen.set(f);
            done.countDown();
        });
        w.start();
        assertTrue(done.await(WAIT_S, TimeUnit.SECONDS), "the watchdog never reported the failure");
        assertTrue(w.stop(), "the watchdog thread did not stop");
        assertEquals(1, handled.get());
        assertEquals(Kind.PEER_TIMEOUT, seen.get().kind());
        assertEquals(1, seen.get().peer());
        assertEquals(failAt, polls.get(), "the watchdog kept polling after the failure");
        assertTrue(w.thread().isDaemon());
    }

    @Test
    void aReportFromAnotherThreadIsHandledEvenWithoutPolling() throws Exception {
        AtomicInteger polls = new AtomicInteger();
        CountDownLatch done = new CountDownLatch(1);
        AtomicReference<Failure> seen = new AtomicReference<>();
        Watchdog w = new Watchdog("test-watchdog", Duration.ZERO, List.of(() -> {
            polls.incrementAndGet();
            return null;
        }), f -> {
            seen.set(f);
            done.countDown();
        });
        w.start();
        Thread reporter = Thread.ofPlatform().start(() -> w.report(lost(3)));
        reporter.join(TimeUnit.SECONDS.toMillis(WAIT_S));
        assertTrue(done.await(WAIT_S, TimeUnit.SECONDS), "the report was not handled");
        assertEquals(3, seen.get().peer());
        assertEquals(0, polls.get(), "an interval of zero must not poll");
        w.report(lost(4));  // after the first failure: ignored, no second handling
        assertTrue(w.stop());
        assertEquals(3, seen.get().peer());
    }

    @Test
    void aProbeThatThrowsIsAFailureNotASilentStop() {
        Watchdog w = new Watchdog("test-watchdog", Duration.ofMillis(1), List.of(() -> {
            throw new IllegalStateException("ncclCommGetAsyncError returned ncclInvalidArgument");
        }), f -> { });
        Failure f = w.pollOnce();
        assertEquals(Kind.PEER_LOST, f.kind());
        assertTrue(f.message().contains("ncclInvalidArgument"), f.message());
        assertTrue(w.stop(), "stopping a watchdog that never started");
    }

    /**
     * Starts thread {@code name} inside an allReduce of {@code guard} and returns once it is inside;
     * it leaves when {@code release} is counted down (or after {@link #WAIT_S} s).
     */
    private static Thread callInFlight(CallGuard guard, String name, CountDownLatch release) throws InterruptedException {
        CountDownLatch inside = new CountDownLatch(1);
        Thread owner = Thread.ofPlatform().name(name).start(() -> {
            guard.enter("allReduce");
            try {
                inside.countDown();
                release.await(WAIT_S, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                guard.exit();
            }
        });
        assertTrue(inside.await(WAIT_S, TimeUnit.SECONDS), name + " never got inside the call");
        return owner;
    }

    @Test
    void aSecondThreadIsRefusedNamingBothThreads() throws Exception {
        CallGuard guard = new CallGuard(new FailureState());
        CountDownLatch release = new CountDownLatch(1);
        Thread owner = callInFlight(guard, "rank-0-decode", release);
        AtomicReference<Throwable> refused = new AtomicReference<>();
        Thread intruder = Thread.ofPlatform().name("metrics-poller").start(() -> {
            try {
                guard.enter("register");
                guard.exit();
            } catch (Throwable t) {
                refused.set(t);
            }
        });
        intruder.join(TimeUnit.SECONDS.toMillis(WAIT_S));
        IllegalStateException e = assertInstanceOf(IllegalStateException.class, refused.get());
        assertTrue(e.getMessage().contains("rank-0-decode") && e.getMessage().contains("metrics-poller")
                && e.getMessage().contains("allReduce") && e.getMessage().contains("register"), e.getMessage());
        release.countDown();
        owner.join(TimeUnit.SECONDS.toMillis(WAIT_S));
        guard.enter("allReduce");  // free again: the next call from any thread is accepted
        guard.exit();
    }

    @Test
    void closeWaitsForTheCallInFlightAndRefusesNewOnes() throws Exception {
        CallGuard guard = new CallGuard(new FailureState());
        CountDownLatch release = new CountDownLatch(1);
        Thread owner = callInFlight(guard, "caller", release);
        assertTrue(guard.beginClose());
        assertFalse(guard.beginClose(), "closing twice");
        assertSame(owner, guard.awaitIdle(TimeUnit.MILLISECONDS.toNanos(20)), "the call in flight is named");
        release.countDown();
        assertNull(guard.awaitIdle(TimeUnit.SECONDS.toNanos(WAIT_S)), "idle once the call left");
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> guard.enter("allReduce"));
        assertTrue(e.getMessage().contains("closed"), e.getMessage());
        owner.join();
    }

    @Test
    void aFailedGuardThrowsTheNamedFailureFreshEachTime() {
        FailureState state = new FailureState();
        CallGuard guard = new CallGuard(state);
        assertTrue(state.fail(lost(1)));
        assertFalse(state.fail(lost(2)), "the first failure wins");
        PeerLostException a = assertThrows(PeerLostException.class, () -> guard.enter("allReduce"));
        PeerLostException b = assertThrows(PeerLostException.class, () -> guard.enter("allReduce"));
        assertEquals(1, a.peer());
        assertEquals(1, b.peer());
        assertTrue(a != b, "a fresh exception per call");
        // The guard was released by the failed entry: another thread is refused for the failure, not for the owner.
        assertInstanceOf(Ar4jException.class, a);
        assertInstanceOf(PeerTimeoutException.class,
                new Failure(Kind.PEER_TIMEOUT, 5, "x", null).toException());
        assertEquals(5, ((PeerTimeoutException) new Failure(Kind.PEER_TIMEOUT, 5, "x", null).toException()).peer());
        assertInstanceOf(IllegalStateException.class, new Failure(Kind.ABORTED, -1, "x", null).toException());
    }

    @Test
    void containmentTellsTheListenerOnceAndWaitsForTheCallInFlight() throws Exception {
        FailureState state = new FailureState();
        CallGuard guard = new CallGuard(state);
        AtomicInteger told = new AtomicInteger();
        AtomicReference<RuntimeException> what = new AtomicReference<>();
        Containment c = new Containment(0, state, guard, null, null, failure -> {
            told.incrementAndGet();
            what.set(failure);
        });
        assertTrue(c.contain(lost(1)));
        assertFalse(c.contain(lost(2)));
        assertEquals(1, told.get());
        assertEquals(1, assertInstanceOf(PeerLostException.class, what.get()).peer());
        assertNull(c.whileOpen(() -> lost(9)), "probes stop once the communicator failed");
        AtomicInteger freed = new AtomicInteger();
        c.free(freed::incrementAndGet);
        c.free(freed::incrementAndGet);
        assertEquals(1, freed.get(), "freed exactly once");
    }

    @Test
    void aListenerThatThrowsDoesNotStopContainment() {
        FailureState state = new FailureState();
        Containment c = new Containment(0, state, new CallGuard(state), null, null, failure -> {
            throw new IllegalStateException("listener bug");
        });
        assertTrue(c.contain(lost(1)));
        assertTrue(state.failed());
    }
}
