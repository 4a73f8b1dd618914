package dev.ar4j;

/**
 * A custom all-reduce kernel gave up waiting for a peer rank (it is dead, hung, or made
 * different calls). The communicator that threw it is unusable afterwards.
 */
public final class PeerTimeoutException extends Ar4jException {
    private static final long serialVersionUID = 1L;

    /**
     * The rank the kernel waited for.
     */
    private final int peer;

    /**
     * An exception naming {@code peer}.
     *
     * @param message what happened and what to do
     * @param peer    the rank that was waited for
     * @param cause   the failure that showed it, or {@code null}
     */
    public PeerTimeoutException(String message, int peer, Throwable cause) {
        super(message, cause);
        this.peer = peer;
    }

    /**
     * The rank that was waited for.
     *
     * @return the rank, 0 to world size - 1
     */
    public int peer() {
        return peer;
    }
}
