package dev.ar4j.internal.nccl;

import dev.ar4j.internal.platform.PackageAccess;
import dev.ar4j.nccl.NcclException;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodType;

/**
 * The engine's NCCL result helper: the {@code ncclResult_t} codes, and the one place a result
 * becomes an {@link NcclException}, {@code dev.ar4j.nccl.NcclChecks}, which lives beside the
 * exceptions (the NCCL facade calls it directly) and is not API.
 */
public final class NcclErrors {
    /** {@code ncclSuccess}. */
    public static final int SUCCESS = 0;
    /** {@code ncclInternalError}. */
    public static final int INTERNAL_ERROR = 3;
    /** {@code ncclInvalidArgument}. */
    public static final int INVALID_ARGUMENT = 4;
    /** {@code ncclRemoteError}. */
    public static final int REMOTE_ERROR = 6;
    /** {@code ncclInProgress}. */
    public static final int IN_PROGRESS = 7;

    private static final Class<?> CHECKS = PackageAccess.type("dev.ar4j.nccl.NcclChecks");
    private static final MethodHandle CHECK =
            handle("check", MethodType.methodType(void.class, int.class, String.class, MemorySegment.class));
    private static final MethodHandle EXCEPTION = handle("exception",
            MethodType.methodType(NcclException.class, int.class, String.class, MemorySegment.class));
    private static final MethodHandle EXCEPTION_OF_STRINGS = handle("exception",
            MethodType.methodType(NcclException.class, int.class, String.class, String.class, String.class));
    private static final MethodHandle RESULT_NAME = handle("resultName", MethodType.methodType(String.class, int.class));
    private static final MethodHandle IS_FATAL = handle("isFatal", MethodType.methodType(boolean.class, int.class));
    private static final MethodHandle C_STRING =
            handle("cString", MethodType.methodType(String.class, MemorySegment.class));

    private NcclErrors() {
    }

    private static MethodHandle handle(String name, MethodType type) {
        return PackageAccess.staticMethod(CHECKS, name, type);
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
        try {
            CHECK.invokeExact(result, call, comm);
        } catch (Throwable t) {
            throw PackageAccess.rethrow(t);
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
        try {
            return (NcclException) EXCEPTION.invokeExact(result, call, comm);
        } catch (Throwable t) {
            throw PackageAccess.rethrow(t);
        }
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
        try {
            return (NcclException) EXCEPTION_OF_STRINGS.invokeExact(result, call, errorString, lastError);
        } catch (Throwable t) {
            throw PackageAccess.rethrow(t);
        }
    }

    /**
     * The name of an {@code ncclResult_t}.
     *
     * @param result the code
     * @return its symbolic name, such as {@code ncclInProgress}
     */
    public static String resultName(int result) {
        try {
            return (String) RESULT_NAME.invokeExact(result);
        } catch (Throwable t) {
            throw PackageAccess.rethrow(t);
        }
    }

    /**
     * Whether a result leaves the communicator unusable (it must be aborted).
     *
     * @param result the code
     * @return whether the communicator must be aborted
     */
    public static boolean isFatal(int result) {
        try {
            return (boolean) IS_FATAL.invokeExact(result);
        } catch (Throwable t) {
            throw PackageAccess.rethrow(t);
        }
    }

    /**
     * A C string NCCL returned, read up to its NUL.
     *
     * @param pointer the {@code const char*}, possibly NULL
     * @return the string, or empty for NULL
     */
    public static String cString(MemorySegment pointer) {
        try {
            return (String) C_STRING.invokeExact(pointer);
        } catch (Throwable t) {
            throw PackageAccess.rethrow(t);
        }
    }
}
