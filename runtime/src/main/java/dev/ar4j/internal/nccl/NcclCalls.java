package dev.ar4j.internal.nccl;

import dev.ar4j.nccl.NcclException;

import java.lang.foreign.MemorySegment;

/**
 * The NCCL functions that a communicator's life (init, waits, split, finalize, abort) is made of,
 * as an interface so that the state machine around them can be tested without a GPU.
 * {@link NativeNcclCalls} is the real one. Each returns the {@code ncclResult_t}.
 */
interface NcclCalls {
    int commInitRankConfig(MemorySegment commOut, int nranks, MemorySegment uniqueId, int rank, MemorySegment config);

    int commGetAsyncError(MemorySegment comm, MemorySegment stateOut);

    int commCuDevice(MemorySegment comm, MemorySegment deviceOut);

    int commSplit(MemorySegment comm, int color, int key, MemorySegment commOut, MemorySegment config);

    int commUserRank(MemorySegment comm, MemorySegment rankOut);

    int commCount(MemorySegment comm, MemorySegment countOut);

    int commFinalize(MemorySegment comm);

    int commDestroy(MemorySegment comm);

    int commAbort(MemorySegment comm);

    /** {@code ncclGetErrorString}. */
    String errorString(int result);

    /** {@code ncclGetLastError}; empty if none. */
    String lastError(MemorySegment comm);

    /** The CUDA compute capability (major) of {@code device}, for the fp8 reduction check. */
    int computeCapabilityMajor(int device);

    /** {@link NcclErrors#exception(int, String, MemorySegment)} with NCCL's strings read through these calls. */
    default NcclException exception(int result, String call, MemorySegment comm) {
        return NcclErrors.exception(result, call, errorString(result), lastError(comm));
    }

    /** {@code "; NCCL's last error: ..."}, or empty when NCCL has none. */
    default String lastErrorTail(MemorySegment comm) {
        String last = lastError(comm);
        return last.isEmpty() ? "" : "; NCCL's last error: " + last;
    }
}
