package dev.ar4j.natives;

import java.net.URL;
import java.util.Objects;
import java.util.Optional;

/**
 * The native libraries this jar carries: ar4j's custom all-reduce kernels,
 * {@value #KERNELS_FILE_NAME}, built by nvcc in one variant per CUDA major and packaged at
 * {@code META-INF/native/<platform>/<variant>/}{@value #KERNELS_FILE_NAME}: the platform is
 * {@code linux-x86_64} (or, in a jar built with {@code -Dar4j.native.platform=linux-aarch64} on
 * such a machine, {@code linux-aarch64}), the variant {@code cu13} (CUDA 13.0) or {@code cu12}
 * (CUDA 12.4). Each is linked with its static CUDA runtime: it needs only the NVIDIA driver
 * ({@code libcuda.so.1}), of a version that runs that CUDA major.
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
     * The resource name of the kernels library for a platform and variant.
     *
     * @param platform e.g. {@code linux-x86_64}
     * @param variant  e.g. {@code cu13}
     * @return e.g. {@code META-INF/native/linux-x86_64/cu13/libar4j_custom_ar.so}
     */
    public static String kernelsResourceName(String platform, String variant) {
        Objects.requireNonNull(platform, "platform");
        Objects.requireNonNull(variant, "variant");
        return "META-INF/native/" + platform + "/" + variant + "/" + KERNELS_FILE_NAME;
    }

    /**
     * The kernels library for a platform and variant, if this jar carries it (a jar built with
     * {@code -Dar4j.native.skip=true} carries none, one built without a CUDA 12 compiler no
     * {@code cu12}).
     *
     * @param platform e.g. {@code linux-x86_64}
     * @param variant  e.g. {@code cu13}
     * @return the resource's address, or empty
     */
    public static Optional<URL> kernels(String platform, String variant) {
        return Optional.ofNullable(BundledLibraries.class.getResource("/" + kernelsResourceName(platform, variant)));
    }
}
