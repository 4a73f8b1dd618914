package dev.ar4j.internal.nccl;

import dev.ar4j.internal.platform.NativeLibraries;
import dev.ar4j.bindings.nccl.ncclUniqueId;
import dev.ar4j.bindings.nccl.nccl_h;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Objects;

/**
 * An NCCL unique id ({@code ncclUniqueId}): 128 bytes that one rank makes with {@link #generate()}
 * and every rank passes to {@link NcclCommInit}. A value; the bytes are copied in and out.
 * Generating one starts NCCL's bootstrap listener on the interface NCCL picks
 * ({@code NCCL_SOCKET_IFNAME} chooses it).
 */
public final class NcclUniqueId {
    /** Size in bytes ({@code NCCL_UNIQUE_ID_BYTES}). */
    public static final int BYTES = 128;

    private final byte[] bytes;

    private NcclUniqueId(byte[] bytes) {
        this.bytes = bytes;
    }

    /**
     * Makes a new id ({@code ncclGetUniqueId}).
     *
     * @return the new id, to send to every rank
     * @throws dev.ar4j.NativeLibraryException if libcudart or libnccl cannot be loaded
     * @throws NcclException if {@code ncclGetUniqueId} fails (for example no usable network interface)
     */
    public static NcclUniqueId generate() {
        NativeLibraries.cudart();
        NativeLibraries.nccl();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment id = ncclUniqueId.allocate(arena);
            NcclErrors.check(nccl_h.ncclGetUniqueId(id), "ncclGetUniqueId", MemorySegment.NULL);
            return new NcclUniqueId(id.toArray(ValueLayout.JAVA_BYTE));
        }
    }

    /**
     * An id from its 128 bytes.
     *
     * @param bytes the id's bytes, as {@link #toBytes()} gives them; copied
     * @return the id
     * @throws IllegalArgumentException unless {@code bytes.length == 128}
     * @throws NullPointerException if {@code bytes} is {@code null}
     */
    public static NcclUniqueId fromBytes(byte[] bytes) {
        Objects.requireNonNull(bytes, "bytes");
        if (bytes.length != BYTES) {
            throw new IllegalArgumentException("an NCCL unique id is exactly " + BYTES
                    + " bytes (NCCL_UNIQUE_ID_BYTES); got " + bytes.length);
        }
        return new NcclUniqueId(bytes.clone());
    }

    /**
     * A copy of the 128 bytes.
     *
     * @return a new 128-byte array
     */
    public byte[] toBytes() {
        return bytes.clone();
    }

    /** Copies the id into a fresh {@code ncclUniqueId} struct from {@code arena}. */
    MemorySegment toStruct(Arena arena) {
        MemorySegment id = ncclUniqueId.allocate(arena);
        MemorySegment.copy(bytes, 0, id, ValueLayout.JAVA_BYTE, 0, BYTES);
        return id;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof NcclUniqueId other && Arrays.equals(bytes, other.bytes);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(bytes);
    }

    @Override
    public String toString() {
        return "NcclUniqueId[" + HexFormat.of().formatHex(bytes, 0, 16) + "...]";
    }
}
