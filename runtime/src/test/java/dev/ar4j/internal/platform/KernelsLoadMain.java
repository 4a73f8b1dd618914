package dev.ar4j.internal.platform;

/**
 * Child JVM of {@link BundledKernelsTest}: loads the kernels library through
 * {@link NativeLibraries}, prints {@code LOADED <path>} and {@code ORIGIN <how>}, then waits to be
 * killed (at most {@code args[0]} seconds).
 */
public final class KernelsLoadMain {
    private KernelsLoadMain() {
    }

    public static void main(String[] args) throws InterruptedException {
        NativeLibraries.LoadedLibrary kernels = NativeLibraries.customAllReduce();
        System.out.println("LOADED " + kernels.path());
        System.out.println("ORIGIN " + kernels.origin());
        System.out.flush();
        Thread.sleep(Long.parseLong(args[0]) * 1000);
    }
}
