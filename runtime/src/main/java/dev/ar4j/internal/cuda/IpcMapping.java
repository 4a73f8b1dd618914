package dev.ar4j.internal.cuda;

import dev.ar4j.internal.platform.Lifetime;

import dev.ar4j.cuda.DeviceBuffer;

import dev.ar4j.bindings.cudart.cuda_runtime_api_h;

import java.lang.foreign.MemorySegment;

/**
 * Another process's device allocation mapped into this one ({@link IpcMemHandle#open()}). Owned:
 * {@link #close()} unmaps it exactly once ({@code cudaIpcCloseMemHandle}); views made by
 * {@link #view} become unusable then.
 */
public final class IpcMapping implements AutoCloseable {
    private final IpcMemHandle handle;
    private final long baseAddress;
    private final int device;
    private final Lifetime lifetime = new Lifetime(null);

    IpcMapping(IpcMemHandle handle, long baseAddress, int device) {
        this.handle = handle;
        this.baseAddress = baseAddress;
        this.device = device;
    }

    /**
     * The handle that was opened.
     *
     * @return the handle this mapping was opened from
     */
    public IpcMemHandle handle() {
        return handle;
    }

    /**
     * The mapped allocation's base address in this process.
     *
     * @return the base address, valid on {@link #device()} until {@link #close()}
     * @throws IllegalStateException if the mapping is closed
     */
    public long baseAddress() {
        ensureOpen();
        return baseAddress;
    }

    /**
     * The device the mapping was opened on (the device whose address space holds {@link #baseAddress()}).
     *
     * @return the device ordinal
     */
    public int device() {
        return device;
    }

    /**
     * False once closed.
     *
     * @return {@code true} until {@link #close()} was called
     */
    public boolean isOpen() {
        return lifetime.isAlive();
    }

    /**
     * A borrowed buffer over {@code byteSize} bytes at {@code offset} from the mapped base, as
     * addressable from this process. The handle does not carry the allocation's size: the exporter
     * sends it ({@link IpcBufferExport}). The view ends when this mapping is closed.
     *
     * @param offset the view's start in bytes from the mapped base, >= 0
     * @param byteSize the view's size in bytes, >= 0; offset plus size must not pass the exported
     *     allocation's end (not checked: the size is not known here)
     * @return a borrowed buffer that ends with this mapping
     * @throws IllegalStateException if the mapping is closed
     * @throws IndexOutOfBoundsException if {@code offset} is negative
     * @throws IllegalArgumentException if {@code byteSize} is negative
     */
    public DeviceBuffer view(long offset, long byteSize) {
        ensureOpen();
        if (offset < 0) {
            throw new IndexOutOfBoundsException("offset must be >= 0, got " + offset);
        }
        return BufferAccess.view(baseAddress + offset, byteSize, device, "IPC mapping", lifetime);
    }

    private void ensureOpen() {
        if (!lifetime.isAlive()) {
            throw new IllegalStateException(this + " is closed");
        }
    }

    /** Unmaps the allocation (once). */
    @Override
    public void close() {
        if (lifetime.end()) {
            CudaErrors.check(cuda_runtime_api_h.cudaIpcCloseMemHandle(MemorySegment.ofAddress(baseAddress)),
                    "cudaIpcCloseMemHandle(0x" + Long.toHexString(baseAddress) + ")");
        }
    }

    @Override
    public String toString() {
        return "IpcMapping[" + handle + " at 0x" + Long.toHexString(baseAddress) + ", device " + device + "]";
    }
}
