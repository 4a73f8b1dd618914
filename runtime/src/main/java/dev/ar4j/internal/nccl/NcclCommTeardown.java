package dev.ar4j.internal.nccl;

import java.lang.foreign.MemorySegment;
import java.time.Duration;

/**
 * How an {@link NcclCommunicator} ends, exactly once: the one closer wins the
 * {@link NcclCallsInFlight}, waits (bounded) for the calls on other threads to leave, then aborts
 * ({@code ncclCommAbort}), destroys a blocking communicator ({@code ncclCommDestroy}), or finalizes a non-blocking one
 * ({@link NcclFinalize}: finalize, then destroy, or abort if that fails or an abort is asked for).
 */
final class NcclCommTeardown {
    /** How long close and abort wait for calls on other threads to leave before giving up on freeing. */
    private static final long QUIESCE_NANOS = 2_000_000_000L;
    private static final System.Logger LOG = System.getLogger(NcclCommunicator.class.getName());

    private final NcclCommunicator owner;
    private final NcclCalls calls;
    private final MemorySegment comm;
    private final int rank;
    private final int nranks;
    private final boolean blocking;
    private final Duration timeout;
    private final NcclCallsInFlight inFlight;
    private final NcclCallProtocol protocol;
    private volatile boolean abortRequested;

    NcclCommTeardown(NcclCommunicator owner, NcclCalls calls, MemorySegment comm, int rank, int nranks,
                     boolean blocking, Duration timeout, NcclCallsInFlight inFlight, NcclCallProtocol protocol) {
        this.owner = owner;
        this.calls = calls;
        this.comm = comm;
        this.rank = rank;
        this.nranks = nranks;
        this.blocking = blocking;
        this.timeout = timeout;
        this.inFlight = inFlight;
        this.protocol = protocol;
    }

    /** {@link NcclCommunicator#abort()}. */
    void abort() {
        abortRequested = true;
        if (!inFlight.beginClose()) {
            return;
        }
        free(true);
    }

    /** {@link NcclCommunicator#destroyOrAbort(boolean)}. */
    void destroyOrAbort(boolean groupFailed) {
        if (!inFlight.beginClose()) {
            return;
        }
        free(groupFailed || protocol.failure() != null || abortRequested);
    }

    private void free(boolean abort) {
        if (!inFlight.awaitQuiescent(QUIESCE_NANOS)) {
            inFlight.closed();
            String message = owner + ": " + inFlight.inside() + " call(s) on other threads are still inside NCCL after "
                    + NcclTiming.formatNanos(QUIESCE_NANOS) + "; the communicator is left allocated (leaked) rather than"
                    + " freed under them. Only a blocking communicator can get here: prefer the non-blocking init";
            LOG.log(System.Logger.Level.WARNING, message);
            throw new IllegalStateException(message);
        }
        try {
            if (abort) {
                check(calls.commAbort(comm), "ncclCommAbort");
            } else if (blocking) {
                check(calls.commDestroy(comm), "ncclCommDestroy");
            } else {
                NcclFinalize.thenDestroy(calls, comm, rank, nranks, timeout, () -> abortRequested);
            }
        } finally {
            inFlight.closed();
        }
    }

    private void check(int result, String what) {
        if (result != NcclErrors.SUCCESS) {
            throw calls.exception(result, what + "(rank " + rank + " of " + nranks + ")", MemorySegment.NULL);
        }
    }
}
