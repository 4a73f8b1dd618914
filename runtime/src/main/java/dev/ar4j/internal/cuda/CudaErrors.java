package dev.ar4j.internal.cuda;

import dev.ar4j.cuda.CudaException;
import dev.ar4j.internal.platform.PackageAccess;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodType;

/**
 * The engine's CUDA checking helper: every {@code cudaError_t} (and driver {@code CUresult}) the
 * engine receives becomes a {@link CudaException} (or its subtypes for a missing driver or no
 * device) through the one helper the CUDA facade uses, {@code dev.ar4j.cuda.CudaChecks}, which
 * lives beside the exceptions and is not API.
 */
public final class CudaErrors {
    private static final Class<?> CHECKS = PackageAccess.type("dev.ar4j.cuda.CudaChecks");
    private static final MethodHandle CHECK = handle("check", MethodType.methodType(void.class, int.class, String.class));
    private static final MethodHandle EXCEPTION =
            handle("exception", MethodType.methodType(CudaException.class, int.class, String.class));
    private static final MethodHandle CHECK_DRIVER =
            handle("checkDriver", MethodType.methodType(void.class, int.class, String.class));
    private static final MethodHandle DRIVER_EXCEPTION =
            handle("driverException", MethodType.methodType(CudaException.class, int.class, String.class));
    private static final MethodHandle NAME = handle("name", MethodType.methodType(String.class, int.class));
    private static final MethodHandle DESCRIPTION = handle("description", MethodType.methodType(String.class, int.class));

    private CudaErrors() {
    }

    private static MethodHandle handle(String name, MethodType type) {
        return PackageAccess.staticMethod(CHECKS, name, type);
    }

    /**
     * Throws if {@code status} is not {@code cudaSuccess}.
     *
     * @param status the {@code cudaError_t} a runtime call returned
     * @param call the call's name (and arguments, where they help)
     * @throws CudaException unless {@code status} is {@code cudaSuccess}
     */
    public static void check(int status, String call) {
        try {
            CHECK.invokeExact(status, call);
        } catch (Throwable t) {
            throw PackageAccess.rethrow(t);
        }
    }

    /**
     * The exception for a failed runtime call ({@code status != cudaSuccess}).
     *
     * @param status the non-zero {@code cudaError_t}
     * @param call the call, for the message
     * @return the exception to throw
     */
    public static CudaException exception(int status, String call) {
        try {
            return (CudaException) EXCEPTION.invokeExact(status, call);
        } catch (Throwable t) {
            throw PackageAccess.rethrow(t);
        }
    }

    /**
     * Throws if a driver call's {@code CUresult} is not {@code CUDA_SUCCESS}.
     *
     * @param result the {@code CUresult}
     * @param call the call, for the message
     * @throws CudaException unless {@code result} is {@code CUDA_SUCCESS}
     */
    public static void checkDriver(int result, String call) {
        try {
            CHECK_DRIVER.invokeExact(result, call);
        } catch (Throwable t) {
            throw PackageAccess.rethrow(t);
        }
    }

    /**
     * The exception for a failed driver call.
     *
     * @param result the non-zero {@code CUresult}
     * @param call the call, for the message
     * @return the exception to throw
     */
    public static CudaException driverException(int result, String call) {
        try {
            return (CudaException) DRIVER_EXCEPTION.invokeExact(result, call);
        } catch (Throwable t) {
            throw PackageAccess.rethrow(t);
        }
    }

    /**
     * The symbolic name of a {@code cudaError_t}.
     *
     * @param status any {@code cudaError_t} value
     * @return the name, such as {@code cudaErrorInvalidValue}
     */
    public static String name(int status) {
        try {
            return (String) NAME.invokeExact(status);
        } catch (Throwable t) {
            throw PackageAccess.rethrow(t);
        }
    }

    /**
     * CUDA's description of a {@code cudaError_t}.
     *
     * @param status any {@code cudaError_t} value
     * @return the description
     */
    public static String description(int status) {
        try {
            return (String) DESCRIPTION.invokeExact(status);
        } catch (Throwable t) {
            throw PackageAccess.rethrow(t);
        }
    }
}
