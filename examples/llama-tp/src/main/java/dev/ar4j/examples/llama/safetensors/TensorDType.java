package dev.ar4j.examples.llama.safetensors;

import java.util.Arrays;
import java.util.stream.Collectors;

/** The element types a safetensors header may name, with their sizes in bytes. */
public enum TensorDType {
    /** Boolean, one byte. */
    BOOL(1),
    /** Unsigned 8-bit integer. */
    U8(1),
    /** Signed 8-bit integer. */
    I8(1),
    /** 8-bit float, 4 exponent bits. */
    F8_E4M3(1),
    /** 8-bit float, 5 exponent bits. */
    F8_E5M2(1),
    /** Signed 16-bit integer. */
    I16(2),
    /** Unsigned 16-bit integer. */
    U16(2),
    /** IEEE binary16. */
    F16(2),
    /** bfloat16. */
    BF16(2),
    /** Signed 32-bit integer. */
    I32(4),
    /** Unsigned 32-bit integer. */
    U32(4),
    /** IEEE binary32. */
    F32(4),
    /** Signed 64-bit integer. */
    I64(8),
    /** Unsigned 64-bit integer. */
    U64(8),
    /** IEEE binary64. */
    F64(8);

    private final int byteSize;

    TensorDType(int byteSize) {
        this.byteSize = byteSize;
    }

    /**
     * Bytes of one element.
     *
     * @return 1, 2, 4 or 8
     */
    public int byteSize() {
        return byteSize;
    }

    /**
     * The dtype a header names.
     *
     * @param name the header's {@code dtype} string
     * @return the dtype, or {@code null} when the name is not one of the format's
     */
    public static TensorDType byName(String name) {
        for (TensorDType t : values()) {
            if (t.name().equals(name)) {
                return t;
            }
        }
        return null;
    }

    /**
     * The names, for messages.
     *
     * @return the accepted names, comma-separated
     */
    public static String accepted() {
        return Arrays.stream(values()).map(Enum::name).collect(Collectors.joining(", "));
    }
}
