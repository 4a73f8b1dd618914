package dev.ar4j.internal.rendezvous;
import dev.ar4j.rendezvous.RendezvousRefusedException;

import dev.ar4j.rendezvous.PeerLossListener;
import dev.ar4j.PeerLostException;
import dev.ar4j.rendezvous.RendezvousException;
import dev.ar4j.rendezvous.RendezvousSettings;
import dev.ar4j.internal.platform.Durations;

import dev.ar4j.internal.rendezvous.BlockingKeyValueStore.AwaitResult;
import dev.ar4j.internal.rendezvous.RendezvousProtocol.HelloRequest;

import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;

/**
 * What the rendezvous server knows about its group: which rank is connected through which
 * session, each rank's incarnation, which ranks left on purpose and which were lost, the store
 * and each rank's share of it. It admits ranks, enforces key ownership, the quotas and the
 * server's memory budget, and makes every wait that needs a lost or departed rank end at once.
 * A rank launched with another world size fails the group: every wait ends at once naming it.
 */
final class GroupState {

    /** A request the server understood and refuses; the session answers ERROR with the code. */
    static final class Refusal extends Exception {
        private static final long serialVersionUID = 1L;
        final byte code;
        final int rank;

        Refusal(byte code, int rank, String message) {
            super(message, null, false, false);
            this.code = code;
            this.rank = rank;
        }
    }

    /** How long a HELLO for a rank whose connection is ending waits for that end to be seen. */
    private static final long DUPLICATE_RANK_GRACE_NANOS = Duration.ofMillis(500).toNanos();

    private final int worldSize;
    private final RendezvousSettings settings;
    private final BlockingKeyValueStore store = new BlockingKeyValueStore();
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private final Map<Integer, ServerSession> connected = new HashMap<>();
    private final Map<Integer, Long> incarnations = new HashMap<>();
    private final BitSet joined = new BitSet();
    /** Read by waiters under the store's lock, so never guarded by {@link #lock} (no lock-order inversion). */
    private final Set<Integer> departed = ConcurrentHashMap.newKeySet();
    private final Map<Integer, String> lost = new ConcurrentHashMap<>();
    private final long[] keysUsed;
    private final long[] bytesUsed;
    private final Map<String, Integer> sharedKeyCharge = new HashMap<>();
    private final PeerLossListeners losses = new PeerLossListeners();
    private final ServerMemoryBudget budget;
    private final AbortedScopes abortedScopes;
    /** Why the group cannot form (a rank with another world size), or null. */
    private volatile String groupFailure;
    private volatile boolean closed;

    GroupState(int worldSize, RendezvousSettings settings, ServerMemoryBudget budget) {
        this.worldSize = worldSize;
        this.settings = settings;
        this.budget = budget;
        this.keysUsed = new long[worldSize];
        this.bytesUsed = new long[worldSize];
        this.abortedScopes = new AbortedScopes(worldSize);
    }

    int worldSize() {
        return worldSize;
    }

