package dev.ar4j.nccl;

import dev.ar4j.bindings.nccl.nccl_h;

import java.lang.foreign.MemorySegment;

/** The one checking helper for NCCL calls. */
final class NcclErrors {
    private static final String[] RESULT_NAMES = {
            "ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError", "ncclInvalidArgument",
            "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress", "ncclTimeout"};

    private NcclErrors() {
    }

    /** Throws unless {@code result} is {@code ncclSuccess}. {@code comm} may be {@link MemorySegment#NULL}. */
    static void check(int result, String call, MemorySegment comm) {
        if (result != 0) {
            throw exception(result, call, comm);
        }
    }

    static NcclException exception(int result, String call, MemorySegment comm) {
        return new NcclException(call, result, resultName(result), cString(nccl_h.ncclGetErrorString(result)),
                cString(nccl_h.ncclGetLastError(comm)));
    }

    /** The name of an {@code ncclResult_t}. */
    static String resultName(int result) {
        return result >= 0 && result < RESULT_NAMES.length ? RESULT_NAMES[result] : "ncclResult_t " + result;
    }

    private static String cString(MemorySegment pointer) {
        return pointer.address() == 0 ? "" : pointer.reinterpret(Long.MAX_VALUE).getString(0);
    }
}
