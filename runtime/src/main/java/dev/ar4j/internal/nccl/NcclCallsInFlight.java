package dev.ar4j.internal.nccl;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * Counts the calls in flight on a native resource (an NCCL communicator), so that it is not freed
 * while a thread is inside a call that uses it, the way a shared {@code Arena} does: each call
 * {@link #enter()}s and {@link #exit()}s; the one closer wins {@link #beginClose()}, after which
 * entering fails, then waits (bounded) for the calls inside to leave before it frees. Waits inside
 * a call watch {@link #isClosing()} to end early.
 */
final class NcclCallsInFlight {
    private static final int OPEN = 0;
    private static final int CLOSING = 1;
    private static final int CLOSED = 2;

    private final AtomicInteger inside = new AtomicInteger();
    private final AtomicInteger state = new AtomicInteger(OPEN);

    /** Counts the calling thread in; false (and not counted) once closing has begun. */
    boolean enter() {
        inside.incrementAndGet();
        if (state.get() != OPEN) {
            inside.decrementAndGet();
            return false;
        }
        return true;
    }

    /** Counts the calling thread out; once per successful {@link #enter()}. */
    void exit() {
        inside.decrementAndGet();
    }

    /** True for exactly one caller: the one that closes. */
    boolean beginClose() {
        return state.compareAndSet(OPEN, CLOSING);
    }

    /** True once {@link #beginClose()} has run. */
    boolean isClosing() {
        return state.get() != OPEN;
    }

    /** True once the closer has finished. */
    boolean isClosed() {
        return state.get() == CLOSED;
    }

    /** Marks the close finished. */
    void closed() {
        state.set(CLOSED);
    }

    /** Calls inside now. */
    int inside() {
        return inside.get();
    }

    /**
     * Waits until no call is inside, at most {@code timeoutNanos}; only after {@link #beginClose()}.
     *
     * @return true if none is inside
     */
    boolean awaitQuiescent(long timeoutNanos) {
        long start = System.nanoTime();
        long park = 1_000;
        while (inside.get() != 0) {
            if (System.nanoTime() - start >= timeoutNanos) {
                return false;
            }
            LockSupport.parkNanos(park);
            park = Math.min(1_000_000, park * 2);
        }
        return true;
    }
}
