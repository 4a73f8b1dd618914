package dev.ar4j.internal.platform;

import dev.ar4j.bindings.cudart.cuda_runtime_api_h;
import dev.ar4j.cuda.Cuda;

/**
 * Child JVM of {@link NativeLibrariesTest}: initialises the generated cudart header class (and so
 * its {@code SymbolLookup.loaderLookup()}) before libcudart is loaded, then loads it through
 * {@link NativeLibraries} and calls it. Prints {@code RUNTIME <version>}.
 */
public final class LateLoadMain {
    private LateLoadMain() {
    }

    public static void main(String[] args) {
        if (NativeLibraries.loaded(NativeLibraries.Library.CUDART).isPresent()) {
            throw new IllegalStateException("libcudart was loaded too early for this check");
        }
        int success = cuda_runtime_api_h.cudaSuccess(); // runs the header class's static initialiser
        NativeLibraries.cudart();
        System.out.println("RUNTIME " + Cuda.runtimeVersion() + " " + success);
    }
}
