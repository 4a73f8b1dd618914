package dev.ar4j.internal.rendezvous;

import dev.ar4j.OutOfStepException;
import dev.ar4j.rendezvous.PeerLossListener;
import dev.ar4j.PeerLostException;
import dev.ar4j.rendezvous.Rendezvous;
import dev.ar4j.rendezvous.RendezvousException;
import dev.ar4j.rendezvous.RendezvousTimeoutException;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The {@link Rendezvous} of one sub-group of a {@code Communicator.split}, a view over the
 * parent's rendezvous: rank = sub-rank, world size = the members. It owns nothing of the parent:
 * {@link #close()} only unsubscribes.
 *
 * <h2>Keys</h2>
 * Every collective call of the sub-group gets the next number of its own call sequence
 * {@code N} (the members make the same collective calls in the same order, as collectives
 * require). Member {@code j}'s contribution to call {@code N} is published by that member alone as
 * the parent's {@link Rendezvous#broadcast broadcast} {@code <namespace>N/j} with root = its
 * parent rank, and read by the others the same way; the namespace ({@link SplitPlan#namespace()})
 * is unique per split and color, so colors and successive splits never share a key. Broadcast is
 * used because it needs only the root and its readers (the non-members never take part), its
 * stored key is owned by the root (the parent's store refuses a forged write) and a wait on it
 * ends at once when the parent learns that the root is lost or left. Each contribution carries the
 * operation and the caller's key, checked by every reader: members that fell out of step get an
 * {@link IllegalStateException} naming both calls instead of a wrong value. {@link #set}/{@link #get}
 * go to the parent's shared keys under the namespace.
 *
 * <h2>Waits and losses</h2>
 * A call waits for its members one after the other, all within one deadline: the timeout given.
 * A loss the parent reports ({@link Rendezvous#onPeerLost}) is forwarded to this view's listeners
 * when the lost rank is a member (as its sub-rank) or when the whole parent group failed (-1);
 * the loss of a non-member is ignored. The parent reports only its first loss, so a member lost
 * after a non-member is not forwarded: the waits that need it still end at once, and the kernels
 * find it at their deadline. {@link #abortRank} fails this view's later calls and tells its own
 * listeners, but does not declare the rank lost to the parent (that would fail the parent and
 * every other sub-group of the job): it aborts this sub-group's namespace in the parent's store
 * ({@link ScopedAbort}, which the TCP and in-process rendezvous implement), so every wait of the
 * sub-group, the members' and this rank's own, whichever member it waits for, ends at once with a
 * {@link PeerLostException} naming this sub-rank and the abort. Over a parent of another kind the members learn it
 * from the kernels' poison word and NCCL's abort, and a rendezvous wait of theirs that needs this
 * rank ends at its timeout.
 *
 * <h2>Nested splits</h2>
 * The sub-group of a sub-group is made over the top-level rendezvous directly, with the members'
 * top-level ranks and a namespace of its own ({@code nested/<outer namespace><inner namespace>},
 * which no prefix of the outer namespace covers): its keys, its losses and its scoped abort work
 * as one level's do, and aborting the outer sub-group does not end the inner one's waits.
 */
public final class SubGroupRendezvous implements Rendezvous {

    private static final byte MAGIC = (byte) 0xA5;
    private static final int HEADER_BYTES = 4;

    /** The collective operations, as written into each contribution. */
    private enum Op {
        ALL_GATHER(1, "allGather"), BROADCAST(2, "broadcast"), BARRIER(3, "barrier");

        final byte code;
        final String text;

        Op(int code, String text) {
            this.code = (byte) code;
            this.text = text;
        }

        static String describe(byte code) {
            for (Op op : values()) {
                if (op.code == code) {
                    return op.text;
                }
            }
            return "an unknown operation (" + code + ")";
        }
    }

    private final Rendezvous parent;
    private final String namespace;
    private final int[] members;
    private final int rank;
    private final String label;
    private final int color;
    private final String rankWord;  // "parent rank", or "top-level rank" for a nested sub-group
    private final ReentrantLock callLock = new ReentrantLock();
    private long sequence;  // guarded by callLock
    private final List<PeerLossListener> listeners = new ArrayList<>();  // guarded by this
    private int lostRank;         // guarded by this
    private String lostReason;    // guarded by this
    private final AutoCloseable parentSubscription;
    private volatile boolean closed;
    private volatile String abortedBecause;

    private SubGroupRendezvous(Rendezvous parent, SplitPlan plan, String rankWord) {
        this.parent = parent;
        this.namespace = plan.namespace();
        this.members = plan.members();
        this.rank = plan.subRank();
        this.color = plan.color();
        this.rankWord = rankWord;
        this.label = "sub-group color " + plan.color() + " (" + rankWord + "s " + Arrays.toString(members)
                + "), sub-rank " + rank;
        this.parentSubscription = parent.onPeerLost(this::parentLost);
    }

    /**
     * The view of this rank's sub-group; subscribes to the parent's losses.
     *
     * @throws IllegalArgumentException if the plan joins no sub-group
     */
    public static SubGroupRendezvous over(Rendezvous parent, SplitPlan plan) {
        Objects.requireNonNull(parent, "parent");
        if (!plan.joins()) {
            throw new IllegalArgumentException("rank " + parent.rank() + " joins no sub-group (color -1): it has no "
                    + "sub-group rendezvous");
        }
        if (parent instanceof SubGroupRendezvous outer) {
            int[] inner = plan.members();
            int[] topLevel = new int[inner.length];
            for (int j = 0; j < inner.length; j++) {
                topLevel[j] = outer.members[inner[j]];
            }
            SplitPlan flat = new SplitPlan(plan.color(), plan.subRank(), topLevel,
                    "nested/" + outer.namespace + plan.namespace());
            return new SubGroupRendezvous(outer.parent, flat, "top-level rank");
        }
        return new SubGroupRendezvous(parent, plan, "parent rank");
    }

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int worldSize() {
        return members.length;
    }

    /** The parent rank of sub-rank {@code subRank}. */
    int parentRank(int subRank) {
        return members[subRank];
    }

    @Override
    public byte[][] allGather(String key, byte[] mine, Duration timeout) {
        checkKey(key);
        Objects.requireNonNull(mine, () -> "allGather '" + key + "': value must not be null");
        requirePositive(timeout, "allGather");
        return gather(Op.ALL_GATHER, key, mine, timeout);
    }

    @Override
    public byte[] broadcast(String key, int root, byte[] valueOrNullIfNotRoot, Duration timeout) {
        checkKey(key);
        if (root < 0 || root >= members.length) {
            throw new IllegalArgumentException(label + ": broadcast root " + root + " is out of range for a sub-group "
                    + "of " + members.length + "; roots are sub-ranks 0.." + (members.length - 1));
        }
        if (root == rank && valueOrNullIfNotRoot == null) {
            throw new IllegalArgumentException(label + " is the root of broadcast '" + key + "' and must pass the "
                    + "value to broadcast, not null");
        }
        requirePositive(timeout, "broadcast");
        byte[] record = root == rank ? encode(Op.BROADCAST, key, valueOrNullIfNotRoot) : null;
        callLock.lock();
        try {
            checkUsable();
            long call = sequence++;
            long deadline = System.nanoTime() + timeout.toNanos();
            try {
                if (root == rank) {
                    if (members.length > 1) {
                        parent.broadcast(contributionKey(call, rank), members[rank], record, timeout);
                    }
                    return valueOrNullIfNotRoot.clone();
                }
                return receive(Op.BROADCAST, key, call, root, deadline, timeout);
            } catch (RuntimeException e) {
                throw translate(e, "broadcast '" + key + "'");
            }
        } finally {
            callLock.unlock();
        }
    }

    @Override
    public void barrier(String key, Duration timeout) {
        checkKey(key);
        requirePositive(timeout, "barrier");
        gather(Op.BARRIER, key, new byte[0], timeout);
    }

    @Override
    public void set(String key, byte[] value) {
        checkKey(key);
        Objects.requireNonNull(value, () -> "set '" + key + "': value must not be null");
        checkUsable();
        try {
            parent.set(sharedKey(key), value);
        } catch (RuntimeException e) {
            throw translate(e, "set '" + key + "'");
        }
    }

    @Override
    public byte[] get(String key, Duration timeout) {
        checkKey(key);
        requirePositive(timeout, "get");
        checkUsable();
        try {
            return parent.get(sharedKey(key), timeout);
        } catch (RendezvousTimeoutException e) {
            throw new RendezvousTimeoutException(label + ": get '" + key + "' timed out after " + timeout
                    + ": no member has set this key", key, List.of(), timeout);
        } catch (RuntimeException e) {
            throw translate(e, "get '" + key + "'");
        }
    }

    @Override
    public void abortRank(String reason) {
        Objects.requireNonNull(reason, "reason");
        if (abortedBecause == null) {
            abortedBecause = reason;
        }
        if (parent instanceof ScopedAbort scoped && !closed) {
            scoped.abortScope(namespace, "sub-group color " + color + " (as its sub-rank " + rank + "): " + reason);
        }
        report(rank, label + " aborted: " + reason);
    }

    @Override
    public AutoCloseable onPeerLost(PeerLossListener listener) {
        Objects.requireNonNull(listener, "listener");
        int r;
        String reason;
        synchronized (this) {
            if (lostReason == null) {
                listeners.add(listener);
                return () -> {
                    synchronized (SubGroupRendezvous.this) {
                        listeners.remove(listener);
                    }
                };
            }
            r = lostRank;
            reason = lostReason;
        }
        tell(listener, r, reason);
        return () -> { };
    }

    /** Unsubscribes from the parent; the parent's rendezvous stays open. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            parentSubscription.close();
        } catch (Exception e) {
            throw new RendezvousException(label + ": unsubscribing from the parent's rendezvous failed: " + e, e);
        }
    }

    @Override
    public String toString() {
        return "SubGroupRendezvous[" + label + " of " + members.length + ", keys under '" + namespace + "', over "
                + parent + (closed ? ", closed]" : "]");
    }

    // ---- the collective calls -------------------------------------------------------------------

    private byte[][] gather(Op op, String key, byte[] mine, Duration timeout) {
        byte[] record = encode(op, key, mine);
        callLock.lock();
        try {
            checkUsable();
            long call = sequence++;
            long deadline = System.nanoTime() + timeout.toNanos();
            try {
                byte[][] all = new byte[members.length][];
                if (members.length > 1) {
                    parent.broadcast(contributionKey(call, rank), members[rank], record, timeout);
                }
                all[rank] = mine.clone();
                for (int j = 0; j < members.length; j++) {
                    if (j != rank) {
                        all[j] = receive(op, key, call, j, deadline, timeout);
                    }
                }
                return all;
            } catch (RuntimeException e) {
                throw translate(e, op.text + " '" + key + "'");
            }
        } finally {
            callLock.unlock();
        }
    }

    /** Waits (until {@code deadline}) for member {@code from}'s contribution to call {@code call} and checks it. */
    private byte[] receive(Op op, String key, long call, int from, long deadline, Duration timeout) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
            throw timedOut(op, key, call, from, timeout);
        }
        byte[] record;
        try {
            record = parent.broadcast(contributionKey(call, from), members[from], null,
                    Duration.ofNanos(Math.max(left, 1_000_000)));
        } catch (RendezvousTimeoutException e) {
            throw timedOut(op, key, call, from, timeout);
        }
        return decode(record, op, key, call, from);
    }

    private RendezvousTimeoutException timedOut(Op op, String key, long call, int from, Duration timeout) {
        return new RendezvousTimeoutException(label + " of " + members.length + ": " + op.text + " '" + key
                + "' (call " + call + " of this sub-group) timed out after " + timeout + ": sub-rank " + from
                + " (" + rankWord + " " + members[from] + ") never contributed"
                + (op == Op.BROADCAST ? "" : " (the members after it were not waited for)"), key, List.of(from), timeout);
    }

    /** The parent key of member {@code from}'s contribution to call {@code call}. */
    String contributionKey(long call, int from) {
        return namespace + call + "/" + from;
    }

    /** The parent key of {@link #set}/{@link #get} key {@code key}; a key too long for the parent is hashed. */
    String sharedKey(String key) {
        String plain = namespace + "kv/" + key;
        if (plain.getBytes(StandardCharsets.UTF_8).length <= MAX_KEY_BYTES) {
            return plain;
        }
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(key.getBytes(StandardCharsets.UTF_8));
            return namespace + "kv#/" + HexFormat.of().formatHex(digest);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }

    private byte[] encode(Op op, String key, byte[] payload) {
        byte[] k = key.getBytes(StandardCharsets.UTF_8);
        long total = (long) HEADER_BYTES + k.length + payload.length;
        if (total > MAX_VALUE_BYTES) {
            throw new IllegalArgumentException(label + ": " + op.text + " '" + key + "': value of " + payload.length
                    + " bytes is too large; with this key a sub-group value holds at most "
                    + (MAX_VALUE_BYTES - HEADER_BYTES - k.length) + " bytes (the parent's limit of " + MAX_VALUE_BYTES
                    + " bytes less the call's header)");
        }
        return ByteBuffer.allocate((int) total).put(MAGIC).put(op.code).putShort((short) k.length).put(k).put(payload)
                .array();
    }

    private byte[] decode(byte[] record, Op op, String key, long call, int from) {
        if (record.length < HEADER_BYTES || record[0] != MAGIC) {
            throw new OutOfStepException(label + ": sub-rank " + from + " (" + rankWord + " " + members[from] + ") sent "
                    + "a malformed contribution to call " + call + " (" + record.length + " bytes); run the same ar4j "
                    + "version on every rank");
        }
        ByteBuffer b = ByteBuffer.wrap(record);
        b.get();
        byte theirOp = b.get();
        int keyBytes = Short.toUnsignedInt(b.getShort());
        if (keyBytes > b.remaining()) {
            throw new OutOfStepException(label + ": sub-rank " + from + " sent a malformed contribution to call "
                    + call + " (key of " + keyBytes + " bytes in " + record.length + "); run the same ar4j version on "
                    + "every rank");
        }
        String theirKey = new String(record, HEADER_BYTES, keyBytes, StandardCharsets.UTF_8);
        if (theirOp != op.code || !theirKey.equals(key)) {
            throw new OutOfStepException(label + ": the members are out of step at call " + call + " of the "
                    + "sub-group: sub-rank " + rank + " calls " + op.text + " '" + key + "', sub-rank " + from
                    + " (" + rankWord + " " + members[from] + ") called " + Op.describe(theirOp) + " '" + theirKey
                    + "'; every member must make the same collective calls in the same order");
        }
        return Arrays.copyOfRange(record, HEADER_BYTES + keyBytes, record.length);
    }

    /** A parent failure in sub-group terms: a lost parent rank becomes its sub-rank. */
    private RuntimeException translate(RuntimeException e, String operation) {
        if (e instanceof PeerLostException lost) {
            int sub = lost.peer() < 0 ? -1 : subRankOf(lost.peer());
            String who = lost.peer() < 0 ? "the parent group failed" : sub >= 0 ? "sub-rank " + sub + " (" + rankWord + " "
                    + lost.peer() + ") is lost" : rankWord + " " + lost.peer() + " is lost";
            return new PeerLostException(label + ": " + operation + " failed: " + who + " (" + e.getMessage()
                    + ")", sub, e);
        }
        if (e instanceof IllegalStateException && !closed && abortedBecause == null
                && String.valueOf(e.getMessage()).contains("is closed")) {
            return new IllegalStateException(label + ": " + operation + " failed: the parent's rendezvous is closed ("
                    + e.getMessage() + "); close every sub-communicator before its parent", e);
        }
        if (e instanceof RendezvousException && !(e instanceof RendezvousTimeoutException)
                && !(e.getMessage() != null && e.getMessage().startsWith(label))) {
            return new RendezvousException(label + ": " + operation + " failed: " + e.getMessage(), e);
        }
        return e;
    }

    private int subRankOf(int parentRank) {
        for (int j = 0; j < members.length; j++) {
            if (members[j] == parentRank) {
                return j;
            }
        }
        return -1;
    }

    // ---- losses ---------------------------------------------------------------------------------

    /** The parent's report: forwarded when it concerns a member or the whole group, ignored otherwise. */
    private void parentLost(int parentRank, String reason) {
        if (parentRank < 0) {
            report(-1, label + ": the parent group failed: " + reason);
            return;
        }
        int sub = subRankOf(parentRank);
        if (sub >= 0) {
            report(sub, label + ": sub-rank " + sub + " (" + rankWord + " " + parentRank + ") is lost: " + reason);
        }
    }

    private void report(int subRank, String reason) {
        List<PeerLossListener> toTell;
        synchronized (this) {
            if (lostReason != null) {
                return;
            }
            lostRank = subRank;
            lostReason = reason;
            toTell = List.copyOf(listeners);
            listeners.clear();
        }
        for (PeerLossListener l : toTell) {
            tell(l, subRank, reason);
        }
    }

    private static void tell(PeerLossListener listener, int subRank, String reason) {
        try {
            listener.peerLost(subRank, reason);
        } catch (RuntimeException e) {
            System.getLogger(SubGroupRendezvous.class.getName()).log(System.Logger.Level.ERROR, "peer-loss listener "
                    + listener + " threw while told '" + reason + "'; listeners must not throw", e);
        }
    }

    // ---- checks ---------------------------------------------------------------------------------

    private void checkUsable() {
        if (closed) {
            throw new IllegalStateException(label + ": this sub-group's rendezvous is closed");
        }
        String aborted = abortedBecause;
        if (aborted != null) {
            throw new PeerLostException(label + " was aborted (" + aborted + "); close it", rank, null);
        }
    }

    private static void checkKey(String key) {
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

    private static void requirePositive(Duration timeout, String operation) {
        Objects.requireNonNull(timeout, () -> operation + " timeout must not be null");
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException(operation + " timeout must be positive, got " + timeout);
        }
    }
}
