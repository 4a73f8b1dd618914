package dev.ar4j.cuda;

import dev.ar4j.bindings.cudart.cuda_runtime_api_h;
import dev.ar4j.internal.platform.Lifetime;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Objects;
import java.util.function.LongConsumer;

/**
 * A range of device memory: a device address, a size in bytes and the device it lives on. The
 * address is never dereferenced on the host; {@link #segment()} is a zero-length
 * {@link MemorySegment} to pass to native code (any CUDA library takes it as a pointer).
 *
 * <p>Two kinds:
 * <ul>
 *   <li><b>owned</b> ({@link #allocate}, {@link #adopt}): {@link #close()} frees the memory exactly
 *       once, however often and from however many threads it is called;</li>
 *   <li><b>borrowed</b> ({@link #borrow}, {@link #slice}, IPC views): wraps memory owned by someone
 *       else (another library, a parent buffer, an IPC mapping) and never frees it; closing it only
 *       ends this view.</li>
 * </ul>
 * Using a buffer after it, or the buffer or mapping it is a view of, was closed throws
 * {@link IllegalStateException}. Works with try-with-resources.
 *
 * <p>Copies and fills without a stream return when they are done: they run on the legacy default
 * stream ({@code cudaMemcpy}, {@code cudaMemset}) and then wait for it, since CUDA itself returns
 * early from device-to-device copies, memsets and copies from pageable memory. The {@code Async}
 * variants enqueue on a stream and return at once, so the host memory they read or write must be
 * native memory that stays alive until the stream reaches the copy.
 */
public final class DeviceBuffer implements AutoCloseable {

    private final long address;
    private final long byteSize;
    private final int device;
    private final LongConsumer release;         // null for borrowed buffers
    private final String origin;           // "cudaMalloc", "borrowed", "slice", "IPC mapping", ...
    private final Lifetime lifetime;
    private final long allocationBase;     // base of the allocation when known (owned roots and their slices)
    private final boolean allocationBaseKnown;

    private DeviceBuffer(long address, long byteSize, int device, LongConsumer release, String origin, Lifetime parent,
                         long allocationBase, boolean allocationBaseKnown) {
        this.address = address;
        this.byteSize = byteSize;
        this.device = device;
        this.release = release;
        this.origin = origin;
        this.lifetime = new Lifetime(parent);
        this.allocationBase = allocationBase;
        this.allocationBaseKnown = allocationBaseKnown;
    }

