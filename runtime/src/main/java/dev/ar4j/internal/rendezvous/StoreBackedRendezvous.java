package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.Rendezvous;
import dev.ar4j.rendezvous.RendezvousTimeoutException;
import dev.ar4j.internal.platform.Durations;

import dev.ar4j.internal.rendezvous.BlockingKeyValueStore.AwaitResult;
import dev.ar4j.internal.rendezvous.BlockingKeyValueStore.Found;
import dev.ar4j.internal.rendezvous.BlockingKeyValueStore.Missing;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The collective operations of {@link Rendezvous} written once over two store primitives, "set a
 * key" and "wait for these keys": the in-process and the TCP implementation differ only in where
 * the store lives.
 *
 * <p>Stored keys are {@code <owner rank>/<namespace>/<use>/<user key>}, or
 * {@code *}{@code /kv/<user key>} for the shared keys of {@link #set}/{@link #get} (see
 * {@code StoreKeys}). The owner rank comes first so that the store can check that a rank writes
 * only its own keys and tell which rank a wait depends on; the namespace separates the operations;
 * the use count (1 for the first use of a user key with an operation on this rank) makes repeated
 * use of a key safe. The fields before the user key contain no {@code /}, so any user key maps to
 * distinct stored keys.
 */
abstract class StoreBackedRendezvous implements Rendezvous {

    private final int rank;
    private final int worldSize;
    private final Map<String, Integer> useCounts = new HashMap<>();
    /** Serializes the calls of this rank, which fixes the order the use counts see. */
    private final ReentrantLock callLock = new ReentrantLock();
    private volatile boolean closed;
    private volatile boolean timedOut;

    StoreBackedRendezvous(int rank, int worldSize) {
        if (worldSize < 1) {
            throw new IllegalArgumentException("world size must be >= 1, got " + worldSize);
        }
        if (rank < 0 || rank >= worldSize) {
            throw new IllegalArgumentException("rank " + rank + " is out of range for world size " + worldSize
                    + "; ranks are 0.." + (worldSize - 1));
        }
        this.rank = rank;
        this.worldSize = worldSize;
    }

    /** Stores {@code value} under {@code storeKey}. The array belongs to the caller. */
    abstract void storeSet(String storeKey, byte[] value);

    /**
     * Waits up to {@code timeout} for all {@code storeKeys}. Returned arrays belong to the caller.
     *
     * @param operation what is waiting, for messages that do not come from the timeout itself
     */
    abstract AwaitResult storeAwait(List<String> storeKeys, Duration timeout, String operation);

    /** Frees what the implementation holds; called once by {@link #close()}. */
    abstract void release();

    @Override
    public final int rank() {
        return rank;
    }

    @Override
    public final int worldSize() {
        return worldSize;
    }

    @Override
    public final byte[][] allGather(String key, byte[] mine, Duration timeout) {
        checkKey(key);
        checkValue("allGather", key, mine);
        Durations.requirePositive(timeout, "allGather timeout");
        callLock.lock();
        try {
            checkOpen();
            int use = nextUse("ag", key);
            String suffix = "/ag/" + use + "/" + key;
            storeSet(rank + suffix, mine);
            AwaitResult result = storeAwait(perRankKeys(suffix), timeout, "allGather '" + key + "'");
            return switch (result) {
                case Found found -> found.values();
                case Missing missing -> throw timedOut(missingRanks("allGather '" + key + "'", use, key, missing, timeout,
                        "never arrived"));
            };
        } finally {
            callLock.unlock();
        }
    }

    @Override
    public final byte[] broadcast(String key, int root, byte[] valueOrNullIfNotRoot, Duration timeout) {
        checkKey(key);
        if (root < 0 || root >= worldSize) {
            throw new IllegalArgumentException("broadcast root " + root + " is out of range for world size "
                    + worldSize + "; ranks are 0.." + (worldSize - 1));
        }
        if (root == rank) {
            if (valueOrNullIfNotRoot == null) {
                throw new IllegalArgumentException("rank " + rank + " is the root of broadcast '" + key
                        + "' and must pass the value to broadcast, not null");
            }
            checkValue("broadcast", key, valueOrNullIfNotRoot);
        }
        Durations.requirePositive(timeout, "broadcast timeout");
        callLock.lock();
        try {
            checkOpen();
            int use = nextUse("bc", key);
            String storeKey = StoreKeys.owned(root, "bc/" + use + "/" + key);
            if (root == rank) {
                storeSet(storeKey, valueOrNullIfNotRoot);
                return valueOrNullIfNotRoot.clone();
            }
            AwaitResult result = storeAwait(List.of(storeKey), timeout, "broadcast '" + key + "'");
            return switch (result) {
                case Found found -> found.values()[0];
                case Missing ignored -> throw timedOut(new RendezvousTimeoutException("broadcast '" + key
                        + "' from root " + root + " (use " + use + " of this key) timed out after "
                        + Durations.format(timeout) + " on rank " + rank + " of " + worldSize + ": root rank " + root
                        + " never published its value", key, List.of(root), timeout));
            };
        } finally {
            callLock.unlock();
        }
    }

