package dev.ar4j.internal.cuda;

import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.cuda.CudaException;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Objects;

/**
 * What another process needs to address a device buffer: the IPC handle of the allocation the
 * buffer lies in, the buffer's offset from that allocation's base, and its size. A value with a
 * fixed 80-byte form ({@link #toBytes()}: the 64 handle bytes, then offset and size as
 * little-endian 64-bit integers).
 *
 * @param handle   the handle of the whole allocation
 * @param offset   the buffer's offset from the allocation's base, >= 0
 * @param byteSize the buffer's size, >= 0
 */
public record IpcBufferExport(IpcMemHandle handle, long offset, long byteSize) {
    /** Size of {@link #toBytes()}. */
    public static final int BYTES = IpcMemHandle.BYTES + 2 * Long.BYTES;

    /**
     * Creates an export, checking its components.
     *
     * @param handle the handle of the whole allocation, not {@code null}
     * @param offset the buffer's offset from the allocation's base, >= 0
     * @param byteSize the buffer's size in bytes, >= 0
     * @throws NullPointerException if {@code handle} is {@code null}
     * @throws IllegalArgumentException if {@code offset} or {@code byteSize} is negative
     */
    public IpcBufferExport {
        Objects.requireNonNull(handle, "handle");
        if (offset < 0 || byteSize < 0) {
            throw new IllegalArgumentException("offset and byteSize must be >= 0, got " + offset + " and " + byteSize);
        }
    }

    /**
     * Exports a device buffer. For buffers ar4j allocated the allocation's base is known; for
     * borrowed ones it is looked up with the driver ({@link AllocationRange#of(long)}).
     *
     * @param buffer the open device buffer to export
     * @return the handle of its allocation, its offset and its size
     * @throws IllegalStateException if the buffer is closed
     * @throws CudaException if the allocation cannot be found or its handle cannot be made (for example
     *     memory not from {@code cudaMalloc})
     */
    public static IpcBufferExport of(DeviceBuffer buffer) {
        Objects.requireNonNull(buffer, "buffer");
        long address = buffer.address();
        long base = BufferAccess.allocationBase(buffer).orElseGet(() -> AllocationRange.of(address).base());
        return new IpcBufferExport(IpcMemHandle.ofAllocation(base), address - base, buffer.byteSize());
    }

    /**
     * The 80-byte form.
     *
     * @return a new 80-byte array
     */
    public byte[] toBytes() {
        ByteBuffer out = ByteBuffer.allocate(BYTES).order(ByteOrder.LITTLE_ENDIAN);
        out.put(handle.toBytes()).putLong(offset).putLong(byteSize);
        return out.array();
    }

    /**
     * Reads the 80-byte form.
     *
     * @param bytes the form written by {@link #toBytes()}
     * @return the export it describes
     * @throws IllegalArgumentException unless {@code bytes.length == 80}
     * @throws NullPointerException if {@code bytes} is {@code null}
     */
    public static IpcBufferExport fromBytes(byte[] bytes) {
        Objects.requireNonNull(bytes, "bytes");
        if (bytes.length != BYTES) {
            throw new IllegalArgumentException("an exported IPC buffer is exactly " + BYTES
                    + " bytes (64 handle bytes, offset, size); got " + bytes.length);
        }
        ByteBuffer in = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        byte[] handle = new byte[IpcMemHandle.BYTES];
        in.get(handle);
        return new IpcBufferExport(IpcMemHandle.fromBytes(handle), in.getLong(), in.getLong());
    }
}
