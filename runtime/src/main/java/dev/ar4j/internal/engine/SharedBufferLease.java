package dev.ar4j.internal.engine;

import dev.ar4j.cuda.DeviceBuffer;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Keeps the shared buffers (signal blocks, staging buffers) of the ranks of one process alive
 * until the last of those ranks closed. Ranks of one JVM address each other's memory directly
 * (no IPC mapping holds it), and a rank that is still failing or aborting poisons its peers'
 * signal blocks, and its kernels may still write into them: freeing a rank's buffers when that
 * rank alone closes would let a peer write into freed memory (a device fault, or a host crash in
 * the driver when it takes the freed address for host memory). The group is identified by the
 * signal-block addresses every rank received from the exchange, which are the same on every rank.
 */
final class SharedBufferLease {

    private static final ConcurrentHashMap<String, SharedBufferLease> GROUPS = new ConcurrentHashMap<>();

    private final String key;
    private int remaining;
    private final List<DeviceBuffer> pending = new ArrayList<>();

    private SharedBufferLease(String key, int ranks) {
        this.key = key;
        this.remaining = ranks;
    }

    /**
     * The lease of the in-process group whose ranks' signal blocks are {@code signals} (every
     * rank passes the same array).
     */
    static SharedBufferLease join(long[] signals) {
        String key = Arrays.toString(signals);
        return GROUPS.computeIfAbsent(key, k -> new SharedBufferLease(k, signals.length));
    }

    /**
     * Hands this rank's buffers to the lease; the last rank to release frees every rank's, once
     * (failures added to {@code collector}).
     */
    void release(Throwable collector, DeviceBuffer... buffers) {
        List<DeviceBuffer> toFree = null;
        synchronized (this) {
            for (DeviceBuffer b : buffers) {
                if (b != null) {
                    pending.add(b);
                }
            }
            remaining--;
            if (remaining == 0) {
                toFree = new ArrayList<>(pending);
                pending.clear();
                GROUPS.remove(key, this);
            }
        }
        if (toFree != null) {
            Closing.quietly(collector, toFree.toArray(AutoCloseable[]::new));
        }
    }

    /** Ranks of the group that have not released yet (for tests). */
    synchronized int remaining() {
        return remaining;
    }
}
