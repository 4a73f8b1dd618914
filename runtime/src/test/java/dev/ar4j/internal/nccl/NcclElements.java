package dev.ar4j.internal.nccl;

import dev.ar4j.nccl.NcclDataType;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Host-side encoding of every {@link NcclDataType}, for the GPU tests' inputs and expected
 * results. Values are exact in the type (the tests use small integers and halves), so encoding
 * never rounds; {@link #encode} refuses a value the type cannot hold exactly.
 */
final class NcclElements {
    private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED;
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED;
    private static final ValueLayout.OfFloat FLOAT = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ValueLayout.OfDouble DOUBLE = ValueLayout.JAVA_DOUBLE_UNALIGNED;

    private NcclElements() {
    }

    /** Writes {@code value} as element {@code index} of type {@code type}. */
    static void encode(NcclDataType type, MemorySegment host, long index, double value) {
        long at = index * type.byteSize();
        switch (type) {
            case INT8, UINT8 -> host.set(ValueLayout.JAVA_BYTE, at, (byte) exactLong(type, value));
            case INT32, UINT32 -> host.set(INT, at, (int) exactLong(type, value));
            case INT64, UINT64 -> host.set(LONG, at, exactLong(type, value));
            case FLOAT16 -> host.set(SHORT, at, Float.floatToFloat16(exactFloat(type, value)));
            case FLOAT32 -> host.set(FLOAT, at, exactFloat(type, value));
            case FLOAT64 -> host.set(DOUBLE, at, value);
            case BFLOAT16 -> host.set(SHORT, at, (short) (Float.floatToRawIntBits(exactFloat(type, value)) >>> 16));
            case FLOAT8_E4M3 -> host.set(ValueLayout.JAVA_BYTE, at, float8(value, 4, 3, type));
            case FLOAT8_E5M2 -> host.set(ValueLayout.JAVA_BYTE, at, float8(value, 5, 2, type));
        }
        if (decode(type, host, index) != value) {
            throw new IllegalArgumentException(value + " is not exact in " + type.ncclName() + " (reads back as "
                    + decode(type, host, index) + ")");
        }
    }

    /** Reads element {@code index} of type {@code type}. */
    static double decode(NcclDataType type, MemorySegment host, long index) {
        long at = index * type.byteSize();
        return switch (type) {
            case INT8 -> host.get(ValueLayout.JAVA_BYTE, at);
            case UINT8 -> host.get(ValueLayout.JAVA_BYTE, at) & 0xff;
            case INT32 -> host.get(INT, at);
            case UINT32 -> host.get(INT, at) & 0xffff_ffffL;
            case INT64 -> host.get(LONG, at);
            case UINT64 -> host.get(LONG, at); // the tests' values are far below 2^63
            case FLOAT16 -> Float.float16ToFloat(host.get(SHORT, at));
            case FLOAT32 -> host.get(FLOAT, at);
            case FLOAT64 -> host.get(DOUBLE, at);
            case BFLOAT16 -> Float.intBitsToFloat((host.get(SHORT, at) & 0xffff) << 16);
            case FLOAT8_E4M3 -> float8(host.get(ValueLayout.JAVA_BYTE, at), 4, 3);
            case FLOAT8_E5M2 -> float8(host.get(ValueLayout.JAVA_BYTE, at), 5, 2);
        };
    }

    private static long exactLong(NcclDataType type, double value) {
        long v = (long) value;
        if (v != value || (!type.isFloatingPoint() && type.name().startsWith("U") && v < 0)) {
            throw new IllegalArgumentException(value + " is not a value of " + type.ncclName());
        }
        return v;
    }

    private static float exactFloat(NcclDataType type, double value) {
        float f = (float) value;
        if (f != value) {
            throw new IllegalArgumentException(value + " is not exact in " + type.ncclName());
        }
        return f;
    }

    /** The bits of an exactly representable normal (or zero) fp8 value; 1 sign, {@code e} exponent, {@code m} mantissa bits. */
    static byte float8(double value, int e, int m, NcclDataType type) {
        if (value == 0) {
            return (byte) (Double.doubleToRawLongBits(value) < 0 ? 0x80 : 0);
        }
        int sign = value < 0 ? 0x80 : 0;
        double a = Math.abs(value);
        int exponent = Math.getExponent(a);
        int bias = (1 << (e - 1)) - 1;
        double mantissa = (a / Math.scalb(1.0, exponent) - 1) * (1 << m);
        int field = exponent + bias;
        if (mantissa != Math.rint(mantissa) || field <= 0 || field >= (1 << e)) {
            throw new IllegalArgumentException(value + " is not a normal value of " + type.ncclName());
        }
        return (byte) (sign | field << m | (int) mantissa);
    }

    /** The value of fp8 bits (normals, subnormals and zero; the tests never make Inf or NaN). */
    static double float8(byte bits, int e, int m) {
        int b = bits & 0xff;
        double sign = (b & 0x80) != 0 ? -1 : 1;
        int field = (b >>> m) & ((1 << e) - 1);
        int mantissa = b & ((1 << m) - 1);
        int bias = (1 << (e - 1)) - 1;
        if (field == 0) {
            return sign * Math.scalb((double) mantissa / (1 << m), 1 - bias);
        }
        return sign * Math.scalb(1 + (double) mantissa / (1 << m), field - bias);
    }
}
