package dev.ar4j.nccl;


import dev.ar4j.bindings.nccl.nccl_h;
import dev.ar4j.cuda.Cuda;
import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.internal.platform.NativeLibraries;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.function.LongConsumer;

/** NCCL itself: its version and its memory allocator. Loads libnccl on first use ({@link NativeLibraries#nccl()}). */
public final class Nccl {
    private Nccl() {
    }

    static void ensureLoaded() {
        NativeLibraries.cudart();
        NativeLibraries.nccl();
    }

    /**
     * NCCL's version code ({@code ncclGetVersion}): {@code major * 10000 + minor * 100 + patch} since 2.9 (23007 for 2.30.7).
     *
     * @return the version code, e.g. 23007 for 2.30.7
     * @throws dev.ar4j.NativeLibraryException if libcudart or libnccl cannot be loaded
     * @throws NcclException if {@code ncclGetVersion} fails
     */
    public static int version() {
        ensureLoaded();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.JAVA_INT);
            NcclChecks.check(nccl_h.ncclGetVersion(out), "ncclGetVersion", MemorySegment.NULL);
            return out.get(ValueLayout.JAVA_INT, 0);
        }
    }

    /**
     * NCCL's version as "major.minor.patch", e.g. "2.30.7".
     *
     * @return the version, e.g. {@code "2.30.7"}
     * @throws dev.ar4j.NativeLibraryException if libcudart or libnccl cannot be loaded
     */
    public static String versionString() {
        return formatVersion(version());
    }

    /**
     * Formats an NCCL version code: 23007 as "2.30.7", the pre-2.9 form 2708 as "2.7.8".
     *
     * @param code a version code as {@link #version()} returns it, >= 0
     * @return {@code "major.minor.patch"}
     * @throws IllegalArgumentException if {@code code} is negative
     */
    public static String formatVersion(int code) {
        if (code < 0) {
            throw new IllegalArgumentException("an NCCL version code is >= 0, got " + code);
        }
        if (code >= 10000) {
            return (code / 10000) + "." + (code % 10000) / 100 + "." + code % 100;
        }
        return (code / 1000) + "." + (code % 1000) / 100 + "." + code % 100;
    }

    /**
     * Allocates device memory with {@code ncclMemAlloc} on the current device: memory NCCL can
     * register for its zero-copy and symmetric algorithms ({@link NcclCollectives#registerWindow}).
     * The buffer is owned and freed with {@code ncclMemFree} exactly once on close. NCCL may round
     * the allocation up; the buffer covers the bytes asked for.
     *
     * @param byteSize the size in bytes, positive
     * @return an owned buffer on the current device, freed with {@code ncclMemFree} on close
     * @throws IllegalArgumentException if {@code byteSize} is not positive
     * @throws NcclException if {@code ncclMemAlloc} fails
     */
    public static DeviceBuffer memAlloc(long byteSize) {
        if (byteSize <= 0) {
            throw new IllegalArgumentException("ncclMemAlloc needs byteSize > 0, got " + byteSize);
        }
        ensureLoaded();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            NcclChecks.check(nccl_h.ncclMemAlloc(out, byteSize), "ncclMemAlloc(" + byteSize + " bytes)", MemorySegment.NULL);
            long address = out.get(ValueLayout.ADDRESS, 0).address();
            LongConsumer free = a -> NcclChecks.check(nccl_h.ncclMemFree(MemorySegment.ofAddress(a)),
                    "ncclMemFree(0x" + Long.toHexString(a) + ")", MemorySegment.NULL);
            int device;
            try {
                device = Cuda.currentDevice();
            } catch (RuntimeException e) {
                free.accept(address);
                throw e;
            }
            return DeviceBuffer.adopt(address, byteSize, device, free);
        }
    }
}
