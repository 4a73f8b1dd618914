package dev.ar4j;

import java.util.List;

/**
 * A native library that ar4j needs could not be loaded. The message names every place that was
 * tried, in order, and the system property and environment variable that point ar4j at the
 * library; each attempt that failed with an exception is attached as a suppressed exception.
 */
public final class NativeLibraryException extends Ar4jException {
    private static final long serialVersionUID = 1L;

    /**
     * The library's name ({@code CUDART}, {@code CUDA_DRIVER}, {@code NCCL} or {@code CUSTOM_ALL_REDUCE}).
     */
    private final String library;
    /**
     * Every place tried, in order, each with what happened there.
     */
    private final List<String> attempts;

    /**
     * Creates the exception for one library that could not be loaded.
     *
     * @param library  the library's name: {@code CUDART}, {@code CUDA_DRIVER}, {@code NCCL} or
     *                 {@code CUSTOM_ALL_REDUCE}
     * @param message  what was tried and what to do
     * @param attempts every place tried, in order, each with what happened there
     * @param cause    the last failure, or null
     */
    public NativeLibraryException(String library, String message, List<String> attempts, Throwable cause) {
        super(message, cause);
        this.library = library;
        this.attempts = List.copyOf(attempts);
    }

    /**
     * The library that could not be loaded: {@code CUDART}, {@code CUDA_DRIVER}, {@code NCCL}
     * or {@code CUSTOM_ALL_REDUCE}.
     *
     * @return the library's name, one of the four above
     */
    public String library() {
        return library;
    }

    /**
     * Every place tried, in order, each with what happened there.
     *
     * @return the attempts, an unmodifiable list in the order they were made
     */
    public List<String> attempts() {
        return attempts;
    }
}
