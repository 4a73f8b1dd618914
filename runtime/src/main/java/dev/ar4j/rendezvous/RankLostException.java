package dev.ar4j.rendezvous;

/**
 * A rank of the group is gone, so a wait that needs it can never end: its connection dropped
 * ("rank 2 disconnected"), its heartbeat stopped, it left before contributing, it was restarted
 * (a second incarnation), or the rendezvous server itself is gone ({@link #rank()} is then -1).
 * The group cannot continue: close it and restart every rank.
 */
public class RankLostException extends RendezvousException {
    private static final long serialVersionUID = 1L;

    /** The rank that was lost, or -1 when the whole group failed. */
    private final int rank;

    /**
     * The loss of {@code rank} (-1: the whole group, e.g. the server is gone).
     *
     * @param rank the lost rank, or -1
     * @param message what was seen and what to do
     */
    public RankLostException(int rank, String message) {
        super(message);
        this.rank = rank;
    }

    /**
     * The loss of {@code rank}, caused by {@code cause}.
     *
     * @param rank the lost rank, or -1
     * @param message what was seen and what to do
     * @param cause the failure that revealed the loss (for example a broken connection), or {@code null}
     */
    public RankLostException(int rank, String message, Throwable cause) {
        super(message, cause);
        this.rank = rank;
    }

    /**
     * The rank that was lost, or -1 when the whole group failed (the server is gone).
     *
     * @return the lost rank, 0 or more, or -1
     */
    public int rank() {
        return rank;
    }
}