    /**
     * Allocates {@code byteSize} bytes on the calling thread's current device ({@code cudaMalloc}).
     * The memory is not initialised.
     *
     * @param byteSize the size in bytes, positive
     * @return a new owned buffer on the current device
     * @throws IllegalArgumentException if {@code byteSize} is not positive
     * @throws CudaException if {@code cudaMalloc} fails (for example {@code cudaErrorMemoryAllocation} when
     *     the device is out of memory)
     */
    public static DeviceBuffer allocate(long byteSize) {
        if (byteSize <= 0) {
            throw new IllegalArgumentException("a device allocation needs byteSize > 0, got " + byteSize);
        }
        int device = Cuda.currentDevice();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            int status = cuda_runtime_api_h.cudaMalloc(out, byteSize);
            if (status != 0) {
                throw CudaChecks.exception(status, "cudaMalloc(" + byteSize + " bytes on device " + device + ")");
            }
            long address = out.get(ValueLayout.ADDRESS, 0).address();
            return new DeviceBuffer(address, byteSize, device, DeviceBuffer::cudaFree, "cudaMalloc", null, address, true);
        }
    }

    private static void cudaFree(long address) {
        int status = cuda_runtime_api_h.cudaFree(MemorySegment.ofAddress(address));
        if (status != 0) {
            throw CudaChecks.exception(status, "cudaFree(0x" + Long.toHexString(address) + ")");
        }
    }

    /**
     * Wraps device memory owned by someone else (PyTorch, cuBLAS, NCCL, another ar4j object). The
     * buffer never frees it; the owner must keep it alive while the buffer is used.
     *
     * @param address  the device address, not 0
     * @param byteSize the size in bytes, >= 0
     * @param device   the device the memory lives on, >= 0
     * @return a borrowed buffer over the range
     * @throws IllegalArgumentException if {@code address} is 0, {@code byteSize} or {@code device} is
     *     negative, or the range wraps around the address space
     */
    public static DeviceBuffer borrow(long address, long byteSize, int device) {
        checkRange(address, byteSize, device);
        return new DeviceBuffer(address, byteSize, device, null, "borrowed", null, 0, false);
    }

    /**
     * {@link #borrow(long, long, int)} with the address given as a (zero-length) segment.
     *
     * @param address the device address as a segment (only its address is used), not the NULL segment
     * @param byteSize the size in bytes, >= 0
     * @param device the device the memory lives on, >= 0
     * @return a borrowed buffer over the range
     * @throws NullPointerException if {@code address} is {@code null}
     * @throws IllegalArgumentException as {@link #borrow(long, long, int)} does
     */
    public static DeviceBuffer borrow(MemorySegment address, long byteSize, int device) {
        return borrow(Objects.requireNonNull(address, "address").address(), byteSize, device);
    }

    /**
     * Takes ownership of an allocation made elsewhere (e.g. {@code ncclMemAlloc}): {@code release}
     * runs exactly once, on the first {@link #close()}. The address is taken to be the allocation's base.
     *
     * @param address the allocation's base device address, not 0
     * @param byteSize the allocation's size in bytes, >= 0
     * @param device the device the memory lives on, >= 0
     * @param release frees the allocation, called with {@code address}; its exception propagates out of
     *     {@link #close()}
     * @return an owned buffer over the allocation
     * @throws NullPointerException if {@code release} is {@code null}
     * @throws IllegalArgumentException if {@code address} is 0, {@code byteSize} or {@code device} is
     *     negative, or the range wraps around the address space
     */
    public static DeviceBuffer adopt(long address, long byteSize, int device, LongConsumer release) {
        checkRange(address, byteSize, device);
        Objects.requireNonNull(release, "release");
        return new DeviceBuffer(address, byteSize, device, release, "adopted", null, address, true);
    }

    /**
     * A borrowed view of [{@code base}, {@code base + byteSize}) that ends with {@code parent} (the
     * engine's IPC mappings reach it by a private lookup of this module).
     */
    static DeviceBuffer view(long address, long byteSize, int device, String origin, Lifetime parent) {
        checkRange(address, byteSize, device);
        return new DeviceBuffer(address, byteSize, device, null, origin, parent, 0, false);
    }

    private static void checkRange(long address, long byteSize, int device) {
        if (address == 0) {
            throw new IllegalArgumentException("a device buffer's address must not be 0 (NULL)");
        }
        if (byteSize < 0) {
            throw new IllegalArgumentException("byteSize must be >= 0, got " + byteSize);
        }
        if (device < 0) {
            throw new IllegalArgumentException("device ordinal must be >= 0, got " + device);
        }
        if (Long.compareUnsigned(address + byteSize, address) < 0) {
            throw new IllegalArgumentException("0x" + Long.toHexString(address) + " + " + byteSize
                    + " bytes wraps around the address space");
        }
    }

    /**
     * The device address.
     *
     * @return the first byte's device address
     * @throws IllegalStateException if the buffer is closed
     */
    public long address() {
        ensureOpen();
        return address;
    }

    /**
     * The device address as a zero-length segment, to pass to native functions. Never dereference it.
     *
     * @return a zero-length segment at the device address
     * @throws IllegalStateException if the buffer is closed
     */
    public MemorySegment segment() {
        ensureOpen();
        return MemorySegment.ofAddress(address);
    }

    /**
     * Size in bytes.
     *
     * @return the size in bytes, >= 0 (also after close)
     */
    public long byteSize() {
        return byteSize;
    }

    /**
     * The device ordinal the memory lives on.
     *
     * @return the device ordinal, >= 0
     */
    public int device() {
        return device;
    }

    /**
     * Whether closing this buffer frees its memory.
     *
     * @return {@code true} for buffers made by {@link #allocate} or {@link #adopt}, {@code false} for views
     */
    public boolean isOwned() {
        return release != null;
    }

    /**
     * False once this buffer, or the buffer or mapping it is a view of, was closed.
     *
     * @return {@code true} while the buffer can be used
     */
    public boolean isOpen() {
        return lifetime.isAlive();
    }

    /**
     * A borrowed view of {@code byteSize} bytes starting {@code offset} bytes into this buffer. The
     * view is never freed and becomes unusable when this buffer is closed.
     *
     * @param offset the view's start, in bytes from this buffer's start, 0 to {@link #byteSize()}
     * @param byteSize the view's size in bytes, 0 to {@code byteSize() - offset}
     * @return a borrowed view sharing this buffer's memory and lifetime
     * @throws IndexOutOfBoundsException if the range does not lie inside this buffer
     * @throws IllegalStateException if this buffer is closed
     */
    public DeviceBuffer slice(long offset, long byteSize) {
        ensureOpen();
        if (offset < 0 || byteSize < 0 || offset > this.byteSize || byteSize > this.byteSize - offset) {
            throw new IndexOutOfBoundsException("slice [" + offset + ", " + offset + " + " + byteSize
                    + ") is outside this buffer of " + this.byteSize + " bytes");
        }
        return new DeviceBuffer(address + offset, byteSize, device, null, "slice", lifetime,
                allocationBase, allocationBaseKnown);
    }

    /** Lifetime of this buffer, for views derived elsewhere in the package. */
    Lifetime lifetime() {
        return lifetime;
    }

    // ------------------------------------------------------------------ copies

    /**
     * Copies all of {@code host} to the start of this buffer and waits for the copy.
     *
     * @param host the source, of at most {@link #byteSize()} bytes; heap segments are staged through native
     *     memory
     * @throws IllegalArgumentException if {@code host} is larger than this buffer
     * @throws IllegalStateException if this buffer is closed
     * @throws CudaException if the copy fails
     */
    public void copyFrom(MemorySegment host) {
        ensureOpen();
        checkFits(host.byteSize(), "host source");
        if (host.byteSize() == 0) {
            return;
        }
        if (host.isNative()) {
            memcpy(MemorySegment.ofAddress(address), host, host.byteSize(),
                    cuda_runtime_api_h.cudaMemcpyHostToDevice(), "cudaMemcpy(host -> device)");
            return;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment staging = arena.allocate(host.byteSize(), 16);
            staging.copyFrom(host);
            memcpy(MemorySegment.ofAddress(address), staging, host.byteSize(),
                    cuda_runtime_api_h.cudaMemcpyHostToDevice(), "cudaMemcpy(host -> device)");
        }
    }

    /**
     * Copies the start of this buffer into all of {@code host} and waits for the copy.
     *
     * @param host the writable destination, of at most {@link #byteSize()} bytes; heap segments are staged
     *     through native memory
     * @throws IllegalArgumentException if {@code host} is read-only or larger than this buffer
     * @throws IllegalStateException if this buffer is closed
     * @throws CudaException if the copy fails
     */
    public void copyTo(MemorySegment host) {
        ensureOpen();
        checkFits(host.byteSize(), "host destination");
        if (host.isReadOnly()) {
            throw new IllegalArgumentException("the host destination segment is read-only");
        }
        if (host.byteSize() == 0) {
            return;
        }
        if (host.isNative()) {
            memcpy(host, MemorySegment.ofAddress(address), host.byteSize(),
                    cuda_runtime_api_h.cudaMemcpyDeviceToHost(), "cudaMemcpy(device -> host)");
            return;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment staging = arena.allocate(host.byteSize(), 16);
            memcpy(staging, MemorySegment.ofAddress(address), host.byteSize(),
                    cuda_runtime_api_h.cudaMemcpyDeviceToHost(), "cudaMemcpy(device -> host)");
            host.copyFrom(staging);
        }
    }

    /**
     * Copies all of {@code source} (device memory) to the start of this buffer and waits for the copy.
     *
     * @param source the open device buffer to copy, of at most {@link #byteSize()} bytes
     * @throws IllegalArgumentException if {@code source} is larger than this buffer
     * @throws IllegalStateException if this buffer or {@code source} is closed
     * @throws CudaException if the copy fails
     */
    public void copyFrom(DeviceBuffer source) {
        ensureOpen();
        checkFits(source.byteSize(), "device source");
        if (source.byteSize() == 0) {
            return;
        }
        memcpy(MemorySegment.ofAddress(address), source.segment(), source.byteSize(),
                cuda_runtime_api_h.cudaMemcpyDeviceToDevice(), "cudaMemcpy(device -> device)");
    }

    /**
     * Enqueues a copy of all of {@code host} to the start of this buffer on {@code stream}.
     * {@code host} must be native memory that stays alive until the stream has run the copy
     * (pinned memory, e.g. {@link PinnedHostBuffer}, makes it truly asynchronous).
     *
     * @param host the native source segment, of at most {@link #byteSize()} bytes
     * @param stream the stream to enqueue the copy on
     * @throws IllegalArgumentException if {@code host} is a heap segment or larger than this buffer
     * @throws IllegalStateException if this buffer or the stream is closed
     * @throws CudaException if {@code cudaMemcpyAsync} fails
     */
    public void copyFromAsync(MemorySegment host, CudaStream stream) {
        ensureOpen();
        checkAsyncHost(host);
        checkFits(host.byteSize(), "host source");
        memcpyAsync(MemorySegment.ofAddress(address), host, host.byteSize(),
                cuda_runtime_api_h.cudaMemcpyHostToDevice(), stream, "cudaMemcpyAsync(host -> device)");
    }

    /**
     * Enqueues a copy of the start of this buffer into all of {@code host} on {@code stream} (see {@link #copyFromAsync(MemorySegment, CudaStream)}).
     *
     * @param host the native, writable destination segment, of at most {@link #byteSize()} bytes
     * @param stream the stream to enqueue the copy on
     * @throws IllegalArgumentException if {@code host} is a heap segment, read-only, or larger than this
     *     buffer
     * @throws IllegalStateException if this buffer or the stream is closed
     * @throws CudaException if {@code cudaMemcpyAsync} fails
     */
    public void copyToAsync(MemorySegment host, CudaStream stream) {
        ensureOpen();
        checkAsyncHost(host);
        if (host.isReadOnly()) {
            throw new IllegalArgumentException("the host destination segment is read-only");
        }
        checkFits(host.byteSize(), "host destination");
        memcpyAsync(host, MemorySegment.ofAddress(address), host.byteSize(),
                cuda_runtime_api_h.cudaMemcpyDeviceToHost(), stream, "cudaMemcpyAsync(device -> host)");
    }

    /**
     * Enqueues a copy of all of {@code source} to the start of this buffer on {@code stream}.
     *
     * @param source the open device buffer to copy, of at most {@link #byteSize()} bytes
     * @param stream the stream to enqueue the copy on
     * @throws IllegalArgumentException if {@code source} is larger than this buffer
     * @throws IllegalStateException if this buffer, {@code source} or the stream is closed
     * @throws CudaException if {@code cudaMemcpyAsync} fails
     */
    public void copyFromAsync(DeviceBuffer source, CudaStream stream) {
        ensureOpen();
        checkFits(source.byteSize(), "device source");
        memcpyAsync(MemorySegment.ofAddress(address), source.segment(), source.byteSize(),
                cuda_runtime_api_h.cudaMemcpyDeviceToDevice(), stream, "cudaMemcpyAsync(device -> device)");
    }

    /**
     * Sets every byte of this buffer to {@code value & 0xff} and waits for it ({@code cudaMemset}).
     *
     * @param value the byte value; only its low 8 bits are used
     * @throws IllegalStateException if this buffer is closed
     * @throws CudaException if {@code cudaMemset} or the wait fails
     */
    public void fill(int value) {
        ensureOpen();
        int status = cuda_runtime_api_h.cudaMemset(MemorySegment.ofAddress(address), value, byteSize);
        if (status != 0) {
            throw CudaChecks.exception(status, "cudaMemset(" + this + ", " + value + ")");
        }
        awaitLegacyStream("cudaMemset");
    }

    /**
     * Enqueues setting every byte of this buffer to {@code value & 0xff} on {@code stream} ({@code cudaMemsetAsync}).
     *
     * @param value the byte value; only its low 8 bits are used
     * @param stream the stream to enqueue the fill on
     * @throws IllegalStateException if this buffer or the stream is closed
     * @throws CudaException if {@code cudaMemsetAsync} fails
     */
    public void fillAsync(int value, CudaStream stream) {
        ensureOpen();
        Objects.requireNonNull(stream, "stream");
        int status = cuda_runtime_api_h.cudaMemsetAsync(MemorySegment.ofAddress(address), value, byteSize, stream.segment());
        if (status != 0) {
            throw CudaChecks.exception(status, "cudaMemsetAsync(" + this + ", " + value + ")");
        }
    }

    private void checkFits(long bytes, String what) {
        if (bytes > byteSize) {
            throw new IllegalArgumentException("the " + what + " has " + bytes + " bytes, more than this buffer's "
                    + byteSize);
        }
    }

    private static void checkAsyncHost(MemorySegment host) {
        if (!host.isNative()) {
            throw new IllegalArgumentException("asynchronous copies need native (off-heap) host memory that stays"
                    + " alive until the stream reaches the copy; a heap segment can move. Use a PinnedHostBuffer,"
                    + " an Arena's segment, or the synchronous copy");
        }
    }

    private static void memcpy(MemorySegment dst, MemorySegment src, long bytes, int kind, String call) {
        int status = cuda_runtime_api_h.cudaMemcpy(dst, src, bytes, kind);
        if (status != 0) {
            throw CudaChecks.exception(status, call + " of " + bytes + " bytes");
        }
        if (kind != cuda_runtime_api_h.cudaMemcpyDeviceToHost()) {
            awaitLegacyStream(call);
        }
    }

    /** Waits for the legacy default stream, where cudaMemcpy and cudaMemset run. */
    private static void awaitLegacyStream(String afterCall) {
        int status = cuda_runtime_api_h.cudaStreamSynchronize(MemorySegment.NULL);
        if (status != 0) {
            throw CudaChecks.exception(status, "cudaStreamSynchronize(legacy default stream) after " + afterCall);
        }
    }

    private static void memcpyAsync(MemorySegment dst, MemorySegment src, long bytes, int kind, CudaStream stream,
                                    String call) {
        Objects.requireNonNull(stream, "stream");
        Cuda.memcpyAsync(dst, src, bytes, kind, stream.segment(), call);
    }

    void ensureOpen() {
        if (!lifetime.isAlive()) {
            throw new IllegalStateException(this + " is closed"
                    + (lifetime.endedItself() ? "" : " (the buffer or mapping it is a view of was closed)"));
        }
    }

    /**
     * Ends this buffer. An owned buffer frees its memory on the first call; a borrowed one never
     * frees anything. Further calls do nothing.
     *
     * @throws CudaException if freeing the memory failed (the buffer is closed regardless)
     */
    @Override
    public void close() {
        if (lifetime.end() && release != null) {
            release.accept(address);
        }
    }

    @Override
    public String toString() {
        String kind = isOwned() ? "owned (" + origin + ")" : origin.equals("borrowed") ? origin : "borrowed (" + origin + ")";
        return "DeviceBuffer[0x" + Long.toHexString(address) + ", " + byteSize + " bytes, device " + device + ", " + kind + "]";
    }
}
