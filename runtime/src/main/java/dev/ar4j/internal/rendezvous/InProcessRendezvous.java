package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.Rendezvous;
import dev.ar4j.rendezvous.PeerLossListener;
import dev.ar4j.PeerLostException;
import dev.ar4j.rendezvous.RendezvousException;
import dev.ar4j.internal.platform.Durations;

import dev.ar4j.internal.rendezvous.BlockingKeyValueStore.AwaitResult;
import dev.ar4j.internal.rendezvous.BlockingKeyValueStore.Found;

import java.time.Duration;
import java.util.List;

/**
 * A rendezvous group for one JVM that drives several GPUs with one thread per rank. Create the
 * group once with its world size, hand {@link #forRank(int)} to each rank's thread, and use the
 * views exactly like a {@link TcpRendezvous}: same keys, same semantics, same timeouts.
 *
 * <pre>{@code
 * InProcessRendezvous group = InProcessRendezvous.create(4);
 * // on the thread of rank r:
 * try (Rendezvous rendezvous = group.forRank(r)) {
 *     byte[][] handles = rendezvous.allGather("ipc-handles", myHandle, Duration.ofSeconds(30));
 * }
 * }</pre>
 *
 * Values are copied in and out, so no rank sees another's array. No token is needed: the group
 * lives in one JVM.
 *
 * <p>Liveness: a wait that needs a key of a rank whose view was closed, or that was
 * {@linkplain #abort aborted}, fails at once with a {@link PeerLostException}, and so does every
 * wait of the aborted rank itself; an abort is also reported to every view's
 * {@linkplain Rendezvous#onPeerLost peer-loss listeners}. Closing a view is a normal departure and
 * is not reported. A view's {@link ScopedAbort#abortScope} ends only the waits of one key scope
 * (a sub-group's), and reports nothing.
 */
public final class InProcessRendezvous {

    private final int worldSize;
    private final BlockingKeyValueStore store = new BlockingKeyValueStore();
    private final RankView[] views;
    private final PeerLossListeners listeners = new PeerLossListeners();
    private final java.util.BitSet departed = new java.util.BitSet();
    private final java.util.Map<Integer, String> lost = new java.util.HashMap<>();
    private final AbortedScopes scopes;

    private InProcessRendezvous(int worldSize) {
        this.worldSize = worldSize;
        this.views = new RankView[worldSize];
        this.scopes = new AbortedScopes(worldSize);
    }

    /**
     * A group of {@code worldSize} ranks.
     *
     * @param worldSize the number of ranks, at least 1
     * @return the new group, with no view made yet
     * @throws IllegalArgumentException if {@code worldSize < 1}
     */
    public static InProcessRendezvous create(int worldSize) {
        if (worldSize < 1) {
            throw new IllegalArgumentException("world size must be >= 1, got " + worldSize);
        }
        return new InProcessRendezvous(worldSize);
    }

    /**
     * How many ranks the group has.
     *
     * @return the world size given to {@link #create(int)}
     */
    public int worldSize() {
        return worldSize;
    }

    /**
     * The view of rank {@code rank}. Every call for one rank returns the same view, because the
     * view counts the uses of each key for that rank. A closed view stays closed.
     *
     * @param rank the rank, 0 to {@link #worldSize()} - 1
     * @return that rank's view
     * @throws IllegalArgumentException if {@code rank} is out of range
     */
    public synchronized Rendezvous forRank(int rank) {
        if (rank < 0 || rank >= worldSize) {
            throw new IllegalArgumentException("rank " + rank + " is out of range for world size " + worldSize
                    + "; ranks are 0.." + (worldSize - 1));
        }
        if (views[rank] == null) {
            views[rank] = new RankView(rank);
        }
        return views[rank];
    }

    /**
     * Declares {@code rank} lost (its thread failed, say): every wait that needs one of its missing
     * keys fails at once with a {@link PeerLostException}, and every view's listeners are told.
     *
     * @param rank the lost rank, 0 to {@link #worldSize()} - 1
     * @param reason what happened, for the messages and the listeners
     * @throws IllegalArgumentException if {@code rank} is out of range
     * @throws NullPointerException if {@code reason} is {@code null}
     */
    public void abort(int rank, String reason) {
        if (rank < 0 || rank >= worldSize) {
            throw new IllegalArgumentException("rank " + rank + " is out of range for world size " + worldSize);
        }
        String message = "rank " + rank + " aborted: " + java.util.Objects.requireNonNull(reason, "reason");
        synchronized (this) {
            lost.putIfAbsent(rank, message);
        }
        store.wakeAll();
        listeners.report(rank, message);
    }

    private synchronized RuntimeException abortReason(List<String> keys, int[] missing, int waitingRank) {
        String own = lost.get(waitingRank);
        if (own != null) {
            return new PeerLostException(own + "; this wait of rank " + waitingRank + " ended with it", waitingRank, null);
        }
        PeerLostException scoped = scopes.check(keys, missing, waitingRank);
        if (scoped != null) {
            return scoped;
        }
        for (int index : missing) {
            int owner = StoreKeys.owner(keys.get(index), worldSize);
            if (owner < 0) {
                continue;
            }
            String loss = lost.get(owner);
            if (loss != null) {
                return new PeerLostException(loss + "; it never published '" + keys.get(index) + "'", owner, null);
            }
            if (departed.get(owner)) {
                return new PeerLostException("rank " + owner + " closed its rendezvous without publishing '"
                        + keys.get(index) + "'; do all ranks make the same collective calls?", owner, null);
            }
        }
        return null;
    }

    private final class RankView extends StoreBackedRendezvous implements ScopedAbort {

        RankView(int rank) {
            super(rank, worldSize);
        }

        @Override
        void storeSet(String storeKey, byte[] value) {
            store.set(storeKey, value.clone());
        }

        @Override
        AwaitResult storeAwait(List<String> storeKeys, Duration timeout, String operation) {
            AwaitResult result;
            try {
                result = store.await(storeKeys, Durations.toNanos(timeout),
                        missing -> abortReason(storeKeys, missing, rank()));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new RendezvousException("rank " + rank() + " was interrupted while waiting in " + operation, e);
            }
            if (result instanceof Found(byte[][] values)) {
                byte[][] copies = new byte[values.length][];
                for (int i = 0; i < values.length; i++) {
                    copies[i] = values[i].clone();
                }
                return new Found(copies);
            }
            return result;
        }

        @Override
        void release() {
            synchronized (InProcessRendezvous.this) {
                departed.set(rank());
            }
            store.wakeAll();
        }

        @Override
        public AutoCloseable onPeerLost(PeerLossListener listener) {
            return listeners.add(listener);
        }

        @Override
        public void abortRank(String reason) {
            abort(rank(), reason);
        }

        @Override
        public void abortScope(String prefix, String reason) {
            java.util.Objects.requireNonNull(reason, "reason");
            if (java.util.Objects.requireNonNull(prefix, "prefix").isEmpty()) {
                throw new IllegalArgumentException("an aborted scope needs a prefix; abortRank aborts the whole rank");
            }
            if (!scopes.add(rank(), prefix, "rank " + rank() + " aborted " + reason)) {
                System.getLogger(InProcessRendezvous.class.getName()).log(System.Logger.Level.WARNING, "rank " + rank()
                        + " has aborted " + AbortedScopes.MAX_SCOPES_PER_RANK + " scopes; the waits of scope '" + prefix
                        + "' end at their timeouts");
            }
            store.wakeAll();
        }

        @Override
        public String toString() {
            return "InProcessRendezvous[rank " + rank() + " of " + worldSize() + "]";
        }
    }
}
