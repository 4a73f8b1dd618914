package dev.ar4j.internal.cuda;

import dev.ar4j.bindings.cudadrv.cuda_h;
import dev.ar4j.internal.platform.NativeLibraries;

/** Loads and initialises the CUDA driver API on first use (only the few driver calls need it). */
public final class CudaDriver {
    private static volatile boolean initialized;

    private CudaDriver() {
    }

    /** Loads libcuda and calls {@code cuInit(0)} once. */
    public static void ensureInitialized() {
        if (initialized) {
            return;
        }
        synchronized (CudaDriver.class) {
            if (initialized) {
                return;
            }
            NativeLibraries.cudart();
            NativeLibraries.cudaDriver();
            CudaErrors.checkDriver(cuda_h.cuInit(0), "cuInit(0)");
            initialized = true;
        }
    }
}
