package dev.ar4j.examples.llama.model;


import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * Conversion of float16 and float32 checkpoint elements to the bfloat16 the engine runs, rounding
 * to nearest, ties to even, as PyTorch's {@code tensor.to(torch.bfloat16)} does (what transformers
 * does to a float16 or float32 checkpoint loaded with {@code dtype=torch.bfloat16}): a float16
 * value is widened to float32 exactly (subnormals included) and rounded once. Overflow gives
 * infinity, subnormals round like normal numbers, infinities and zeros keep their sign. A NaN
 * stays a NaN of the same sign with its top payload bits, made quiet (PyTorch writes 0x7FC0 in
 * its scalar path and 0xFFFF in its vector path: any NaN weight makes the model's output NaN
 * either way). Safetensors data is little-endian.
 */
public final class BFloat16 {

    private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfFloat FLOAT = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private BFloat16() {
    }

    /**
     * Whether the engine reads weights of a dtype: bfloat16 as it is, float16 and float32 converted.
     *
     * @param dtype a checkpoint dtype
     * @return {@code true} for BF16, F16 and F32
     */
    public static boolean readable(TensorDType dtype) {
        return dtype == TensorDType.BF16 || dtype == TensorDType.F16 || dtype == TensorDType.F32;
    }

    /**
     * A float32 rounded to bfloat16.
     *
     * @param f the value
     * @return the bfloat16 bits
     */
    public static short fromFloat(float f) {
        int bits = Float.floatToRawIntBits(f);
        if ((bits & 0x7fffffff) > 0x7f800000) {
            return (short) ((bits >>> 16) | 0x0040);
        }
        // Adding 0x7fff plus the kept part's lowest bit carries into the kept part exactly when the
        // dropped half is above one half, or equal to it with an odd kept part (ties to even).
        return (short) ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16);
    }

    /**
     * A float16 rounded to bfloat16.
     *
     * @param half the float16 bits
     * @return the bfloat16 bits
     */
    public static short fromHalf(short half) {
        return fromFloat(Float.float16ToFloat(half));
    }

    /**
     * Converts {@code count} little-endian elements to little-endian bfloat16.
     *
     * @param from      the source dtype: BF16 (copied), F16 or F32
     * @param src       the source bytes
     * @param srcOffset the first source byte
     * @param dst       the destination
     * @param dstOffset the first destination byte
     * @param count     elements
     * @throws IllegalArgumentException for another dtype
     */
    public static void convert(TensorDType from, MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset,
                               long count) {
        switch (from) {
            case BF16 -> MemorySegment.copy(src, srcOffset, dst, dstOffset, 2 * count);
            case F16 -> {
                for (long i = 0; i < count; i++) {
                    dst.set(SHORT, dstOffset + 2 * i, fromHalf(src.get(SHORT, srcOffset + 2 * i)));
                }
            }
            case F32 -> {
                for (long i = 0; i < count; i++) {
                    dst.set(SHORT, dstOffset + 2 * i, fromFloat(src.get(FLOAT, srcOffset + 4 * i)));
                }
            }
            default -> throw new IllegalArgumentException("no conversion from " + from + " to BF16");
        }
    }
}
