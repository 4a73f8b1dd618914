package dev.ar4j.internal.cuda;

import dev.ar4j.cuda.Cuda;
import dev.ar4j.cuda.CudaException;

import dev.ar4j.NativeLibraryException;
import dev.ar4j.bindings.cudadrv.cuda_h;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The CUDA allocation a device pointer lies in: its base address and size
 * ({@code cuMemGetAddressRange}). CUDA IPC handles name whole allocations, so exporting a pointer
 * into the middle of one means sending the base's handle and the pointer's offset.
 *
 * <p>Needs the CUDA driver library ({@code libcuda.so.1}), which is loaded on first use.
 *
 * @param base     the allocation's first address
 * @param byteSize the allocation's size in bytes
 */
public record AllocationRange(long base, long byteSize) {

    /**
     * Finds the allocation that contains {@code devicePointer}. Binds the current device's primary
     * context to the calling thread first (the driver call needs a current context).
     *
     * @param devicePointer an address anywhere inside a CUDA device allocation
     * @return the allocation's base and size
     * @throws CudaException for a pointer that is not in a CUDA allocation ({@code CUDA_ERROR_NOT_FOUND}
     *                       or {@code CUDA_ERROR_INVALID_VALUE})
     * @throws dev.ar4j.NativeLibraryException when the driver library cannot be loaded
     */
    public static AllocationRange of(long devicePointer) {
        CudaDriver.ensureInitialized();
        Cuda.setDevice(Cuda.currentDevice());
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment base = arena.allocate(ValueLayout.JAVA_LONG);
            MemorySegment size = arena.allocate(ValueLayout.JAVA_LONG);
            int result = cuda_h.cuMemGetAddressRange_v2(base, size, devicePointer);
            if (result != 0) {
                throw CudaErrors.driverException(result, "cuMemGetAddressRange(0x" + Long.toHexString(devicePointer) + ")");
            }
            return new AllocationRange(base.get(ValueLayout.JAVA_LONG, 0), size.get(ValueLayout.JAVA_LONG, 0));
        }
    }

    /**
     * Whether {@code address} lies in this allocation.
     *
     * @param address any address
     * @return {@code true} if {@code base <= address < base + byteSize} (unsigned)
     */
    public boolean contains(long address) {
        return Long.compareUnsigned(address, base) >= 0 && Long.compareUnsigned(address - base, byteSize) < 0;
    }

    /**
     * The offset of {@code address} from the base.
     *
     * @param address an address inside this allocation
     * @return {@code address - base}, 0 to {@code byteSize - 1}
     * @throws IllegalArgumentException if {@code address} is not in this allocation
     */
    public long offsetOf(long address) {
        if (!contains(address)) {
            throw new IllegalArgumentException("0x" + Long.toHexString(address) + " is not in " + this);
        }
        return address - base;
    }

    @Override
    public String toString() {
        return "AllocationRange[0x" + Long.toHexString(base) + ", " + byteSize + " bytes]";
    }
}
