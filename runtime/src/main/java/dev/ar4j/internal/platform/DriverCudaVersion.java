package dev.ar4j.internal.platform;

import dev.ar4j.bindings.cudadrv.cuda_h;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Asks the NVIDIA driver which CUDA version it supports ({@code cuDriverGetVersion}, which needs
 * no {@code cuInit}), for the choice of the kernels variant. Never throws: a machine without a
 * driver gets an unknown version and the reason.
 */
final class DriverCudaVersion {

    private DriverCudaVersion() {
    }

    static KernelsVariantChoice.Driver read() {
        try {
            NativeLibraries.cudaDriver();
        } catch (RuntimeException | LinkageError e) {
            return KernelsVariantChoice.Driver.unknown("libcuda.so.1 was not found or did not load: no NVIDIA driver"
                    + " here, or " + NativeLibraries.Library.CUDA_DRIVER.environmentVariable() + " must name it; "
                    + e.getClass().getSimpleName());
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.JAVA_INT);
            int status = cuda_h.cuDriverGetVersion(out);
            if (status != 0) {
                return KernelsVariantChoice.Driver.unknown("cuDriverGetVersion returned CUresult " + status);
            }
            return KernelsVariantChoice.Driver.of(out.get(ValueLayout.JAVA_INT, 0));
        } catch (RuntimeException | LinkageError e) {
            return KernelsVariantChoice.Driver.unknown("cuDriverGetVersion failed: " + firstLine(e));
        }
    }

    private static String firstLine(Throwable e) {
        String message = String.valueOf(e.getMessage());
        int newline = message.indexOf('\n');
        return e.getClass().getSimpleName() + ": " + (newline < 0 ? message : message.substring(0, newline));
    }
}
