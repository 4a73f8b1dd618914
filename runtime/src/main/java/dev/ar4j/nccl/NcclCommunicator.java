package dev.ar4j.nccl;

import dev.ar4j.DType;
import dev.ar4j.bindings.nccl.nccl_h;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One rank's NCCL communicator ({@code ncclComm_t}), bound to the device that was current when it
 * was made. Owned: {@link #close()} destroys it and {@link #abort()} aborts it; whichever comes first
 * runs, exactly once, and the other then does nothing. Use after that throws {@link IllegalStateException}.
 */
public final class NcclCommunicator implements AutoCloseable {
    /** {@code NCCL_WIN_DEFAULT}. */
    public static final int WINDOW_DEFAULT = nccl_h.NCCL_WIN_DEFAULT();
    /** {@code NCCL_WIN_COLL_SYMMETRIC}: every rank registers a buffer of the same size from {@code ncclMemAlloc}. */
    public static final int WINDOW_COLLECTIVE_SYMMETRIC = nccl_h.NCCL_WIN_COLL_SYMMETRIC();
    /** {@code NCCL_WIN_STRICT_ORDERING}. */
    public static final int WINDOW_STRICT_ORDERING = nccl_h.NCCL_WIN_STRICT_ORDERING();

    private final MemorySegment comm;
    private final int rank;
    private final int nranks;
    private final int device;
    private final AtomicBoolean ended = new AtomicBoolean();

    private NcclCommunicator(MemorySegment comm, int rank, int nranks, int device) {
        this.comm = comm;
        this.rank = rank;
        this.nranks = nranks;
        this.device = device;
    }

    /**
     * Joins the communicator named by {@code id} as {@code rank} of {@code nranks}, on the calling
     * thread's current device ({@code ncclCommInitRank}). Blocks until all ranks have joined.
     *
     * @throws IllegalArgumentException unless {@code nranks >= 1} and {@code 0 <= rank < nranks}
     */
    public static NcclCommunicator initRank(NcclUniqueId id, int nranks, int rank) {
        Objects.requireNonNull(id, "id");
        if (nranks < 1) {
            throw new IllegalArgumentException("nranks must be >= 1, got " + nranks);
        }
        if (rank < 0 || rank >= nranks) {
            throw new IllegalArgumentException("rank must be in [0, " + nranks + "), got " + rank);
        }
        Nccl.ensureLoaded();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            NcclErrors.check(nccl_h.ncclCommInitRank(out, nranks, id.toStruct(arena), rank),
                    "ncclCommInitRank(rank " + rank + " of " + nranks + ")", MemorySegment.NULL);
            MemorySegment comm = out.get(ValueLayout.ADDRESS, 0);
            MemorySegment device = arena.allocate(ValueLayout.JAVA_INT);
            int result = nccl_h.ncclCommCuDevice(comm, device);
            if (result != 0) {
                NcclException e = NcclErrors.exception(result, "ncclCommCuDevice", comm);
                int destroyed = nccl_h.ncclCommDestroy(comm);
                if (destroyed != 0) {
                    e.addSuppressed(NcclErrors.exception(destroyed, "ncclCommDestroy after a failed init", MemorySegment.NULL));
                }
                throw e;
            }
            return new NcclCommunicator(comm, rank, nranks, device.get(ValueLayout.JAVA_INT, 0));
        }
    }

    /** This rank. */
    public int rank() {
        return rank;
    }

    /** Number of ranks. */
    public int nranks() {
        return nranks;
    }

    /** The CUDA device the communicator uses. */
    public int device() {
        return device;
    }

    /** The {@code ncclComm_t} as a zero-length segment. */
    public MemorySegment handle() {
        ensureOpen();
        return comm;
    }

    /** False once closed or aborted. */
    public boolean isOpen() {
        return !ended.get();
    }

    /**
     * Enqueues an in-place or out-of-place sum all-reduce of {@code count} elements on {@code stream}.
     *
     * @throws IllegalArgumentException if a buffer is on another device or smaller than {@code count} elements
     */
    public void allReduceSum(DeviceBuffer send, DeviceBuffer receive, long count, DType dtype, CudaStream stream) {
        Objects.requireNonNull(send, "send");
        Objects.requireNonNull(receive, "receive");
        Objects.requireNonNull(dtype, "dtype");
        Objects.requireNonNull(stream, "stream");
        if (count < 0) {
            throw new IllegalArgumentException("count must be >= 0, got " + count);
        }
        long bytes = Math.multiplyExact(count, (long) dtype.byteSize());
        checkBuffer(send, bytes, "send");
        checkBuffer(receive, bytes, "receive");
        allReduceSum(send.address(), receive.address(), count, dtype, stream.handle());
    }

    private void checkBuffer(DeviceBuffer buffer, long bytes, String role) {
        if (buffer.device() != device) {
            throw new IllegalArgumentException("the " + role + " buffer is on device " + buffer.device()
                    + " but this communicator uses device " + device);
        }
        if (buffer.byteSize() < bytes) {
            throw new IllegalArgumentException("the " + role + " buffer has " + buffer.byteSize() + " bytes; the call needs "
                    + bytes);
        }
    }

    /**
     * Enqueues a sum all-reduce of {@code count} elements from {@code sendAddress} to
     * {@code receiveAddress} (device addresses; equal for in place) on the stream {@code streamHandle}
     * (a {@code cudaStream_t}; 0 is the legacy default stream). No checks beyond NCCL's own.
     */
    public void allReduceSum(long sendAddress, long receiveAddress, long count, DType dtype, long streamHandle) {
        ensureOpen();
        int result = nccl_h.ncclAllReduce(MemorySegment.ofAddress(sendAddress), MemorySegment.ofAddress(receiveAddress),
                count, Nccl.dataType(dtype), nccl_h.ncclSum(), comm, MemorySegment.ofAddress(streamHandle));
        if (result != 0) {
            throw NcclErrors.exception(result, "ncclAllReduce(" + count + " x " + dtype + ", sum)", comm);
        }
    }

    /**
     * Registers {@code buffer} as a window ({@code ncclCommWindowRegister}); a collective call that
     * every rank makes with its own buffer of the same size. With {@code NCCL_WIN_COLL_SYMMETRIC}
     * ({@link #WINDOW_COLLECTIVE_SYMMETRIC}) the buffers must come from {@link Nccl#memAlloc} and NCCL
     * may use its symmetric-memory kernels on them.
     *
     * @param flags {@link #WINDOW_DEFAULT}, {@link #WINDOW_COLLECTIVE_SYMMETRIC}, {@link #WINDOW_STRICT_ORDERING}, or'ed
     */
    public NcclWindow registerWindow(DeviceBuffer buffer, int flags) {
        ensureOpen();
        Objects.requireNonNull(buffer, "buffer");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            int result = nccl_h.ncclCommWindowRegister(comm, buffer.segment(), buffer.byteSize(), out, flags);
            if (result != 0) {
                throw NcclErrors.exception(result, "ncclCommWindowRegister(" + buffer + ", flags " + flags + ")", comm);
            }
            return new NcclWindow(this, out.get(ValueLayout.ADDRESS, 0), buffer);
        }
    }

    /**
     * An error NCCL met asynchronously (a peer died, a timeout) as an exception, or empty
     * ({@code ncclCommGetAsyncError}; {@code ncclInProgress} counts as no error).
     */
    public Optional<NcclException> asyncError() {
        ensureOpen();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.JAVA_INT);
            NcclErrors.check(nccl_h.ncclCommGetAsyncError(comm, out), "ncclCommGetAsyncError", comm);
            int async = out.get(ValueLayout.JAVA_INT, 0);
            if (async == nccl_h.ncclSuccess() || async == nccl_h.ncclInProgress()) {
                return Optional.empty();
            }
            return Optional.of(NcclErrors.exception(async, "asynchronous NCCL operation on rank " + rank, comm));
        }
    }

    /** NCCL's last error message for this communicator ({@code ncclGetLastError}); empty if none. */
    public String lastError() {
        ensureOpen();
        MemorySegment message = nccl_h.ncclGetLastError(comm);
        return message.address() == 0 ? "" : message.reinterpret(Long.MAX_VALUE).getString(0);
    }

    void ensureOpen() {
        if (ended.get()) {
            throw new IllegalStateException(this + " is closed or aborted");
        }
    }

    /**
     * Aborts the communicator ({@code ncclCommAbort}): stops its pending operations and frees it.
     * Use when a peer is gone. Does nothing if already closed or aborted.
     */
    public void abort() {
        if (ended.compareAndSet(false, true)) {
            NcclErrors.check(nccl_h.ncclCommAbort(comm), "ncclCommAbort(rank " + rank + ")", MemorySegment.NULL);
        }
    }

    /** Destroys the communicator ({@code ncclCommDestroy}) once; does nothing if already closed or aborted. */
    @Override
    public void close() {
        if (ended.compareAndSet(false, true)) {
            NcclErrors.check(nccl_h.ncclCommDestroy(comm), "ncclCommDestroy(rank " + rank + ")", MemorySegment.NULL);
        }
    }

    @Override
    public String toString() {
        return "NcclCommunicator[rank " + rank + " of " + nranks + ", device " + device + "]";
    }
}