    /** Admits the authenticated {@code session} as {@code hello.rank()}, or refuses naming why. */
    void admit(ServerSession session, HelloRequest hello) throws Refusal {
        int rank = hello.rank();
        if (hello.worldSize() != worldSize) {
            String message = "rank " + rank + " says world size " + hello.worldSize() + ", server expects " + worldSize
                    + "; every rank must be launched with the same world size";
            if (groupFailure == null) {
                groupFailure = "the group cannot form: " + message;
                store.wakeAll();
            }
            throw new Refusal(RendezvousProtocol.CODE_REFUSED, rank, message);
        }
        if (rank < 0 || rank >= worldSize) {
            throw new Refusal(RendezvousProtocol.CODE_REFUSED, rank, "rank " + rank + " is out of range for world size "
                    + worldSize + "; ranks are 0.." + (worldSize - 1));
        }
        String restart = null;
        lock.lock();
        try {
            // Well within the handshake timeout, so the refusal arrives before the connection is cut.
            long grace = Math.min(DUPLICATE_RANK_GRACE_NANOS, settings.handshakeTimeout().toNanos() / 4);
            while (connected.containsKey(rank) && grace > 0 && !closed) {
                grace = changed.awaitNanos(grace);
            }
            ServerSession holder = connected.get(rank);
            if (holder != null) {
                throw new Refusal(RendezvousProtocol.CODE_REFUSED, rank, "rank " + rank + " is already connected from "
                        + holder.peer() + "; two processes claim rank " + rank
                        + " (check RANK / the launcher's rank variables)");
            }
            Long earlier = incarnations.get(rank);
            if (earlier != null) {
                restart = "rank " + rank + " joined again as a new incarnation (" + Long.toHexString(hello.incarnation())
                        + ", was " + Long.toHexString(earlier) + "): the process was restarted, and the group's values"
                        + " belong to its earlier incarnation; the group cannot continue: restart every rank";
                lost.putIfAbsent(rank, restart);
            } else {
                incarnations.put(rank, hello.incarnation());
                session.rank = rank;
                connected.put(rank, session);
                joined.set(rank);
                changed.signalAll();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new Refusal(RendezvousProtocol.CODE_REFUSED, rank, "the server was interrupted while admitting rank " + rank);
        } finally {
            lock.unlock();
        }
        if (restart != null) {
            reportLoss(rank, restart);
            throw new Refusal(RendezvousProtocol.CODE_RANK_LOST, rank, restart);
        }
    }

    /**
     * The session of {@code rank} ended: on purpose ({@code lossReason} null: the rank sent BYE) or
     * not (the reason names what was seen). Waits needing the rank's missing keys end at once.
     */
    void left(ServerSession session, String lossReason) {
        int rank = session.rank;
        if (rank < 0) {
            return;
        }
        boolean newLoss = false;
        lock.lock();
        try {
            if (!connected.remove(rank, session)) {
                return;
            }
            if (lossReason == null) {
                departed.add(rank);
            } else if (!closed && lost.putIfAbsent(rank, lossReason) == null) {
                newLoss = true;
            }
            changed.signalAll();
        } finally {
            lock.unlock();
        }
        store.wakeAll();
        if (newLoss) {
            reportLoss(rank, lossReason);
        }
    }

    private void reportLoss(int rank, String reason) {
        store.wakeAll();
        losses.report(rank, reason);
        List<ServerSession> others;
        lock.lock();
        try {
            others = new ArrayList<>(connected.values());
        } finally {
            lock.unlock();
        }
        for (ServerSession other : others) {
            if (other.rank != rank) {
                other.tellPeerLost(rank, reason);
            }
        }
    }

    /**
     * {@code rank}'s ABORT. An empty {@code scope} aborts the rank: it counts as lost (its peers are
     * told), and every wait that needs its keys, and each of its own, ends. A scope ends only the
     * waits for its keys inside the scope and its own waits there ({@link AbortedScopes}).
     *
     * @return false if a scope could not be recorded (the rank's limit of scopes or the server's
     *     memory budget is exhausted); the caller warns
     */
    boolean abort(int rank, String scope, String reason) {
        if (scope.isEmpty()) {
            String message = "rank " + rank + " aborted: " + reason;
            if (!closed && lost.putIfAbsent(rank, message) == null) {
                reportLoss(rank, message);
            } else {
                store.wakeAll();
            }
            return true;
        }
        long cost = 2L * scope.length() + 2L * Math.min(reason.length(), AbortedScopes.MAX_REASON_CHARS) + 128;
        if (!budget.tryCharge(rank, cost)) {
            return false;
        }
        boolean recorded = abortedScopes.add(rank, scope, "rank " + rank + " aborted " + reason);
        if (!recorded) {
            budget.release(rank, cost);
            return false;
        }
        store.wakeAll();
        return true;
    }

    /** Subscribes to the first rank loss the server sees. */
    AutoCloseable onPeerLost(PeerLossListener listener) {
        return losses.add(listener);
    }

    /** Stores {@code value} under {@code key} for {@code rank}, if the key is the rank's own (or shared) and within quota. */
    void set(int rank, String key, byte[] value) throws Refusal {
        set(rank, key, value, 0, value.length);
    }

    /**
     * Stores a copy of {@code length} bytes of {@code payload} from {@code offset} under {@code key}
     * for {@code rank}, if the key is the rank's own (or shared) and within quota: the copy is
     * charged to the rank's share of the budget before it is made.
     */
    void set(int rank, String key, byte[] payload, int offset, int length) throws Refusal {
        int owner = StoreKeys.owner(key, worldSize);
        if (owner != rank && owner != StoreKeys.SHARED) {
            String whose = owner >= 0 ? "rank " + owner + "'s key" : "a key without an owner rank prefix";
            throw new Refusal(RendezvousProtocol.CODE_REFUSED, rank, "rank " + rank + " may not set '" + shorten(key)
                    + "': it is " + whose + "; a rank sets only keys starting with its own rank (forged SET refused)");
        }
        lock.lock();
        try {
            byte[] previous = store.peek(key);
            int charged = rank;
            int valueLength = length;
            if (owner == StoreKeys.SHARED && previous != null) {
                charged = sharedKeyCharge.getOrDefault(key, rank);
                keysUsed[charged]--;
                bytesUsed[charged] -= previous.length;
            } else if (previous != null) {
                keysUsed[rank]--;
                bytesUsed[rank] -= previous.length;
            }
            boolean overQuota = keysUsed[rank] + 1 > settings.maxKeysPerRank()
                    || bytesUsed[rank] + valueLength > settings.maxBytesPerRank();
            long newBytes = charge(key, valueLength);
            if (!overQuota && !budget.tryCharge(rank, newBytes)) {
                if (previous != null) {
                    keysUsed[charged]++;
                    bytesUsed[charged] += previous.length;
                }
                throw new Refusal(RendezvousProtocol.CODE_QUOTA, rank, "rank " + rank + " cannot set '" + shorten(key)
                        + "': " + budget.describeRefusal(rank, newBytes, "a value"));
            }
            if (overQuota) {
                if (previous != null) {
                    keysUsed[charged]++;
                    bytesUsed[charged] += previous.length;
                }
                throw new Refusal(RendezvousProtocol.CODE_QUOTA, rank, "rank " + rank + " exceeds its store quota"
                        + " setting '" + shorten(key) + "' (" + valueLength + " bytes): it holds " + keysUsed[rank]
                        + " keys / " + bytesUsed[rank] + " bytes, the quota is " + settings.maxKeysPerRank()
                        + " keys / " + settings.maxBytesPerRank() + " bytes per rank (ar4j.rdzv.maxKeysPerRank,"
                        + " ar4j.rdzv.maxBytesPerRank)");
            }
            byte[] value;
            try {
                value = offset == 0 && length == payload.length ? payload
                        : java.util.Arrays.copyOfRange(payload, offset, offset + length);
            } catch (OutOfMemoryError e) {
                budget.release(rank, newBytes);
                if (previous != null) {
                    keysUsed[charged]++;
                    bytesUsed[charged] += previous.length;
                }
                throw e;
            }
            keysUsed[rank]++;
            bytesUsed[rank] += value.length;
            if (owner == StoreKeys.SHARED) {
                sharedKeyCharge.put(key, rank);
            }
            store.set(key, value);
            if (previous != null) {
                budget.release(charged, charge(key, previous.length));
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * Waits for {@code keys}; ends early with a {@link PeerLostException} if a missing key's owner
     * was lost or left, and with a {@link RendezvousException} if {@code session} ended.
     */
    AwaitResult await(List<String> keys, long timeoutNanos, ServerSession session) throws InterruptedException {
        int[] owners = new int[keys.size()];
        for (int i = 0; i < owners.length; i++) {
            owners[i] = StoreKeys.owner(keys.get(i), worldSize);
        }
        return store.await(keys, timeoutNanos, missing -> abortReason(keys, owners, missing, session));
    }

    private RuntimeException abortReason(List<String> keys, int[] owners, int[] missing, ServerSession session) {
        if (session.isEnded()) {
            return new RendezvousException("the connection of the waiting read ended");
        }
        String failure = groupFailure;
        if (failure != null) {
            return new RendezvousRefusedException(failure);
        }
        String own = lostReason(session.rank);
        if (own != null) {
            return new PeerLostException(own + "; this wait of rank " + session.rank + " ended with it", session.rank,
                    null);
        }
        PeerLostException scoped = abortedScopes.check(keys, missing, session.rank);
        if (scoped != null) {
            return scoped;
        }
        for (int index : missing) {
            int owner = owners[index];
            if (owner < 0) {
                continue;
            }
            String loss = lostReason(owner);
            if (loss != null) {
                return new PeerLostException(loss + "; it never published '" + shorten(keys.get(index)) + "'", owner, null);
            }
            if (hasDeparted(owner)) {
                return new PeerLostException("rank " + owner + " left the group (closed its rendezvous) without"
                        + " publishing '" + shorten(keys.get(index)) + "'; do all ranks make the same collective calls?", owner, null);
            }
        }
        return null;
    }

    private String lostReason(int rank) {
        return lost.get(rank);
    }

    private boolean hasDeparted(int rank) {
        return departed.contains(rank);
    }

    /** Waits until {@code done} holds; false on timeout, close or interrupt. */
    boolean awaitMembership(Duration timeout, BooleanSupplier done) {
        long remaining = Durations.toNanos(Durations.requirePositive(timeout, "timeout"));
        lock.lock();
        try {
            while (!done.getAsBoolean()) {
                if (remaining <= 0 || closed) {
                    return false;
                }
                remaining = changed.awaitNanos(remaining);
            }
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        } finally {
            lock.unlock();
        }
    }

    /** Called under the membership lock by {@link #awaitMembership}'s conditions. */
    boolean allJoinedAndGone() {
        return joined.cardinality() == worldSize && connected.isEmpty();
    }

    boolean noneConnected() {
        return connected.isEmpty();
    }

    /** For messages: which ranks never connected, which are still connected, which were lost. */
    String describeUnfinishedRanks() {
        lock.lock();
        try {
            List<Integer> neverJoined = new ArrayList<>();
            for (int r = 0; r < worldSize; r++) {
                if (!joined.get(r)) {
                    neverJoined.add(r);
                }
            }
            List<String> parts = new ArrayList<>();
            if (!neverJoined.isEmpty()) {
                parts.add(StoreBackedRendezvous.describeRanks(neverJoined) + " never connected");
            }
            if (!connected.isEmpty()) {
                parts.add(StoreBackedRendezvous.describeRanks(connected.keySet().stream().sorted().toList())
                        + " still connected");
            }
            if (!lost.isEmpty()) {
                parts.add(StoreBackedRendezvous.describeRanks(lost.keySet().stream().sorted().toList()) + " lost");
            }
            return parts.isEmpty() ? "all ranks finished" : String.join("; ", parts);
        } finally {
            lock.unlock();
        }
    }

    void close() {
        closed = true;
        store.close();
        lock.lock();
        try {
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** What a stored value costs the budget: its bytes and its key's (an estimate of the map entry included). */
    private static long charge(String key, int valueLength) {
        return valueLength + 2L * key.length() + 64;
    }

    static String shorten(String key) {
        return key.length() <= 80 ? key : key.substring(0, 80) + "...";
    }
}
