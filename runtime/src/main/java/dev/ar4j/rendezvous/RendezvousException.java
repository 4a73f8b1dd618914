package dev.ar4j.rendezvous;

import dev.ar4j.Ar4jException;

/**
 * A rendezvous failed: the server rejected this rank, the connection broke, the peer did not speak
 * the rendezvous protocol, or the wait was interrupted. The message says which and what to check.
 */
public class RendezvousException extends Ar4jException {
    private static final long serialVersionUID = 1L;

    /**
     * A failure described by {@code message}.
     *
     * @param message what failed and what to check
     */
    public RendezvousException(String message) {
        super(message);
    }

    /**
     * A failure described by {@code message}, caused by {@code cause}.
     *
     * @param message what failed and what to check
     * @param cause the underlying failure (an {@link java.io.IOException}, an interrupt), or {@code null}
     */
    public RendezvousException(String message, Throwable cause) {
        super(message, cause);
    }
}
