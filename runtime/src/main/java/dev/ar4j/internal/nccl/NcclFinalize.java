package dev.ar4j.internal.nccl;

import dev.ar4j.nccl.NcclException;
import dev.ar4j.nccl.NcclTimeoutException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.function.BooleanSupplier;

/**
 * The orderly end of a non-blocking communicator: {@code ncclCommFinalize} (flushes the work still
 * outstanding with the peers), polled against the communicator's timeout, then
 * {@code ncclCommDestroy}; {@code ncclCommAbort} instead if the finalize fails, expires or an
 * abort is asked for meanwhile.
 */
final class NcclFinalize {
    private NcclFinalize() {
    }

    static void thenDestroy(NcclCalls calls, MemorySegment comm, int rank, int nranks, Duration timeout,
                            BooleanSupplier abortRequested) {
        String call = "ncclCommFinalize(rank " + rank + " of " + nranks + ")";
        int result = calls.commFinalize(comm);
        AsyncStateWait.Result wait = null;
        if (result == NcclErrors.SUCCESS || result == NcclErrors.IN_PROGRESS) {
            try (Arena arena = Arena.ofConfined()) {
                wait = AsyncStateWait.await(calls, comm, NcclTiming.toNanos(timeout), abortRequested,
                        arena.allocate(ValueLayout.JAVA_INT));
            }
            if (wait.outcome() == AsyncStateWait.Outcome.SETTLED) {
                result = wait.state();
            }
        }
        if (wait != null && wait.outcome() == AsyncStateWait.Outcome.SETTLED && result == NcclErrors.SUCCESS) {
            check(calls, calls.commDestroy(comm), "ncclCommDestroy", rank, nranks);
            return;
        }
        NcclException e;
        if (wait == null || wait.outcome() == AsyncStateWait.Outcome.SETTLED) {
            e = calls.exception(result, call, comm);
        } else if (wait.outcome() == AsyncStateWait.Outcome.TIMED_OUT) {
            e = new NcclTimeoutException(call + ": the peers' outstanding work on this communicator did not finish within "
                    + NcclTiming.format(timeout) + " (a peer is gone or has not reached its close); the communicator was"
                    + " aborted instead (ncclCommAbort)" + calls.lastErrorTail(comm), call, rank, nranks, timeout,
                    calls.lastError(comm));
        } else {
            e = null; // abort() asked for during the finalize: abort quietly
        }
        int aborted = calls.commAbort(comm);
        if (e == null) {
            check(calls, aborted, "ncclCommAbort", rank, nranks);
            return;
        }
        if (aborted != NcclErrors.SUCCESS) {
            e.addSuppressed(calls.exception(aborted, "ncclCommAbort(rank " + rank + ")", MemorySegment.NULL));
        }
        throw e;
    }

    private static void check(NcclCalls calls, int result, String what, int rank, int nranks) {
        if (result != NcclErrors.SUCCESS) {
            throw calls.exception(result, what + "(rank " + rank + " of " + nranks + ")", MemorySegment.NULL);
        }
    }
}
