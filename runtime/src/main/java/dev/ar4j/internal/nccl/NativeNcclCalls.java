package dev.ar4j.internal.nccl;

import dev.ar4j.bindings.nccl.nccl_h;
import dev.ar4j.cuda.Cuda;
import dev.ar4j.cuda.DeviceAttribute;

import java.lang.foreign.MemorySegment;

/** {@link NcclCalls} through the jextract bindings of the loaded libnccl. */
final class NativeNcclCalls implements NcclCalls {
    static final NativeNcclCalls INSTANCE = new NativeNcclCalls();

    private NativeNcclCalls() {
    }

    @Override
    public int commInitRankConfig(MemorySegment commOut, int nranks, MemorySegment uniqueId, int rank,
                                  MemorySegment config) {
        return nccl_h.ncclCommInitRankConfig(commOut, nranks, uniqueId, rank, config);
    }

    @Override
    public int commGetAsyncError(MemorySegment comm, MemorySegment stateOut) {
        return nccl_h.ncclCommGetAsyncError(comm, stateOut);
    }

    @Override
    public int commCuDevice(MemorySegment comm, MemorySegment deviceOut) {
        return nccl_h.ncclCommCuDevice(comm, deviceOut);
    }

    @Override
    public int commSplit(MemorySegment comm, int color, int key, MemorySegment commOut, MemorySegment config) {
        return nccl_h.ncclCommSplit(comm, color, key, commOut, config);
    }

    @Override
    public int commUserRank(MemorySegment comm, MemorySegment rankOut) {
        return nccl_h.ncclCommUserRank(comm, rankOut);
    }

    @Override
    public int commCount(MemorySegment comm, MemorySegment countOut) {
        return nccl_h.ncclCommCount(comm, countOut);
    }

    @Override
    public int commFinalize(MemorySegment comm) {
        return nccl_h.ncclCommFinalize(comm);
    }

    @Override
    public int commDestroy(MemorySegment comm) {
        return freed(nccl_h.ncclCommDestroy(comm));
    }

    @Override
    public int commAbort(MemorySegment comm) {
        return freed(nccl_h.ncclCommAbort(comm));
    }

    /**
     * Destroy and abort free the communicator before they return, so an {@code ncclInProgress}
     * from them (a non-blocking communicator's NCCL may say so) leaves nothing to poll: success.
     */
    private static int freed(int result) {
        return result == NcclErrors.IN_PROGRESS ? NcclErrors.SUCCESS : result;
    }

    @Override
    public String errorString(int result) {
        return NcclErrors.cString(nccl_h.ncclGetErrorString(result));
    }

    @Override
    public String lastError(MemorySegment comm) {
        return NcclErrors.cString(nccl_h.ncclGetLastError(comm));
    }

    @Override
    public int computeCapabilityMajor(int device) {
        return Cuda.deviceAttribute(DeviceAttribute.COMPUTE_CAPABILITY_MAJOR, device);
    }
}
