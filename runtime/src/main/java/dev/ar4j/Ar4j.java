package dev.ar4j;

import dev.ar4j.cuda.Cuda;
import dev.ar4j.internal.kernels.CustomAllReduceKernels;
import dev.ar4j.internal.platform.BuildInfo;
import java.util.Optional;

/**
 * What this ar4j is, and whether it can run here: the availability probe, as Netty's native
 * transports offer one.
 *
 * <pre>{@code
 * if (!Ar4j.isAvailable()) {
 *     log.warn("no GPU all-reduce here, using the CPU path: " + Ar4j.unavailabilityCause().orElseThrow());
 * }
 * }</pre>
 *
 * <p>The probe runs once per JVM, on first use: it loads the CUDA runtime, NCCL and ar4j's
 * kernels library, and asks the CUDA runtime for a device. It never throws: a failure is its
 * {@linkplain #unavailabilityCause() cause}, an {@link Ar4jException} in all expected cases
 * (e.g. {@link NativeLibraryException}, or {@link dev.ar4j.cuda.CudaDriverMissingException} on a
 * machine without an NVIDIA driver), whose message says what to do.
 */
public final class Ar4j {

    private Ar4j() {
    }

    /**
     * The version of ar4j's runtime, from its jar's manifest ({@code Implementation-Version}).
     *
     * @return e.g. {@code 0.1.0}; {@code "unknown"} when ar4j does not run from its jar (an IDE's
     *         classes directory)
     */
    public static String version() {
        return BuildInfo.current().version();
    }

    /**
     * The git commit ar4j's runtime was built from, from its jar's manifest ({@code Ar4j-Commit}).
     *
     * @return the full commit id; {@code "unknown"} when it was built outside a git checkout or
     *         does not run from its jar
     */
    public static String commit() {
        return BuildInfo.current().commit();
    }

    /**
     * The C ABI version of the kernels library this runtime loaded ({@code ar4j_abi_version()});
     * loads the CUDA runtime and the kernels library on first use.
     *
     * @return the kernels library's ABI version, the one this runtime was built against
     * @throws NativeLibraryException if the kernels library cannot be loaded, or its ABI version is
     *     not the one this runtime needs
     */
    public static int kernelsAbiVersion() {
        return CustomAllReduceKernels.abiVersion();
    }

    /**
     * Whether ar4j can run here: the CUDA runtime, NCCL and the kernels library load, and the CUDA
     * runtime sees at least one GPU.
     *
     * @return true when all of that holds
     */
    public static boolean isAvailable() {
        return AvailabilityProbe.result().isEmpty();
    }

    /**
     * Why ar4j cannot run here.
     *
     * @return the first failure the probe met, or empty when {@link #isAvailable()} is true
     */
    public static Optional<Throwable> unavailabilityCause() {
        return AvailabilityProbe.result();
    }

    /**
     * Which build of ar4j's kernels this JVM loaded from the {@code ar4j-cuda} jar, and why: the
     * jar holds one per CUDA major ({@code cu13}: CUDA 13.0, NVIDIA driver 580 or newer;
     * {@code cu12}: CUDA 12.4, driver 525.60.13 or newer), and the newest the driver runs is loaded,
     * unless {@code -Dar4j.kernels.variant} or {@code AR4J_KERNELS_VARIANT} ({@code cu12} or
     * {@code cu13}) forces one. Runs the availability probe first.
     *
     * @return e.g. {@code the driver supports CUDA 12.8 (cuDriverGetVersion 12080): loading cu12 (CUDA 12.4,
     *         driver >= 525.60.13) (cu13 (CUDA 13.0, driver >= 580) needs a newer driver)}; empty when
     *         the kernels were loaded from an explicit path ({@code AR4J_CUSTOMAR_PATH}) or their jar is
     *         absent
     */
    public static Optional<String> kernelsVariant() {
        AvailabilityProbe.result();
        return dev.ar4j.internal.platform.NativeLibraries.kernelsVariantChoice();
    }

    /** The probe, run once. */
    private static final class AvailabilityProbe {
        private static final Optional<Throwable> RESULT = run();

        static Optional<Throwable> result() {
            return RESULT;
        }

        private static Optional<Throwable> run() {
            try {
                // The most basic need first: a machine without a driver is told so, whatever else is missing.
                Cuda.runtimeVersion();
                Cuda.deviceCount();
                dev.ar4j.nccl.Nccl.version();
                CustomAllReduceKernels.abiVersion();
                return Optional.empty();
            } catch (RuntimeException | LinkageError e) {
                return Optional.of(e);
            }
        }
    }
}
