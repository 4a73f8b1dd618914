package dev.ar4j;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * Element types that ar4j all-reduces. Half types are accumulated in fp32 by the custom
 * kernels; NCCL accumulates them in its own way.
 */
public enum DType {
    /** IEEE 754 binary32. */
    FLOAT32(4, 0),
    /** IEEE 754 binary16. */
    FLOAT16(2, 1),
    /** bfloat16 (8-bit exponent, 7-bit mantissa). */
    BFLOAT16(2, 2);

    private final int byteSize;
    private final int kernelCode;

    DType(int byteSize, int kernelCode) {
        this.byteSize = byteSize;
        this.kernelCode = kernelCode;
    }

    /**
     * Bytes of one element.
     *
     * @return 4 for {@code FLOAT32}, 2 for {@code FLOAT16} and {@code BFLOAT16}
     */
    public int byteSize() {
        return byteSize;
    }

    /**
     * The {@code ar4j_dtype} value of the C ABI.
     *
     * @return the C ABI's code of this type
     */
    public int kernelCode() {
        return kernelCode;
    }

    /**
     * Parses a dtype name as the command line and configuration write it:
     * {@code float32|fp32|float}, {@code float16|fp16|half}, {@code bfloat16|bf16}.
     *
     * @param text a name, case and surrounding blanks ignored
     * @return the dtype it names
     * @throws IllegalArgumentException naming the accepted values
     * @throws NullPointerException if {@code text} is {@code null}
     */
    public static DType parse(String text) {
        String t = text.trim().toLowerCase(Locale.ROOT);
        return switch (t) {
            case "float32", "fp32", "float" -> FLOAT32;
            case "float16", "fp16", "half" -> FLOAT16;
            case "bfloat16", "bf16" -> BFLOAT16;
            default -> throw new IllegalArgumentException("unknown dtype '" + text + "'; accepted: "
                    + Arrays.stream(values()).map(d -> d.name().toLowerCase(Locale.ROOT)).collect(Collectors.joining(", "))
                    + " (aliases fp32, float, fp16, half, bf16)");
        };
    }
}
