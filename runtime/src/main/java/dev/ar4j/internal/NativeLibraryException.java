package dev.ar4j.internal;

import java.util.List;

/**
 * A native library that ar4j needs could not be loaded. The message names every place that was
 * tried, in order, and the system property and environment variable that point ar4j at the
 * library; each attempt that failed with an exception is attached as a suppressed exception.
 */
public final class NativeLibraryException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final transient NativeLibraries.Library library;
    private final List<String> attempts;

    NativeLibraryException(NativeLibraries.Library library, String message, List<String> attempts, Throwable cause) {
        super(message, cause);
        this.library = library;
        this.attempts = List.copyOf(attempts);
    }

    /** The library that could not be loaded. */
    public NativeLibraries.Library library() {
        return library;
    }

    /** Every place tried, in order, each with what happened there. */
    public List<String> attempts() {
        return attempts;
    }
}
