package dev.ar4j.nccl;


import dev.ar4j.bindings.nccl.nccl_h;

import java.lang.foreign.MemorySegment;

/**
 * The one place an {@code ncclResult_t} becomes an exception (as {@code CudaChecks} is for CUDA):
 * the result codes, their names, whether one leaves a communicator unusable, and what to do about
 * it. Not API: the facade of this package calls it directly, the engine through
 * {@code dev.ar4j.internal.nccl.NcclErrors}.
 */
final class NcclChecks {
    /** {@code ncclSuccess}. */
    public static final int SUCCESS = 0;
    /** {@code ncclUnhandledCudaError}. */
    public static final int UNHANDLED_CUDA_ERROR = 1;
    /** {@code ncclSystemError}. */
    public static final int SYSTEM_ERROR = 2;
    /** {@code ncclInternalError}. */
    public static final int INTERNAL_ERROR = 3;
    /** {@code ncclInvalidArgument}. */
    public static final int INVALID_ARGUMENT = 4;
    /** {@code ncclInvalidUsage}. */
    public static final int INVALID_USAGE = 5;
    /** {@code ncclRemoteError}. */
    public static final int REMOTE_ERROR = 6;
    /** {@code ncclInProgress}. */
    public static final int IN_PROGRESS = 7;
    /** {@code ncclTimeout}. */
    public static final int TIMEOUT = 8;

    private static final String[] RESULT_NAMES = {
            "ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError", "ncclInvalidArgument",
            "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress", "ncclTimeout"};

    private NcclChecks() {
    }

    /**
     * Throws unless {@code result} is {@code ncclSuccess}.
     *
     * @param result the {@code ncclResult_t} a call returned
     * @param call the call, for the message
     * @param comm the communicator whose last error to quote, or {@link MemorySegment#NULL}
     * @throws NcclException unless {@code result} is {@code ncclSuccess}
     */
    public static void check(int result, String call, MemorySegment comm) {
        if (result != 0) {
            throw exception(result, call, comm);
        }
    }

    /**
     * The exception for a failed call, with NCCL's strings for {@code result} and {@code comm}.
     *
     * @param result the {@code ncclResult_t} a call returned
     * @param call the call, for the message
     * @param comm the communicator whose last error to quote, or {@link MemorySegment#NULL}
     * @return the exception, not thrown
     */
    public static NcclException exception(int result, String call, MemorySegment comm) {
        return exception(result, call, cString(nccl_h.ncclGetErrorString(result)),
                cString(nccl_h.ncclGetLastError(comm)));
    }

    /**
     * The exception for a failed call, with NCCL's strings as given.
     *
     * @param result the {@code ncclResult_t} a call returned
     * @param call the call, for the message
     * @param errorString {@code ncclGetErrorString(result)}
     * @param lastError {@code ncclGetLastError(comm)}, empty if none
     * @return the exception, not thrown
     */
    public static NcclException exception(int result, String call, String errorString, String lastError) {
        String name = resultName(result);
        return new NcclException(call + " failed: " + name + " (" + result + "): " + errorString
                + (lastError == null || lastError.isEmpty() ? "" : "; NCCL's last error: " + lastError)
                + advice(result), call, result, name, errorString, lastError, null);
    }

    /**
     * The name of an {@code ncclResult_t}.
     *
     * @param result the code
     * @return its symbolic name, such as {@code ncclInProgress}
     */
    public static String resultName(int result) {
        return result >= 0 && result < RESULT_NAMES.length ? RESULT_NAMES[result] : "ncclResult_t " + result;
    }

    /**
     * True for a result after which the communicator cannot be trusted (a peer, the network, CUDA
     * or NCCL itself failed): it must be aborted, not destroyed. Argument and usage errors leave it usable.
     *
     * @param result the code
     * @return whether the communicator must be aborted
     */
    public static boolean isFatal(int result) {
        return result != SUCCESS && result != IN_PROGRESS && result != INVALID_ARGUMENT && result != INVALID_USAGE;
    }

    /**
     * What to do about a result, as the tail of a message; empty for success.
     *
     * @param result the code
     * @return the advice, starting with {@code ". "}, or empty
     */
    public static String advice(int result) {
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

    /**
     * A C string NCCL returned, read up to its NUL.
     *
     * @param pointer the {@code const char*}, possibly NULL
     * @return the string, or empty for NULL
     */
    public static String cString(MemorySegment pointer) {
        return pointer.address() == 0 ? "" : pointer.reinterpret(Long.MAX_VALUE).getString(0);
    }
}
