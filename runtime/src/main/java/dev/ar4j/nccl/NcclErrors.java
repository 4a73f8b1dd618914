package dev.ar4j.nccl;

import dev.ar4j.bindings.nccl.nccl_h;

import java.lang.foreign.MemorySegment;

/** The one checking helper for NCCL calls. */
final class NcclErrors {
    static final int SUCCESS = 0;
    static final int UNHANDLED_CUDA_ERROR = 1;
    static final int SYSTEM_ERROR = 2;
    static final int INTERNAL_ERROR = 3;
    static final int INVALID_ARGUMENT = 4;
    static final int INVALID_USAGE = 5;
    static final int REMOTE_ERROR = 6;
    static final int IN_PROGRESS = 7;
    static final int TIMEOUT = 8;

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

    /** {@link #exception(int, String, MemorySegment)} with NCCL's strings read through {@code calls}. */
    static NcclException exception(NcclCalls calls, int result, String call, MemorySegment comm) {
        return new NcclException(call, result, resultName(result), calls.errorString(result), calls.lastError(comm));
    }

    /** The name of an {@code ncclResult_t}. */
    static String resultName(int result) {
        return result >= 0 && result < RESULT_NAMES.length ? RESULT_NAMES[result] : "ncclResult_t " + result;
    }

    /**
     * True for a result after which the communicator cannot be trusted (a peer, the network, CUDA
     * or NCCL itself failed): it must be aborted, not destroyed. Argument and usage errors leave it usable.
     */
    static boolean isFatal(int result) {
        return result != SUCCESS && result != IN_PROGRESS && result != INVALID_ARGUMENT && result != INVALID_USAGE;
    }

    /** What to do about a result, as the tail of a message ("; ..."); empty for success. */
    static String advice(int result) {
        return switch (result) {
            case SUCCESS -> "";
            case UNHANDLED_CUDA_ERROR -> ". A CUDA call inside NCCL failed: check the driver, the device the communicator"
                    + " uses and earlier asynchronous CUDA errors; abort the communicator";
            case SYSTEM_ERROR -> ". A system call (socket, shared memory, file) failed: check NCCL_SOCKET_IFNAME,"
                    + " /dev/shm space and the network between the ranks; abort the communicator";
            case INTERNAL_ERROR -> ". NCCL found an internal inconsistency (a bug, or memory corruption): rerun with"
                    + " NCCL_DEBUG=INFO and abort the communicator";
            case INVALID_ARGUMENT -> ". NCCL refused an argument (see its last error): fix the call; the communicator"
                    + " stays usable";
            case INVALID_USAGE -> ". NCCL refused the order or context of the call (see its last error): every rank"
                    + " must make the same calls in the same order; the communicator stays usable";
            case REMOTE_ERROR -> ". A peer rank failed or disconnected: abort this communicator on every rank and"
                    + " form a new group";
            case IN_PROGRESS -> ". The operation had not finished";
            case TIMEOUT -> ". NCCL timed out waiting for a peer: check that every rank is alive and making the same"
                    + " calls; abort the communicator";
            default -> ". An ncclResult_t this binding does not know: check the NCCL version";
        };
    }

    /** {@code "; NCCL's last error: ..."}, or empty when NCCL has none. */
    static String lastErrorTail(NcclCalls calls, MemorySegment comm) {
        String last = calls.lastError(comm);
        return last.isEmpty() ? "" : "; NCCL's last error: " + last;
    }

    static String cString(MemorySegment pointer) {
        return pointer.address() == 0 ? "" : pointer.reinterpret(Long.MAX_VALUE).getString(0);
    }
}
