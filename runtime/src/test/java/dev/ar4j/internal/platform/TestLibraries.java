package dev.ar4j.internal.platform;

import dev.ar4j.NativeLibraryException;
import dev.ar4j.cuda.Cuda;
import org.junit.jupiter.api.Assumptions;

/**
 * Decides whether a CPU test that needs an optional library runs. NCCL and the kernels library are
 * real dependencies in CI ({@code .ci/run} sets {@code AR4J_NCCL_PATH} and builds the kernels), so:
 * when a path is configured explicitly, or {@code -Dar4j.nccl.required=true} /
 * {@code -Dar4j.customar.required=true} is set, a missing library fails the test; otherwise (a
 * developer build with {@code -Dar4j.native.skip=true}, no NCCL wheel) the test is skipped with the
 * loader's explanation as the reason.
 */
public final class TestLibraries {
    private TestLibraries() {
    }

    /** Loads NCCL or skips (see the class comment). */
    public static void requireNccl() {
        require(NativeLibraries.Library.NCCL, "ar4j.nccl.required");
    }

    /** Loads libar4j_custom_ar or skips when the ar4j-cuda jar carries no library (see the class comment). */
    public static void requireCustomAllReduce() {
        NativeLibraries.Library library = NativeLibraries.Library.CUSTOM_ALL_REDUCE;
        if (!explicitlyConfigured(library) && !Boolean.getBoolean("ar4j.customar.required")
                && NativeLibraries.class.getClassLoader().getResource(NativeLibraries.CUSTOM_AR_RESOURCE) == null) {
            Assumptions.abort(NativeLibraries.CUSTOM_AR_RESOURCE + " is not on the class path (built with"
                    + " -Dar4j.native.skip=true?); set -Dar4j.customar.required=true to make this a failure");
        }
        NativeLibraries.customAllReduce();
    }

    /** True when an NVIDIA driver is installed (the CUDA runtime reports a driver version). */
    public static boolean cudaDriverInstalled() {
        return Cuda.driverVersion() != 0;
    }

    private static void require(NativeLibraries.Library library, String requiredProperty) {
        try {
            NativeLibraries.load(library);
        } catch (NativeLibraryException e) {
            if (explicitlyConfigured(library) || Boolean.getBoolean(requiredProperty)) {
                throw e;
            }
            Assumptions.abort(library.description() + " is not installed here, so this test is skipped (set "
                    + library.environmentVariable() + " or -D" + requiredProperty + "=true to make it run or fail): "
                    + e.getMessage());
        }
    }

    private static boolean explicitlyConfigured(NativeLibraries.Library library) {
        String property = System.getProperty(library.systemProperty());
        String env = System.getenv(library.environmentVariable());
        return (property != null && !property.isBlank()) || (env != null && !env.isBlank());
    }
}
