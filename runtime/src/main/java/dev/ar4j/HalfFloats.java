package dev.ar4j;

/**
 * Conversions between {@code float} and the 16-bit formats ar4j all-reduces: bfloat16 (1 sign,
 * 8 exponent, 7 mantissa bits; {@link DType#BFLOAT16}) and IEEE 754 binary16 (1, 5, 10;
 * {@link DType#FLOAT16}). A 16-bit value is carried as its bits in a {@code short}.
 *
 * <p>To 16 bits rounds to nearest, ties to even, as CUDA's {@code __float2bfloat16} and
 * {@code __float2half} do; a value beyond the largest finite one becomes infinity; infinities and
 * signed zeros are kept; a NaN stays a NaN of the same sign (a quiet one). From 16 bits is exact.
 * {@link HostData} applies these to whole arrays.
 */
public final class HalfFloats {

    private HalfFloats() {
    }

    /**
     * The bfloat16 nearest to {@code value} (ties to even).
     *
     * @param value any float
     * @return the bfloat16's bits
     */
    public static short toBFloat16(float value) {
        int bits = Float.floatToRawIntBits(value);
        if (Float.isNaN(value)) {
            return (short) ((bits >>> 16) | 0x0040); // quiet, same sign; never the infinity pattern
        }
        int lsb = (bits >>> 16) & 1;
        return (short) ((bits + 0x7FFF + lsb) >>> 16);
    }

    /**
     * The float a bfloat16 stands for (exact).
     *
     * @param bits the bfloat16's bits
     * @return its value
     */
    public static float fromBFloat16(short bits) {
        return Float.intBitsToFloat((bits & 0xFFFF) << 16);
    }

    /**
     * The binary16 nearest to {@code value} (ties to even).
     *
     * @param value any float
     * @return the binary16's bits
     */
    public static short toFloat16(float value) {
        return Float.floatToFloat16(value);
    }

    /**
     * The float a binary16 stands for (exact).
     *
     * @param bits the binary16's bits
     * @return its value
     */
    public static float fromFloat16(short bits) {
        return Float.float16ToFloat(bits);
    }
}
