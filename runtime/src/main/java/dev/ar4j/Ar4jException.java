package dev.ar4j;

/**
 * The root of every failure ar4j reports: a CUDA or NCCL call that failed, a native library
 * that could not be loaded, a peer that was lost or timed out, a rendezvous that could not be
 * formed, a kernel that refused its arguments. Catch this type to handle every ar4j failure in
 * one place; catch a subtype to handle one kind. Each message names the call or step that
 * failed, the code and its symbolic name where there is one, the rank or peer involved, and
 * what to do about it.
 *
 * <p>Argument errors that are the caller's own mistake (a null, a negative size, a closed
 * buffer) are reported with the JDK's {@link IllegalArgumentException},
 * {@link NullPointerException} and {@link IllegalStateException}, as the JDK's own APIs do.
 */
public class Ar4jException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates an exception with a message and no cause (for subclasses: every ar4j failure has its own type).
     *
     * @param message what failed, the facts, and what to do
     */
    protected Ar4jException(String message) {
        super(message);
    }

    /**
     * Creates an exception with a message and the failure that caused it (for subclasses).
     *
     * @param message what failed, the facts, and what to do
     * @param cause   the underlying failure, or null
     */
    protected Ar4jException(String message, Throwable cause) {
        super(message, cause);
    }
}
