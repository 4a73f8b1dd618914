package dev.ar4j.rendezvous;

import java.time.Duration;

/**
 * How the ranks of one group exchange small byte strings at setup time: IPC handles, NCCL unique
 * ids, host identities. Not a data path: values are kilobytes, not tensors.
 *
 * <h2>Keys and repeated use</h2>
 * Every operation takes a key naming what is exchanged. The collective operations
 * ({@link #allGather}, {@link #broadcast}, {@link #barrier}) count how often this rank has used
 * each key with each operation and put that count into the stored key, so calling
 * {@code allGather("handles", ...)} twice in a row is safe: the second call never sees the values
 * of the first. This works because every rank makes the same collective calls in the same order,
 * which collectives require anyway. {@link #set}/{@link #get} are a plain key-value store: a
 * second {@code set} of a key replaces its value. The namespaces of the four kinds of operation
 * are separate.
 *
 * <p>Stored values stay in the store until the group is closed, which is fine for setup traffic
 * and wrong for a per-step exchange.
 *
 * <h2>Timeouts</h2>
 * Every wait is bounded. When the time runs out a {@link RendezvousTimeoutException} names the
 * key and the ranks that never arrived. After a collective timed out the ranks may disagree on
 * how often each key was used: close the rendezvous.
 *
 * <h2>Threads</h2>
 * A rank is meant to be driven by one thread. Calls from several threads are serialized, and the
 * order in which they run is the order the sequence counts see.
 */
public interface Rendezvous extends AutoCloseable {

    /** Longest user key, in UTF-8 bytes. */
    int MAX_KEY_BYTES = 1024;

    /** Largest value one rank may contribute, in bytes (16 MiB). */
    int MAX_VALUE_BYTES = 16 << 20;

    /**
     * This rank, {@code 0 <= rank < worldSize}.
     *
     * @return this rank, 0 to {@link #worldSize()} - 1
     */
    int rank();

    /**
     * How many ranks the group has.
     *
     * @return the number of ranks, at least 1
     */
    int worldSize();

    /**
     * Contributes {@code mine} and returns the contributions of all ranks, indexed by rank (this
     * rank's own included). Returns when every rank has contributed.
     *
     * @param key what is exchanged: not empty, at most {@link #MAX_KEY_BYTES} UTF-8 bytes
     * @param mine this rank's contribution, at most {@link #MAX_VALUE_BYTES} bytes
     * @param timeout how long to wait for the other ranks; positive
     * @return one array per rank, indexed by rank, each a copy
     * @throws RendezvousTimeoutException naming the ranks that had not contributed in time
     * @throws IllegalArgumentException   if the key is empty or too long, or the value too large
     * @throws dev.ar4j.PeerLostException if a rank that has not contributed is lost
     */
    byte[][] allGather(String key, byte[] mine, Duration timeout);

    /**
     * Returns the value of rank {@code root}. On {@code root} it publishes
     * {@code valueOrNullIfNotRoot} and returns (a copy of) it without waiting for the others; on
     * the other ranks the argument is ignored and the call waits for the root's value.
     *
     * @param key what is exchanged: not empty, at most {@link #MAX_KEY_BYTES} UTF-8 bytes
     * @param root the rank whose value is broadcast, 0 to {@link #worldSize()} - 1
     * @param valueOrNullIfNotRoot the value, at most {@link #MAX_VALUE_BYTES} bytes, on the root; ignored
     *     (may be {@code null}) elsewhere
     * @param timeout how long to wait for the root's value; positive
     * @return a copy of the root's value
     * @throws RendezvousTimeoutException naming {@code root} if its value did not come in time
     * @throws IllegalArgumentException   if {@code root} is out of range, or this rank is the root
     *                                    and the value is null
     * @throws dev.ar4j.PeerLostException if the root is lost before its value came
     */
    byte[] broadcast(String key, int root, byte[] valueOrNullIfNotRoot, Duration timeout);

    /**
     * Returns when every rank has entered the barrier of this key.
     *
     * @param key names the barrier: not empty, at most {@link #MAX_KEY_BYTES} UTF-8 bytes
     * @param timeout how long to wait for the other ranks; positive
     * @throws RendezvousTimeoutException naming the ranks that had not entered in time
     * @throws IllegalArgumentException if the key is empty or too long
     * @throws dev.ar4j.PeerLostException if a rank that has not entered is lost
     */
    void barrier(String key, Duration timeout);

    /**
     * Stores {@code value} under {@code key}, replacing an earlier value; visible to all ranks.
     *
     * @param key the key: not empty, at most {@link #MAX_KEY_BYTES} UTF-8 bytes
     * @param value the value, at most {@link #MAX_VALUE_BYTES} bytes
     * @throws IllegalArgumentException if the key is empty or too long, or the value too large
     */
    void set(String key, byte[] value);

    /**
     * Returns the value stored under {@code key}, waiting until some rank has set it.
     *
     * @param key the key: not empty, at most {@link #MAX_KEY_BYTES} UTF-8 bytes
     * @param timeout how long to wait for the value; positive
     * @return a copy of the value
     * @throws RendezvousTimeoutException if no rank set the key in time (no missing ranks named:
     *                                    the store does not know who was meant to set it)
     * @throws IllegalArgumentException if the key is empty or too long
     */
    byte[] get(String key, Duration timeout);

    /**
     * Declares this rank lost to the group (it gave up or was aborted): the peers' waits that need
     * it end at once and their {@link #onPeerLost} listeners are told; ar4j's TCP and in-process
     * rendezvous end this rank's own waits too. Must not block. The default does nothing: a
     * rendezvous that cannot tell its peers leaves that to the kernels' poison word, NCCL's abort
     * and its waits' timeouts.
     *
     * @param reason what happened, for the peers' messages
     */
    default void abortRank(String reason) {
        java.util.Objects.requireNonNull(reason, "reason");
    }

    /**
     * Subscribes to the loss of any rank of the group (see {@link PeerLossListener}). A listener
     * added after a loss was seen is told at once. Closing the returned handle unsubscribes.
     * The default implementation never reports a loss: a rendezvous that cannot observe its
     * peers (a user's own implementation) leaves detection to the kernels' and NCCL's deadlines.
     *
     * @param listener told once, on a rendezvous thread
     * @return a handle whose {@code close()} removes the listener
     */
    default AutoCloseable onPeerLost(PeerLossListener listener) {
        java.util.Objects.requireNonNull(listener, "listener");
        return () -> { };
    }

    /** Leaves the group and frees what this rank holds. Idempotent. */
    @Override
    void close();
}
