package dev.ar4j.internal.peer;

/**
 * Makes one buffer of every rank addressable from this rank's device: given this rank's
 * device pointer, returns every rank's corresponding pointer as this device sees it.
 * Collective: every rank calls it in the same order.
 *
 * <p>Two implementations: {@link IpcPeerMemory} for one process per GPU (CUDA IPC handles,
 * exchanged through the rendezvous) and {@link DirectPeerMemory} for one process driving several
 * GPUs (peer access; the raw pointers are valid everywhere in the process).
 */
public sealed interface PeerMemory extends AutoCloseable permits IpcPeerMemory, DirectPeerMemory {

    /**
     * Exchanges buffers in one round trip.
     *
     * @param pointers this rank's device pointers (each may point into the middle of an allocation)
     * @param bytes    the buffers' sizes; every rank must pass the same sizes in the same order
     * @return for buffer i, one pointer per rank ({@code result[i][r]}); {@code result[i][rank]}
     *         is {@code pointers[i]}
     * @throws IllegalStateException if the ranks disagree on the number or the sizes of the buffers
     */
    long[][] exchange(long[] pointers, long[] bytes);

    /** Exchanges one buffer: {@code exchange(new long[]{pointer}, new long[]{bytes})[0]}. */
    default long[] exchange(long pointer, long bytes) {
        return exchange(new long[] {pointer}, new long[] {bytes})[0];
    }

    /** One process per GPU (CUDA IPC) or one process for every GPU (peer access). */
    static PeerMemory create(boolean sameProcess, dev.ar4j.rendezvous.Rendezvous rendezvous,
                             java.time.Duration timeout) {
        return sameProcess ? new DirectPeerMemory(rendezvous, timeout) : new IpcPeerMemory(rendezvous, timeout);
    }

    /** Unmaps everything this object opened, exactly once. */
    @Override
    void close();
}
