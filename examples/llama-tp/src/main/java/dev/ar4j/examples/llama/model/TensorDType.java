package dev.ar4j.examples.llama.model;

import java.util.Arrays;
import java.util.stream.Collectors;

/**
 * The element types a safetensors header may name, with their sizes in bits, and {@link #UNKNOWN}
 * for a name this reader does not know (a dtype added to the format later): a file holding such a
 * tensor still opens (its bytes are not checked against its shape), and only a model that needs
 * the tensor is refused.
 */
public enum TensorDType {
    /** Boolean, one byte. */
    BOOL(8, false),
    /** 4-bit float (e2m1, MXFP4/NVFP4 element), two per byte. */
    F4(4, true),
    /** 6-bit float, 2 exponent bits (MXFP6). */
    F6_E2M3(6, true),
    /** 6-bit float, 3 exponent bits (MXFP6). */
    F6_E3M2(6, true),
    /** Unsigned 8-bit integer. */
    U8(8, false),
    /** Signed 8-bit integer. */
    I8(8, false),
    /** 8-bit float, 4 exponent bits. */
    F8_E4M3(8, false),
    /** 8-bit float, 5 exponent bits. */
    F8_E5M2(8, false),
    /** 8-bit exponent-only scale (the MX formats' block scale). */
    F8_E8M0(8, true),
    /** Signed 16-bit integer. */
    I16(16, false),
    /** Unsigned 16-bit integer. */
    U16(16, false),
    /** IEEE binary16. */
    F16(16, false),
    /** bfloat16. */
    BF16(16, false),
    /** Signed 32-bit integer. */
    I32(32, false),
    /** Unsigned 32-bit integer. */
    U32(32, false),
    /** IEEE binary32. */
    F32(32, false),
    /** Complex of two binary32. */
    C64(64, true),
    /** Signed 64-bit integer. */
    I64(64, false),
    /** Unsigned 64-bit integer. */
    U64(64, false),
    /** IEEE binary64. */
    F64(64, false),
    /** A name this reader does not know; its size is unknown. */
    UNKNOWN(0, true);

    private final int bits;
    private final boolean newer;

    TensorDType(int bits, boolean newer) {
        this.bits = bits;
        this.newer = newer;
    }

    /**
     * Bits of one element.
     *
     * @return 4 to 64, or 0 for {@link #UNKNOWN}
     */
    public int bits() {
        return bits;
    }

    /**
     * Bytes of one element, for the whole-byte types.
     *
     * @return 1, 2, 4 or 8
     * @throws IllegalStateException for a sub-byte type or {@link #UNKNOWN}
     */
    public int byteSize() {
        if (bits % 8 != 0 || bits == 0) {
            throw new IllegalStateException(this + " elements are not a whole number of bytes");
        }
        return bits / 8;
    }

    /**
     * Whether the type came to the format after the engine's reader was written (the MX
     * formats' F4, F6 and E8M0, complex) or is {@link #UNKNOWN}: an unused tensor of such a type is
     * ignored with a warning ({@code LlamaTensors.check}).
     *
     * @return {@code true} for F4, F6_E2M3, F6_E3M2, F8_E8M0, C64 and UNKNOWN
     */
    public boolean isNewer() {
        return newer;
    }

    /**
     * The dtype a header names.
     *
     * @param name the header's {@code dtype} string
     * @return the dtype, or {@code null} when the name is not one this reader knows
     */
    public static TensorDType byName(String name) {
        for (TensorDType t : values()) {
            if (t != UNKNOWN && t.name().equals(name)) {
                return t;
            }
        }
        return null;
    }

    /**
     * The names, for messages.
     *
     * @return the known names, comma-separated
     */
    public static String accepted() {
        return Arrays.stream(values()).filter(t -> t != UNKNOWN).map(Enum::name).collect(Collectors.joining(", "));
    }
}
