package dev.ar4j.internal.peer;

import dev.ar4j.internal.cuda.IpcMemHandle;
import dev.ar4j.internal.cuda.IpcMapping;
import dev.ar4j.internal.cuda.AllocationRange;

import dev.ar4j.OutOfStepException;
import dev.ar4j.rendezvous.Rendezvous;

import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * {@link PeerMemory} across processes: for each buffer a rank sends the CUDA IPC handle of the
 * allocation that holds its pointer plus the pointer's offset in it (so a pointer in the middle
 * of an allocation works); each peer opens every handle once (lazy peer access) and adds the
 * offset. Mappings are cached per (rank, handle) and closed exactly once by {@link #close()}.
 *
 * <p>Wire record per rank: version (1 byte), count (4), then per buffer the IPC handle (64),
 * offset (8) and size (8).
 */
final class IpcPeerMemory implements PeerMemory {

    private static final byte WIRE_VERSION = 1;
    private static final int PER_BUFFER = 64 + 8 + 8;

    /** Where a local pointer lives: its allocation's 64-byte IPC handle and its offset in it. */
    interface Exporter {
        /** Returns the handle bytes of the allocation holding {@code pointer}; puts the offset in {@code offsetOut[0]}. */
        byte[] export(long pointer, long[] offsetOut);
    }

    /** Opens a peer's handle; returns the mapping (its base address and how to close it). */
    interface Opener {
        Mapping open(byte[] handle);
    }

    /** An opened peer allocation. */
    interface Mapping extends AutoCloseable {
        long base();

        /** Bytes of the peer's allocation that the mapping covers. */
        long size();

        @Override
        void close();
    }

    private final Rendezvous rendezvous;
    private final Duration timeout;
    private final int rank;
    private final Exporter exporter;
    private final Opener opener;
    private final Map<Key, Mapping> mappings = new HashMap<>();
    private final List<Mapping> openOrder = new ArrayList<>();
    private final java.util.Set<ByteBuffer> ownHandles = new java.util.HashSet<>();
    private int sequence;
    private boolean closed;

    private record Key(int rank, java.nio.ByteBuffer handle) {
    }

    IpcPeerMemory(Rendezvous rendezvous, Duration timeout) {
        this(rendezvous, timeout, IpcPeerMemory::exportWithCuda, IpcPeerMemory::openWithCuda);
    }

    /** With the CUDA calls replaced, for protocol tests on machines without a GPU. */
    IpcPeerMemory(Rendezvous rendezvous, Duration timeout, Exporter exporter, Opener opener) {
        this.rendezvous = rendezvous;
        this.timeout = timeout;
        this.rank = rendezvous.rank();
        this.exporter = exporter;
        this.opener = opener;
    }

    private static byte[] exportWithCuda(long pointer, long[] offsetOut) {
        AllocationRange range = AllocationRange.of(pointer);
        offsetOut[0] = range.offsetOf(pointer);
        return IpcMemHandle.ofAllocation(range.base()).toBytes();
    }

    private static Mapping openWithCuda(byte[] handle) {
        IpcMapping mapping = IpcMemHandle.fromBytes(handle).open();
        long size = mappedSize(mapping.baseAddress());
        return new Mapping() {
            @Override
            public long base() {
                return mapping.baseAddress();
            }

            @Override
            public long size() {
                return size;
            }

            @Override
            public void close() {
                mapping.close();
            }
        };
    }

    /**
     * The size of an opened peer allocation. Should the driver not answer for IPC-mapped memory,
     * the bounds check cannot be made: that is said once (WARNING) instead of failing every
     * exchange; negative offsets are still refused.
     */
    private static long mappedSize(long base) {
        try {
            return AllocationRange.of(base).byteSize();
        } catch (RuntimeException e) {
            if (SIZE_WARNED.compareAndSet(false, true)) {
                System.getLogger(IpcPeerMemory.class.getName()).log(System.Logger.Level.WARNING,
                        "cannot read the size of an IPC-mapped peer allocation (" + e.getMessage() + "); peer "
                        + "records are checked for negative offsets only");
            }
            return Long.MAX_VALUE;
        }
    }

    private static final java.util.concurrent.atomic.AtomicBoolean SIZE_WARNED =
            new java.util.concurrent.atomic.AtomicBoolean();

    @Override
    public long[][] exchange(long[] pointers, long[] bytes) {
        if (closed) {
            throw new IllegalStateException("the IPC exchange was closed");
        }
        int n = pointers.length;
        ByteBuffer mine = ByteBuffer.allocate(1 + 4 + n * PER_BUFFER).put(WIRE_VERSION).putInt(n);
        long[] offset = new long[1];
        for (int i = 0; i < n; i++) {
            byte[] handle = exporter.export(pointers[i], offset);
            if (handle.length != 64) {
                throw new IllegalStateException("an IPC handle has 64 bytes, got " + handle.length);
            }
            ownHandles.add(ByteBuffer.wrap(handle.clone()));
            mine.put(handle).putLong(offset[0]).putLong(bytes[i]);
        }
        byte[][] all = rendezvous.allGather("ar4j/ipc/" + (sequence++), mine.array(), timeout);
        long[][] result = new long[n][all.length];
        for (int r = 0; r < all.length; r++) {
            if (r == rank) {
                for (int i = 0; i < n; i++) {
                    result[i][r] = pointers[i];
                }
                continue;
            }
            ByteBuffer record = ByteBuffer.wrap(all[r]);
            try {
                byte version = record.get();
                int count = record.getInt();
                if (version != WIRE_VERSION || all[r].length != 1 + 4 + count * PER_BUFFER) {
                    throw new OutOfStepException("rank " + r + " sent a malformed IPC record (version " + version
                            + ", " + all[r].length + " bytes); run the same ar4j version on every rank");
                }
                SharedBufferChecks.sameCount(rank, n, r, count);
                for (int i = 0; i < n; i++) {
                    byte[] handleBytes = new byte[64];
                    record.get(handleBytes);
                    long peerOffset = record.getLong();
                    long peerBytes = record.getLong();
                    SharedBufferChecks.sameSize(i, rank, bytes[i], r, peerBytes);
                    if (ownHandles.contains(ByteBuffer.wrap(handleBytes))) {
                        throw new OutOfStepException("rank " + r + " sent an IPC handle of rank " + rank
                                + "'s own allocation (shared buffer " + i + "); a peer record must describe the "
                                + "peer's memory. Refused: the record is forged or the launcher started two ranks "
                                + "in one process (use Communicator.localGroup for that)");
                    }
                    if (peerOffset < 0) {
                        throw new OutOfStepException("rank " + r + " sent a negative offset " + peerOffset
                                + " for shared buffer " + i + "; refused (a forged or corrupt peer record)");
                    }
                    Key key = new Key(r, java.nio.ByteBuffer.wrap(handleBytes));
                    Mapping mapping = mappings.get(key);
                    if (mapping == null) {
                        mapping = opener.open(handleBytes);
                        mappings.put(key, mapping);
                        openOrder.add(mapping);
                    }
                    long allocation = mapping.size();
                    if (peerOffset > allocation || peerBytes > allocation - peerOffset) {
                        throw new OutOfStepException("rank " + r + " sent shared buffer " + i + " at offset "
                                + peerOffset + " with " + peerBytes + " bytes, outside its allocation of "
                                + allocation + " bytes; refused: the kernels would write where the record chose "
                                + "(a forged or corrupt peer record)");
                    }
                    result[i][r] = mapping.base() + peerOffset;
                }
            } catch (BufferUnderflowException e) {
                throw new OutOfStepException("rank " + r + " sent a truncated IPC record (" + all[r].length
                        + " bytes)", e);
            }
        }
        return result;
    }

    /** Peer allocations opened so far (each once per rank and handle). */
    int openMappings() {
        return openOrder.size();
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        RuntimeException failure = null;
        for (int i = openOrder.size() - 1; i >= 0; i--) {
            try {
                openOrder.get(i).close();
            } catch (RuntimeException e) {
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        mappings.clear();
        openOrder.clear();
        if (failure != null) {
            throw failure;
        }
    }
}
