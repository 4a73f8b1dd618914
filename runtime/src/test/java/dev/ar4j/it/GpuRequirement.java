package dev.ar4j.it;

import dev.ar4j.cuda.Cuda;
import org.junit.jupiter.api.Assumptions;

/**
 * GPU tests run where GPUs are; elsewhere they are skipped with the reason, unless
 * {@code -Dar4j.gpu.required=true} (set by the GPU script), which turns a missing GPU into a failure.
 */
public final class GpuRequirement {

    private GpuRequirement() {
    }

    public static void requireDevices(int n) {
        String problem;
        try {
            int count = Cuda.deviceCount();
            problem = count >= n ? null : "needs " + n + " GPUs, " + count + " visible";
        } catch (RuntimeException e) {
            problem = "no usable GPU: " + e.getMessage();
        }
        if (problem == null) {
            return;
        }
        if (Boolean.getBoolean("ar4j.gpu.required")) {
            throw new AssertionError("ar4j.gpu.required is set but " + problem);
        }
        Assumptions.abort(problem);
    }
}
