package dev.ar4j.internal.cuda;

import dev.ar4j.internal.platform.NativeLibraries;

import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.cuda.Cuda;
import dev.ar4j.cuda.CudaException;

import dev.ar4j.bindings.cudart.cudaIpcMemHandle_t;
import dev.ar4j.bindings.cudart.cuda_runtime_api_h;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Objects;

/**
 * A CUDA IPC memory handle ({@code cudaIpcMemHandle_t}): 64 opaque bytes that name one device
 * allocation, which another process on the same host can {@link #open()}. A value: equal bytes
 * mean equal handles; the bytes are copied in and out, never shared.
 */
public final class IpcMemHandle {
    /** Size of a handle in bytes ({@code CUDA_IPC_HANDLE_SIZE}). */
    public static final int BYTES = 64;

    private final byte[] bytes;

    private IpcMemHandle(byte[] bytes) {
        this.bytes = bytes;
    }

    /**
     * A handle from its 64 bytes.
     *
     * @param bytes the handle's bytes, as {@link #toBytes()} gives them; copied
     * @return the handle
     * @throws IllegalArgumentException unless {@code bytes.length == 64}
     * @throws NullPointerException if {@code bytes} is {@code null}
     */
    public static IpcMemHandle fromBytes(byte[] bytes) {
        Objects.requireNonNull(bytes, "bytes");
        if (bytes.length != BYTES) {
            throw new IllegalArgumentException("a CUDA IPC memory handle is exactly " + BYTES
                    + " bytes (CUDA_IPC_HANDLE_SIZE); got " + bytes.length);
        }
        return new IpcMemHandle(bytes.clone());
    }

    /**
     * The handle of the allocation starting at {@code allocationBase} ({@code cudaIpcGetMemHandle}).
     * Pass the base of a {@code cudaMalloc} allocation; for a pointer into the middle of one use
     * {@link IpcBufferExport#of(DeviceBuffer)}, which finds the base and the offset.
     *
     * @param allocationBase the base device address of a {@code cudaMalloc} allocation of this process
     * @return the allocation's handle, to send to another process
     * @throws CudaException if {@code cudaIpcGetMemHandle} fails (not an allocation's base, or memory IPC
     *     cannot share)
     */
    public static IpcMemHandle ofAllocation(long allocationBase) {
        NativeLibraries.cudart();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment handle = cudaIpcMemHandle_t.allocate(arena);
            int status = cuda_runtime_api_h.cudaIpcGetMemHandle(handle, MemorySegment.ofAddress(allocationBase));
            if (status != 0) {
                throw CudaErrors.exception(status, "cudaIpcGetMemHandle(0x" + Long.toHexString(allocationBase) + ")");
            }
            return new IpcMemHandle(handle.toArray(ValueLayout.JAVA_BYTE));
        }
    }

    /**
     * A copy of the 64 bytes.
     *
     * @return a new 64-byte array
     */
    public byte[] toBytes() {
        return bytes.clone();
    }

    /**
     * Maps the allocation into this process on the current device
     * ({@code cudaIpcOpenMemHandle} with {@code cudaIpcMemLazyEnablePeerAccess}). The handle must
     * come from another process; the mapping is unmapped exactly once by {@link IpcMapping#close()}.
     *
     * @return the mapping, owned by the caller
     * @throws CudaException if {@code cudaIpcOpenMemHandle} fails (for example a handle of this same process,
     *     or an allocation already freed)
     */
    public IpcMapping open() {
        int device = Cuda.currentDevice();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment handle = cudaIpcMemHandle_t.allocate(arena);
            MemorySegment.copy(bytes, 0, handle, ValueLayout.JAVA_BYTE, 0, BYTES);
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            int status = cuda_runtime_api_h.cudaIpcOpenMemHandle(out, handle,
                    cuda_runtime_api_h.cudaIpcMemLazyEnablePeerAccess());
            if (status != 0) {
                throw CudaErrors.exception(status, "cudaIpcOpenMemHandle(" + this + ") on device " + device);
            }
            return new IpcMapping(this, out.get(ValueLayout.ADDRESS, 0).address(), device);
        }
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof IpcMemHandle other && Arrays.equals(bytes, other.bytes);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(bytes);
    }

    /** The first bytes in hex, enough to tell handles apart in logs. */
    @Override
    public String toString() {
        return "IpcMemHandle[" + HexFormat.of().formatHex(bytes, 0, 16) + "...]";
    }
}
