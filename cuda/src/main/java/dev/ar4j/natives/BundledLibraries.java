package dev.ar4j.natives;

import java.net.URL;
import java.util.Objects;
import java.util.Optional;

/**
 * The native libraries this jar carries: ar4j's custom all-reduce kernels,
 * {@value #KERNELS_FILE_NAME}, built by nvcc and packaged at
 * {@code META-INF/native/<platform>/}{@value #KERNELS_FILE_NAME}, where the platform is
 * {@code linux-x86_64} (or, in a jar built with {@code -Dar4j.native.platform=linux-aarch64} on
 * such a machine, {@code linux-aarch64}). The kernels are linked with the static CUDA runtime:
 * they need only the NVIDIA driver ({@code libcuda.so.1}).
 *
 * <p>The lookup goes through this class, so it finds the resource in this module whether the
 * jar is on the class path or the module path.
 */
public final class BundledLibraries {

    /** The file name of the kernels library. */
    public static final String KERNELS_FILE_NAME = "libar4j_custom_ar.so";

    private BundledLibraries() {
    }

    /**
     * The resource name of the kernels library for a platform.
     *
     * @param platform e.g. {@code linux-x86_64}
     * @return e.g. {@code META-INF/native/linux-x86_64/libar4j_custom_ar.so}
     */
    public static String kernelsResourceName(String platform) {
        Objects.requireNonNull(platform, "platform");
        return "META-INF/native/" + platform + "/" + KERNELS_FILE_NAME;
    }

    /**
     * The kernels library for a platform, if this jar carries one (a jar built with
     * {@code -Dar4j.native.skip=true} carries none).
     *
     * @param platform e.g. {@code linux-x86_64}
     * @return the resource's address, or empty
     */
    public static Optional<URL> kernels(String platform) {
        return Optional.ofNullable(BundledLibraries.class.getResource("/" + kernelsResourceName(platform)));
    }
}