    @Override
    public final void barrier(String key, Duration timeout) {
        checkKey(key);
        Durations.requirePositive(timeout, "barrier timeout");
        callLock.lock();
        try {
            checkOpen();
            int use = nextUse("bar", key);
            String suffix = "/bar/" + use + "/" + key;
            storeSet(rank + suffix, new byte[0]);
            AwaitResult result = storeAwait(perRankKeys(suffix), timeout, "barrier '" + key + "'");
            if (result instanceof Missing missing) {
                throw timedOut(missingRanks("barrier '" + key + "'", use, key, missing, timeout, "never entered it"));
            }
        } finally {
            callLock.unlock();
        }
    }

    @Override
    public final void set(String key, byte[] value) {
        checkKey(key);
        checkValue("set", key, value);
        callLock.lock();
        try {
            checkOpen();
            storeSet(StoreKeys.shared("kv/" + key), value);
        } finally {
            callLock.unlock();
        }
    }

    @Override
    public final byte[] get(String key, Duration timeout) {
        checkKey(key);
        Durations.requirePositive(timeout, "get timeout");
        callLock.lock();
        try {
            checkOpen();
            AwaitResult result = storeAwait(List.of(StoreKeys.shared("kv/" + key)), timeout, "get '" + key + "'");
            return switch (result) {
                case Found found -> found.values()[0];
                case Missing ignored -> throw new RendezvousTimeoutException("get '" + key + "' timed out after "
                        + Durations.format(timeout) + " on rank " + rank + " of " + worldSize
                        + ": no rank has set this key", key, List.of(), timeout);
            };
        } finally {
            callLock.unlock();
        }
    }

    @Override
    public final void close() {
        if (closed) {
            return;
        }
        callLock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            release();
        } finally {
            callLock.unlock();
        }
    }

    /**
     * Whether a collective of this rank has timed out. The group is then out of step, so there is
     * no point in waiting for the other ranks at close.
     */
    final boolean hasTimedOut() {
        return timedOut;
    }

    private RendezvousTimeoutException timedOut(RendezvousTimeoutException e) {
        timedOut = true;
        return e;
    }

    /** Whether {@link #close()} has run. */
    final boolean isClosed() {
        return closed;
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("rank " + rank + "'s rendezvous is closed");
        }
    }

    private int nextUse(String namespace, String key) {
        return useCounts.merge(namespace + "/" + key, 1, Integer::sum);
    }

    private List<String> perRankKeys(String suffix) {
        List<String> keys = new ArrayList<>(worldSize);
        for (int r = 0; r < worldSize; r++) {
            keys.add(r + suffix);
        }
        return keys;
    }

    private RendezvousTimeoutException missingRanks(String operation, int use, String key, Missing missing,
                                                    Duration timeout, String verb) {
        List<Integer> ranks = new ArrayList<>();
        for (int index : missing.indices()) {
            ranks.add(index);
        }
        return new RendezvousTimeoutException(operation + " (use " + use + " of this key) timed out after "
                + Durations.format(timeout) + " on rank " + rank + " of " + worldSize + ": "
                + describeRanks(ranks) + " " + verb, key, ranks, timeout);
    }

    /** {@code rank 2}, {@code ranks 1, 3}, {@code ranks 2-5, 9}. */
    static String describeRanks(List<Integer> ascending) {
        StringBuilder text = new StringBuilder(ascending.size() == 1 ? "rank " : "ranks ");
        int i = 0;
        while (i < ascending.size()) {
            int start = ascending.get(i);
            int end = start;
            while (i + 1 < ascending.size() && ascending.get(i + 1) == end + 1) {
                end = ascending.get(++i);
            }
            if (text.charAt(text.length() - 1) != ' ') {
                text.append(", ");
            }
            text.append(start);
            if (end > start) {
                text.append(end == start + 1 ? ", " : "-").append(end);
            }
            i++;
        }
        return text.toString();
    }

    static void checkKey(String key) {
        Objects.requireNonNull(key, "rendezvous key must not be null");
        if (key.isEmpty()) {
            throw new IllegalArgumentException("rendezvous key must not be empty");
        }
        int bytes = key.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > MAX_KEY_BYTES) {
            throw new IllegalArgumentException("rendezvous key of " + bytes + " UTF-8 bytes is too long; the maximum is "
                    + MAX_KEY_BYTES + " bytes (key starts with '" + key.substring(0, 40) + "')");
        }
    }

    private static void checkValue(String operation, String key, byte[] value) {
        Objects.requireNonNull(value, () -> operation + " '" + key + "': value must not be null");
        if (value.length > MAX_VALUE_BYTES) {
            throw new IllegalArgumentException(operation + " '" + key + "': value of " + value.length
                    + " bytes is too large; a rendezvous value holds at most " + MAX_VALUE_BYTES + " bytes (16 MiB)");
        }
    }
}
