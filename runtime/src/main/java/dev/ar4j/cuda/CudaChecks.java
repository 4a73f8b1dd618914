package dev.ar4j.cuda;


import dev.ar4j.bindings.cudadrv.cuda_h;
import dev.ar4j.bindings.cudart.cuda_runtime_api_h;
import dev.ar4j.internal.platform.NativeLibraries;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The one checking helper for CUDA calls: every {@code cudaError_t} (and driver {@code CUresult})
 * that ar4j receives goes through {@link #check} or {@link #checkDriver}, which turn a failure into
 * a {@link CudaException} naming the call, the code, its name and CUDA's message. A missing driver
 * becomes {@link CudaDriverMissingException}, no visible device {@link CudaNoDeviceException}. The
 * facades of this package call it directly; the engine through
 * {@code dev.ar4j.internal.cuda.CudaErrors}.
 */
final class CudaChecks {
    private CudaChecks() {
    }

    /**
     * Throws if {@code status} is not {@code cudaSuccess}.
     *
     * @param status the {@code cudaError_t} a runtime call returned
     * @param call   the call's name (and arguments, where they help)
     */
    public static void check(int status, String call) {
        if (status != 0) {
            throw exception(status, call);
        }
    }

    /**
     * The exception for a failed runtime call ({@code status != cudaSuccess}).
     *
     * @param status the non-zero {@code cudaError_t} a runtime call returned
     * @param call the call's name (and arguments, where they help), for the message
     * @return the exception to throw: {@link CudaDriverMissingException} for a missing driver or the stub
     *     library, {@link CudaNoDeviceException} when no device is visible, otherwise a {@link CudaException}
     *     (with a hint for a driver older than the runtime)
     */
    public static CudaException exception(int status, String call) {
        NativeLibraries.cudart();
        String name = name(status);
        String description = description(status);
        if (status == cuda_runtime_api_h.cudaErrorStubLibrary()) {
            return new CudaDriverMissingException(call, status, name, description,
                    "Only the CUDA driver's stub library (lib64/stubs/libcuda.so) was found: install the NVIDIA"
                            + " driver, and keep the stubs directory off LD_LIBRARY_PATH at run time");
        }
        if (status == cuda_runtime_api_h.cudaErrorInsufficientDriver()) {
            int driver = driverVersionOrZero();
            int runtime = runtimeVersionOrZero();
            if (driver == 0) {
                return new CudaDriverMissingException(call, status, name, description,
                        "No NVIDIA driver was found (cudaDriverGetVersion reports 0: libcuda.so.1 cannot be loaded)."
                                + " Run on a machine with an NVIDIA GPU and driver");
            }
            return new CudaException(call, status, name, description, "The installed driver supports CUDA "
                    + formatVersion(driver) + " but this libcudart is CUDA " + formatVersion(runtime)
                    + ": update the NVIDIA driver, or point ar4j at an older libcudart (-Dar4j.cudart.path)");
        }
        if (status == cuda_runtime_api_h.cudaErrorNoDevice()) {
            return new CudaNoDeviceException(call, status, name, description,
                    "The NVIDIA driver is present but sees no CUDA device; check the GPUs and CUDA_VISIBLE_DEVICES"
                            + " (now " + describeVisibleDevices() + ")");
        }
        return new CudaException(call, status, name, description, null);
    }

    /**
     * A CUDA version as {@code major.minor} (the facade's {@code formatVersion} delegates here).
     *
     * @param version {@code major * 1000 + minor * 10}, 0 or more
     * @return the version as text, e.g. {@code 13.0}
     * @throws IllegalArgumentException if {@code version} is negative
     */
    public static String formatVersion(int version) {
        if (version < 0) {
            throw new IllegalArgumentException("a CUDA version is >= 0, got " + version);
        }
        return (version / 1000) + "." + (version % 1000) / 10;
    }

    /**
     * The symbolic name of a {@code cudaError_t}, e.g. {@code cudaErrorInvalidValue}.
     *
     * @param status any {@code cudaError_t} value
     * @return the name, or {@code "unrecognized cudaError_t N"} for a value the runtime does not know
     */
    public static String name(int status) {
        NativeLibraries.cudart();
        return cString(cuda_runtime_api_h.cudaGetErrorName(status), "unrecognized cudaError_t " + status);
    }

    /**
     * CUDA's description of a {@code cudaError_t}.
     *
     * @param status any {@code cudaError_t} value
     * @return the description, or {@code "unrecognized cudaError_t N"} for a value the runtime does not know
     */
    public static String description(int status) {
        NativeLibraries.cudart();
        return cString(cuda_runtime_api_h.cudaGetErrorString(status), "unrecognized cudaError_t " + status);
    }

    /**
     * Throws if a driver API call's {@code CUresult} is not {@code CUDA_SUCCESS}. The driver must
     * already be loaded (the caller of a driver function loaded it).
     *
     * @param result the {@code CUresult} a driver call returned
     * @param call the call's name (and arguments, where they help), for the message
     * @throws CudaException if {@code result} is not {@code CUDA_SUCCESS}
     */
    public static void checkDriver(int result, String call) {
        if (result != 0) {
            throw driverException(result, call);
        }
    }

    /**
     * The exception for a failed driver API call.
     *
     * @param result the non-zero {@code CUresult} a driver call returned
     * @param call the call's name (and arguments, where they help), for the message
     * @return the exception to throw, a {@link CudaDriverMissingException} for the stub library
     */
    public static CudaException driverException(int result, String call) {
        String name;
        String description;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment text = arena.allocate(ValueLayout.ADDRESS);
            name = cuda_h.cuGetErrorName(result, text) == 0 ? cString(text.get(ValueLayout.ADDRESS, 0), null) : null;
            description = cuda_h.cuGetErrorString(result, text) == 0 ? cString(text.get(ValueLayout.ADDRESS, 0), null) : null;
        }
        if (name == null) {
            name = "CUresult " + result;
        }
        if (description == null) {
            description = "unrecognized CUresult";
        }
        if (result == cuda_h.CUDA_ERROR_STUB_LIBRARY()) {
            return new CudaDriverMissingException(call, result, name, description,
                    "The loaded libcuda is the toolkit's stub: install the NVIDIA driver");
        }
        if (result == cuda_h.CUDA_ERROR_NO_DEVICE()) {
            return new CudaNoDeviceException(call, result, name, description,
                    "The NVIDIA driver sees no CUDA device (CUDA_VISIBLE_DEVICES is " + describeVisibleDevices() + ")");
        }
        return new CudaException(call, result, name, description, null);
    }

    static String cString(MemorySegment pointer, String ifNull) {
        if (pointer.address() == 0) {
            return ifNull;
        }
        return pointer.reinterpret(Long.MAX_VALUE).getString(0);
    }

    private static int driverVersionOrZero() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.JAVA_INT);
            return cuda_runtime_api_h.cudaDriverGetVersion(out) == 0 ? out.get(ValueLayout.JAVA_INT, 0) : 0;
        }
    }

    private static int runtimeVersionOrZero() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.JAVA_INT);
            return cuda_runtime_api_h.cudaRuntimeGetVersion(out) == 0 ? out.get(ValueLayout.JAVA_INT, 0) : 0;
        }
    }

    private static String describeVisibleDevices() {
        String visible = System.getenv("CUDA_VISIBLE_DEVICES");
        return visible == null ? "not set" : "'" + visible + "'";
    }
}
