package dev.ar4j.rendezvous;

/**
 * Told when the rendezvous learns that a rank of the group is lost: its connection to the
 * rendezvous dropped, its heartbeat stopped, or the group was failed or aborted. Called at most
 * once per listener, on a rendezvous thread; it must return quickly and never block (hand the
 * event to another thread if there is work to do).
 */
@FunctionalInterface
public interface PeerLossListener {

    /**
     * Called at most once, when the rendezvous first sees a loss.
     *
     * @param rank   the rank that was lost, or -1 when the whole group failed (the rendezvous
     *               server is gone, or the group was aborted)
     * @param reason what was seen, e.g. "rank 1 disconnected" or "rank 1's heartbeat stopped
     *               1500 ms ago (timeout 1000 ms)"
     */
    void peerLost(int rank, String reason);
}
