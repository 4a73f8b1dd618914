package dev.ar4j;

/**
 * A rank of the group is gone, or the group as a whole failed: the rendezvous saw a rank's
 * connection drop or its heartbeat stop, a rank left before contributing or joined again as a new
 * incarnation, the rendezvous server itself is gone, NCCL reported an asynchronous error, or the
 * group was aborted. A rendezvous wait that needs the lost rank ends with it at once; a
 * communicator that threw it is failed. Either way: close it and build a new group (restart every
 * rank).
 */
public final class PeerLostException extends Ar4jException {
    private static final long serialVersionUID = 1L;

    /**
     * The rank that was lost, or -1 when the whole group failed.
     */
    private final int peer;

    /**
     * An exception naming {@code peer}.
     *
     * @param message what happened and what to do
     * @param peer    the lost rank, or -1 when the whole group failed
     * @param cause   the failure that showed it, or {@code null}
     */
    public PeerLostException(String message, int peer, Throwable cause) {
        super(message, cause);
        this.peer = peer;
    }

    /**
     * The rank that was lost, or -1 when the whole group failed (or no single rank is known).
     *
     * @return the lost rank, 0 to world size - 1, or -1
     */
    public int peer() {
        return peer;
    }
}
