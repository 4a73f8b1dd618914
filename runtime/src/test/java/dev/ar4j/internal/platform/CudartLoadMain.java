package dev.ar4j.internal.platform;

import dev.ar4j.NativeLibraryException;

/**
 * Child JVM of {@link CudaRuntimeRequirementTest}: loads the CUDA runtime that
 * {@code -Dar4j.cudart.path} names and prints {@code LOADED <path>}, or {@code REFUSED} and the
 * loader's message.
 */
public final class CudartLoadMain {
    private CudartLoadMain() {
    }

    public static void main(String[] args) {
        try {
            System.out.println("LOADED " + NativeLibraries.cudart().path());
        } catch (NativeLibraryException e) {
            System.out.println("REFUSED " + e.getMessage());
        }
    }
}
