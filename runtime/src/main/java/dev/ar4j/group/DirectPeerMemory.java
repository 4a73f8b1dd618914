package dev.ar4j.group;

import dev.ar4j.rendezvous.Rendezvous;

import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.time.Duration;

/**
 * {@link PeerMemory} inside one process driving several GPUs (one thread per GPU): with peer
 * access enabled, a device pointer of any GPU is valid on every other GPU of the process, so the
 * ranks only exchange raw addresses (CUDA IPC cannot open a handle in the process that made it).
 * The communicator enables peer access before the first exchange.
 */
final class DirectPeerMemory implements PeerMemory {

    private final Rendezvous rendezvous;
    private final Duration timeout;
    private final int rank;
    private int sequence;

    DirectPeerMemory(Rendezvous rendezvous, Duration timeout) {
        this.rendezvous = rendezvous;
        this.timeout = timeout;
        this.rank = rendezvous.rank();
    }

    @Override
    public long[][] exchange(long[] pointers, long[] bytes) {
        int n = pointers.length;
        ByteBuffer mine = ByteBuffer.allocate(4 + 16 * n).putInt(n);
        for (int i = 0; i < n; i++) {
            mine.putLong(pointers[i]).putLong(bytes[i]);
        }
        byte[][] all = rendezvous.allGather("ar4j/peer/" + (sequence++), mine.array(), timeout);
        long[][] result = new long[n][all.length];
        for (int r = 0; r < all.length; r++) {
            ByteBuffer b = ByteBuffer.wrap(all[r]);
            try {
                int count = b.getInt();
                SharedBufferChecks.sameCount(rank, n, r, count);
                for (int i = 0; i < n; i++) {
                    result[i][r] = b.getLong();
                    long peerBytes = b.getLong();
                    SharedBufferChecks.sameSize(i, rank, bytes[i], r, peerBytes);
                }
            } catch (BufferUnderflowException e) {
                throw new IllegalStateException("rank " + r + " sent a truncated pointer record", e);
            }
        }
        return result;
    }

    @Override
    public void close() {
        // Nothing was mapped: peer pointers belong to their own ranks.
    }
}
