package dev.ar4j.internal.platform;

import dev.ar4j.NativeLibraryException;
import dev.ar4j.internal.platform.NativeLibraries.Library;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * The CUDA runtime versions ar4j's Java side can use: {@value #MINIMUM_VERSION_TEXT} or newer.
 * The bindings are generated from CUDA 13 headers; of the functions ar4j calls, only
 * {@code cudaGraphInstantiate} (CUDA 12.0 gave it its present signature) and
 * {@code cudaStreamGetCaptureInfo} (only its first three arguments are used, the same since CUDA
 * 11.3) differ between versions, so CUDA 12.x and 13.x work and older runtimes would be called
 * with the wrong arguments. An older one is refused right after it is loaded, naming its version
 * and what to do; no other copy is taken then, since the old one is already in the process.
 */
final class CudaRuntimeRequirement {

    /** The oldest usable runtime, in {@code cudaRuntimeGetVersion}'s encoding (major * 1000 + minor * 10). */
    static final int MINIMUM_VERSION = 12000;

    /** {@link #MINIMUM_VERSION} as text. */
    static final String MINIMUM_VERSION_TEXT = "CUDA 12.0";

    private CudaRuntimeRequirement() {
    }

    /**
     * Asks the runtime just loaded from {@code file} for its version and refuses it if it is too old.
     *
     * @param file          the library's path
     * @param getVersion    its {@code cudaRuntimeGetVersion}
     * @param place         where it was found, for the message
     * @param attempts      the search so far, for the message
     * @throws NativeLibraryException if the runtime is older than {@value #MINIMUM_VERSION_TEXT}
     *                                or does not say its version
     */
    static void check(Path file, MemorySegment getVersion, String place, LibrarySearch.Attempts attempts) {
        int version;
        int status;
        MethodHandle handle = Linker.nativeLinker().downcallHandle(getVersion,
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.JAVA_INT);
            status = (int) handle.invokeExact(out);
            version = out.get(ValueLayout.JAVA_INT, 0);
        } catch (Throwable t) {
            throw refused(file, place, attempts, "calling its cudaRuntimeGetVersion failed: " + t, t);
        }
        if (status != 0) {
            throw refused(file, place, attempts, "its cudaRuntimeGetVersion returned error " + status, null);
        }
        Optional<String> refusal = refusal(version);
        if (refusal.isPresent()) {
            throw refused(file, place, attempts, refusal.get(), null);
        }
    }

    /**
     * Why a runtime of this version cannot be used, or empty when it can.
     *
     * @param version {@code cudaRuntimeGetVersion}'s value, e.g. 11080 for CUDA 11.8
     * @return the reason, or empty
     */
    static Optional<String> refusal(int version) {
        if (version >= MINIMUM_VERSION) {
            return Optional.empty();
        }
        return Optional.of("it is the CUDA " + (version / 1000) + "." + (version % 1000) / 10 + " runtime, and ar4j's"
                + " Java side needs " + MINIMUM_VERSION_TEXT + " or newer (its bindings call cudaGraphInstantiate with"
                + " the signature CUDA 12.0 introduced)");
    }

    private static NativeLibraryException refused(Path file, String place, LibrarySearch.Attempts attempts,
                                                  String why, Throwable cause) {
        Library library = Library.CUDART;
        attempts.note(place, "refused: " + why);
        return new NativeLibraryException(library.name(), "Refusing the CUDA runtime " + file + ": " + why
                + ". Point -D" + library.systemProperty() + " or " + library.environmentVariable()
                + " at a CUDA 12.x or 13.x libcudart (libcudart.so.12 or libcudart.so.13), or put one on"
                + " LD_LIBRARY_PATH. (The search stops here: this one is already loaded into the process.)",
                List.copyOf(attempts.lines), cause);
    }
}
