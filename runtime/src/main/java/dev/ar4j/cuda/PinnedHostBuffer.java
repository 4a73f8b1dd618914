package dev.ar4j.cuda;

import dev.ar4j.internal.platform.Lifetime;

import dev.ar4j.bindings.cudart.cuda_runtime_api_h;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Page-locked host memory ({@code cudaMallocHost} / {@code cudaHostAlloc}): copies between it and
 * the device are truly asynchronous and run at full bus speed. {@link #segment()} is an ordinary
 * host segment; it becomes inaccessible when the buffer is closed, and the memory is freed exactly
 * once ({@code cudaFreeHost}).
 */
public final class PinnedHostBuffer implements AutoCloseable {
    private final long address;
    private final long byteSize;
    private final Arena arena;
    private final MemorySegment segment;
    private final Lifetime lifetime = new Lifetime(null);

    private PinnedHostBuffer(long address, long byteSize) {
        this.address = address;
        this.byteSize = byteSize;
        this.arena = Arena.ofShared();
        this.segment = MemorySegment.ofAddress(address).reinterpret(byteSize, arena, null);
    }

    /**
     * Allocates {@code byteSize} bytes of pinned host memory ({@code cudaMallocHost}).
     *
     * @param byteSize the size in bytes, positive
     * @return a new pinned buffer, owned by the caller
     * @throws IllegalArgumentException if {@code byteSize} is not positive
     * @throws CudaException if {@code cudaMallocHost} fails
     */
    public static PinnedHostBuffer allocate(long byteSize) {
        checkSize(byteSize);
        Cuda.ensureLoaded();
        try (Arena scratch = Arena.ofConfined()) {
            MemorySegment out = scratch.allocate(ValueLayout.ADDRESS);
            int status = cuda_runtime_api_h.cudaMallocHost(out, byteSize);
            if (status != 0) {
                throw CudaChecks.exception(status, "cudaMallocHost(" + byteSize + " bytes)");
            }
            return new PinnedHostBuffer(out.get(ValueLayout.ADDRESS, 0).address(), byteSize);
        }
    }

    /**
     * Allocates pinned host memory with {@code cudaHostAlloc} flags.
     *
     * @param portable      pinned for every CUDA context, not only the current one ({@code cudaHostAllocPortable})
     * @param mapped        mapped into the device address space ({@code cudaHostAllocMapped})
     * @param writeCombined write-combined: fast for the device to read, slow for the host to read
     * @param byteSize the size in bytes, positive
     * @return a new pinned buffer, owned by the caller
     * @throws IllegalArgumentException if {@code byteSize} is not positive
     * @throws CudaException if {@code cudaHostAlloc} fails
     */
    public static PinnedHostBuffer allocate(long byteSize, boolean portable, boolean mapped, boolean writeCombined) {
        checkSize(byteSize);
        Cuda.ensureLoaded();
        int flags = cuda_runtime_api_h.cudaHostAllocDefault();
        if (portable) {
            flags |= cuda_runtime_api_h.cudaHostAllocPortable();
        }
        if (mapped) {
            flags |= cuda_runtime_api_h.cudaHostAllocMapped();
        }
        if (writeCombined) {
            flags |= cuda_runtime_api_h.cudaHostAllocWriteCombined();
        }
        try (Arena scratch = Arena.ofConfined()) {
            MemorySegment out = scratch.allocate(ValueLayout.ADDRESS);
            int status = cuda_runtime_api_h.cudaHostAlloc(out, byteSize, flags);
            if (status != 0) {
                throw CudaChecks.exception(status, "cudaHostAlloc(" + byteSize + " bytes, flags " + flags + ")");
            }
            return new PinnedHostBuffer(out.get(ValueLayout.ADDRESS, 0).address(), byteSize);
        }
    }

    private static void checkSize(long byteSize) {
        if (byteSize <= 0) {
            throw new IllegalArgumentException("a pinned host allocation needs byteSize > 0, got " + byteSize);
        }
    }

    /**
     * The memory as a host segment of {@link #byteSize()} bytes; inaccessible after {@link #close()}.
     *
     * @return the segment, of the buffer's shared arena
     * @throws IllegalStateException if the buffer is closed
     */
    public MemorySegment segment() {
        ensureOpen();
        return segment;
    }

    /**
     * The host address.
     *
     * @return the first byte's host address
     * @throws IllegalStateException if the buffer is closed
     */
    public long address() {
        ensureOpen();
        return address;
    }

    /**
     * Size in bytes.
     *
     * @return the size in bytes, positive
     */
    public long byteSize() {
        return byteSize;
    }

    /**
     * False once closed.
     *
     * @return {@code true} until {@link #close()} was called
     */
    public boolean isOpen() {
        return lifetime.isAlive();
    }

    private void ensureOpen() {
        if (!lifetime.isAlive()) {
            throw new IllegalStateException(this + " is closed");
        }
    }

    /**
     * Frees the memory (once). Segments obtained from {@link #segment()} become inaccessible first;
     * work still queued on a stream that uses the memory must have finished.
     */
    @Override
    public void close() {
        if (lifetime.end()) {
            arena.close();
            CudaChecks.check(cuda_runtime_api_h.cudaFreeHost(MemorySegment.ofAddress(address)), "cudaFreeHost");
        }
    }

    @Override
    public String toString() {
        return "PinnedHostBuffer[0x" + Long.toHexString(address) + ", " + byteSize + " bytes]";
    }
}
