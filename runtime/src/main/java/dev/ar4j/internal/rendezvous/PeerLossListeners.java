package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.PeerLossListener;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The {@link PeerLossListener}s of one rendezvous: each told at most once, about the first loss
 * seen; one added after a loss is told at once. A listener that throws is logged, never lets the
 * exception reach the rendezvous thread that reported the loss.
 */
final class PeerLossListeners {
    private static final System.Logger LOG = System.getLogger(PeerLossListeners.class.getName());

    private final List<PeerLossListener> listeners = new ArrayList<>();
    private int lostRank;
    private String lostReason;

    /** Adds {@code listener}; returns the handle that removes it. */
    AutoCloseable add(PeerLossListener listener) {
        Objects.requireNonNull(listener, "listener");
        int rank;
        String reason;
        synchronized (this) {
            if (lostReason == null) {
                listeners.add(listener);
                return () -> remove(listener);
            }
            rank = lostRank;
            reason = lostReason;
        }
        tell(listener, rank, reason);
        return () -> { };
    }

    /** Reports a loss to every listener once; later reports are ignored. Returns whether this was the first. */
    boolean report(int rank, String reason) {
        List<PeerLossListener> toTell;
        synchronized (this) {
            if (lostReason != null) {
                return false;
            }
            lostRank = rank;
            lostReason = reason;
            toTell = List.copyOf(listeners);
            listeners.clear();
        }
        for (PeerLossListener listener : toTell) {
            tell(listener, rank, reason);
        }
        return true;
    }

    /** The first loss reported, or null. */
    synchronized String firstLoss() {
        return lostReason;
    }

    private synchronized void remove(PeerLossListener listener) {
        listeners.remove(listener);
    }

    private static void tell(PeerLossListener listener, int rank, String reason) {
        try {
            listener.peerLost(rank, reason);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.ERROR, "peer-loss listener " + listener + " threw while told '" + reason
                    + "'; listeners must not throw", e);
        }
    }
}
