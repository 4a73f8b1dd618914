package dev.ar4j.internal.platform;

import java.util.Locale;
import java.util.Optional;

/**
 * The builds of ar4j's kernels library the {@code ar4j-cuda} jar can hold, one per CUDA major,
 * newest first, with what each needs of the NVIDIA driver. Each is linked with its toolkit's
 * static CUDA runtime, so the driver alone decides which can run.
 */
enum KernelsVariant {
    /** CUDA 13.0: sm_80, sm_86, sm_89, sm_90, sm_100, sm_120 and compute_120 PTX. */
    CU13("cu13", "CUDA 13.0", 13000, "580", "sm_80, sm_86, sm_89, sm_90, sm_100, sm_120 + compute_120 PTX"),
    /**
     * CUDA 12.4: sm_80, sm_86, sm_89, sm_90 and compute_90 PTX (Blackwell only through the driver's
     * JIT). A CUDA 12.x runtime runs on every driver of CUDA 12.0 or newer (525.60.13) through
     * minor-version compatibility; a driver older than 550.54.14 (CUDA 12.4) cannot JIT-compile its
     * PTX, which only GPUs newer than sm_90 need, and those need a newer driver anyway.
     */
    CU12("cu12", "CUDA 12.4", 12000, "525.60.13", "sm_80, sm_86, sm_89, sm_90 + compute_90 PTX");

    private final String directory;
    private final String toolkit;
    private final int minimumDriverCudaVersion;
    private final String minimumDriver;
    private final String architectures;

    KernelsVariant(String directory, String toolkit, int minimumDriverCudaVersion, String minimumDriver,
                   String architectures) {
        this.directory = directory;
        this.toolkit = toolkit;
        this.minimumDriverCudaVersion = minimumDriverCudaVersion;
        this.minimumDriver = minimumDriver;
        this.architectures = architectures;
    }

    /** The jar's directory name, also the value that forces this variant: {@code cu13}, {@code cu12}. */
    String directory() {
        return directory;
    }

    /** The toolkit it is built with, e.g. "CUDA 12.4". */
    String toolkit() {
        return toolkit;
    }

    /** The oldest CUDA version the driver must support ({@code cuDriverGetVersion}'s encoding). */
    int minimumDriverCudaVersion() {
        return minimumDriverCudaVersion;
    }

    /** The oldest Linux driver release that runs it, e.g. "525.60.13". */
    String minimumDriver() {
        return minimumDriver;
    }

    /** The GPU code it holds. */
    String architectures() {
        return architectures;
    }

    /** Whether a driver supporting CUDA {@code driverCudaVersion} runs this variant. */
    boolean runsOn(int driverCudaVersion) {
        return driverCudaVersion >= minimumDriverCudaVersion;
    }

    /** "cu12 (CUDA 12.4, driver >= 525.60.13)". */
    String describe() {
        return directory + " (" + toolkit + ", driver >= " + minimumDriver + ")";
    }

    /**
     * The variant a setting names.
     *
     * @param value e.g. {@code cu12}, in any case, surrounding blanks ignored
     * @return the variant, or empty when it names none
     */
    static Optional<KernelsVariant> named(String value) {
        String name = value.strip().toLowerCase(Locale.ROOT);
        for (KernelsVariant variant : values()) {
            if (variant.directory.equals(name)) {
                return Optional.of(variant);
            }
        }
        return Optional.empty();
    }
}
