package dev.ar4j.internal.nccl;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * Polls a communicator's state ({@code ncclCommGetAsyncError}) until it leaves
 * {@code ncclInProgress}, the deadline passes, or the stop condition turns true; the one wait of
 * a non-blocking communicator (init, an enqueue, a group end, a split, a finalize). Spins for the
 * first few microseconds (an enqueue usually settles at once), then parks, backing off to 1 ms.
 */
final class AsyncStateWait {
    /** How the wait ended. */
    enum Outcome {
        /** The state left {@code ncclInProgress}: {@link Result#state()} is it (or the query's own failure). */
        SETTLED,
        /** The deadline passed with the state still {@code ncclInProgress}. */
        TIMED_OUT,
        /** The stop condition turned true first. */
        STOPPED
    }

    /** The outcome, the last state seen, and how long the wait took. */
    record Result(Outcome outcome, int state, long waitedNanos) {
    }

    private static final long SPIN_NANOS = 20_000;
    private static final long FIRST_PARK_NANOS = 10_000;
    private static final long LONGEST_PARK_NANOS = 1_000_000;

    private AsyncStateWait() {
    }

    /**
     * Waits as described above. {@code scratch} holds one int. Interrupts do not end the wait (it is
     * bounded); the thread's interrupt status is kept.
     *
     * @param timeoutNanos the longest wait, > 0
     */
    static Result await(NcclCalls calls, MemorySegment comm, long timeoutNanos, BooleanSupplier stop,
                        MemorySegment scratch) {
        long start = System.nanoTime();
        long park = FIRST_PARK_NANOS;
        boolean interrupted = false;
        try {
            while (true) {
                int query = calls.commGetAsyncError(comm, scratch);
                int state = query != NcclErrors.SUCCESS ? query : scratch.get(ValueLayout.JAVA_INT, 0);
                long waited = System.nanoTime() - start;
                if (state != NcclErrors.IN_PROGRESS) {
                    return new Result(Outcome.SETTLED, state, waited);
                }
                if (stop.getAsBoolean()) {
                    return new Result(Outcome.STOPPED, state, waited);
                }
                if (waited >= timeoutNanos) {
                    return new Result(Outcome.TIMED_OUT, state, waited);
                }
                if (waited < SPIN_NANOS) {
                    Thread.onSpinWait();
                } else {
                    LockSupport.parkNanos(Math.min(park, timeoutNanos - waited));
                    park = Math.min(LONGEST_PARK_NANOS, park * 2);
                    if (Thread.interrupted()) {
                        interrupted = true;
                    }
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
