package dev.ar4j.internal.peer;

import dev.ar4j.internal.cuda.AllocationRange;

import dev.ar4j.OutOfStepException;
import dev.ar4j.cuda.Cuda;
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

    /** The allocation holding a device pointer of this process: {base, size}. */
    interface RangeOf {
        long[] of(long pointer);
    }

    private final Rendezvous rendezvous;
    private final Duration timeout;
    private final int rank;
    private final RangeOf rangeOf;
    private int sequence;

    DirectPeerMemory(Rendezvous rendezvous, Duration timeout) {
        this(rendezvous, timeout, DirectPeerMemory::allocationOf);
    }

    /** The allocation holding {@code pointer}, looked up in the context of the device that owns it. */
    private static long[] allocationOf(long pointer) {
        int owner = Cuda.pointerAttributes(pointer).device();
        int current = Cuda.currentDevice();
        if (owner >= 0 && owner != current) {
            Cuda.setDevice(owner);
        }
        try {
            AllocationRange r = AllocationRange.of(pointer);
            return new long[] {r.base(), r.byteSize()};
        } finally {
            if (owner >= 0 && owner != current) {
                Cuda.setDevice(current);
            }
        }
    }

    /** With the allocation lookup replaced, for tests on machines without a GPU. */
    DirectPeerMemory(Rendezvous rendezvous, Duration timeout, RangeOf rangeOf) {
        this.rendezvous = rendezvous;
        this.timeout = timeout;
        this.rank = rendezvous.rank();
        this.rangeOf = rangeOf;
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
                    long pointer = b.getLong();
                    long peerBytes = b.getLong();
                    SharedBufferChecks.sameSize(i, rank, bytes[i], r, peerBytes);
                    if (r != rank) {
                        checkInsideAnAllocation(r, i, pointer, peerBytes);
                    }
                    result[i][r] = pointer;
                }
            } catch (BufferUnderflowException e) {
                throw new OutOfStepException("rank " + r + " sent a truncated pointer record", e);
            }
        }
        return result;
    }

    /** A peer's pointer must lie, with its size, in one allocation of this process (not be made up). */
    private void checkInsideAnAllocation(int peer, int buffer, long pointer, long peerBytes) {
        long[] range;
        try {
            range = rangeOf.of(pointer);
        } catch (RuntimeException e) {
            throw new OutOfStepException("rank " + peer + " sent shared buffer " + buffer + " at 0x"
                    + Long.toHexString(pointer) + ", which is not in a CUDA allocation of this process; refused "
                    + "(a forged or corrupt peer record)", e);
        }
        long offset = pointer - range[0];
        if (offset < 0 || offset > range[1] || peerBytes > range[1] - offset) {
            throw new OutOfStepException("rank " + peer + " sent shared buffer " + buffer + " at 0x"
                    + Long.toHexString(pointer) + " with " + peerBytes + " bytes, outside its allocation [0x"
                    + Long.toHexString(range[0]) + ", +" + range[1] + "); refused (a forged or corrupt peer record)");
        }
    }

    @Override
    public void close() {
        // Nothing was mapped: peer pointers belong to their own ranks.
    }
}
