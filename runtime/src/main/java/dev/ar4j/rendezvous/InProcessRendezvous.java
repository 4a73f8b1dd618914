package dev.ar4j.rendezvous;

import dev.ar4j.rendezvous.BlockingKeyValueStore.AwaitResult;
import dev.ar4j.rendezvous.BlockingKeyValueStore.Found;

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
 * Values are copied in and out, so no rank sees another's array.
 */
public final class InProcessRendezvous {

    private final int worldSize;
    private final BlockingKeyValueStore store = new BlockingKeyValueStore();
    private final RankView[] views;

    private InProcessRendezvous(int worldSize) {
        this.worldSize = worldSize;
        this.views = new RankView[worldSize];
    }

    /**
     * A group of {@code worldSize} ranks.
     *
     * @throws IllegalArgumentException if {@code worldSize < 1}
     */
    public static InProcessRendezvous create(int worldSize) {
        if (worldSize < 1) {
            throw new IllegalArgumentException("world size must be >= 1, got " + worldSize);
        }
        return new InProcessRendezvous(worldSize);
    }

    /** How many ranks the group has. */
    public int worldSize() {
        return worldSize;
    }

    /**
     * The view of rank {@code rank}. Every call for one rank returns the same view, because the
     * view counts the uses of each key for that rank. A closed view stays closed.
     *
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

    private final class RankView extends StoreBackedRendezvous {

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
                result = store.await(storeKeys, Durations.toNanos(timeout));
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
            // The store is shared by the group and holds nothing per rank.
        }

        @Override
        public String toString() {
            return "InProcessRendezvous[rank " + rank() + " of " + worldSize() + "]";
        }
    }
}
