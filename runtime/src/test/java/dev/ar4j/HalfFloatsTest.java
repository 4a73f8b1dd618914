package dev.ar4j;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Exhaustive over the 16-bit formats: every bit pattern round-trips, and at every rounding
 * boundary (the exact midpoint between two neighbours, and the floats right below and above it)
 * the conversion from float picks the nearest value, ties to even.
 */
class HalfFloatsTest {

    @Test
    void everyBFloat16RoundTripsExactly() {
        for (int h = 0; h <= 0xFFFF; h++) {
            float value = HalfFloats.fromBFloat16((short) h);
            assertEquals(Float.intBitsToFloat(h << 16), value, 0f, "bf16 " + hex(h) + " is the float with those top bits");
            short back = HalfFloats.toBFloat16(value);
            if (Float.isNaN(value)) {
                checkNaN(HalfFloats.fromBFloat16(back), value, "bf16 NaN " + hex(h));
            } else if ((back & 0xFFFF) != h) {
                fail("bf16 " + hex(h) + " -> " + value + " -> " + hex(back));
            }
        }
    }

    @Test
    void floatToBFloat16RoundsToNearestEvenAtEveryBoundary() {
        int checked = 0;
        for (int sign = 0; sign <= 1; sign++) {
            for (int magnitude = 0; magnitude < 0x7F80; magnitude++) { // every finite bf16 and its upper neighbour
                int h = (sign << 15) | magnitude;
                int next = h + 1; // the neighbour away from zero (0x7F80 is infinity)
                int even = (h & 1) == 0 ? h : next;
                expectBFloat16(h << 16, h);                       // exact
                expectBFloat16((h << 16) | 0x7FFF, h);            // just below the midpoint
                expectBFloat16((h << 16) | 0x8000, even);         // the midpoint: ties to even
                expectBFloat16((h << 16) | 0x8001, next);         // just above
                expectBFloat16((h << 16) | 0x0001, h);            // the smallest step above h
                checked += 5;
            }
        }
        assertEquals(2 * 0x7F80 * 5, checked);
    }

    @Test
    void bFloat16KeepsInfinitiesZerosAndNaNs() {
        assertEquals((short) 0x7F80, HalfFloats.toBFloat16(Float.POSITIVE_INFINITY));
        assertEquals((short) 0xFF80, HalfFloats.toBFloat16(Float.NEGATIVE_INFINITY));
        assertEquals((short) 0x0000, HalfFloats.toBFloat16(0f));
        assertEquals((short) 0x8000, HalfFloats.toBFloat16(-0f));
        assertEquals((short) 0x7F80, HalfFloats.toBFloat16(Float.MAX_VALUE), "beyond the largest bf16: infinity");
        assertEquals((short) 0x3F80, HalfFloats.toBFloat16(1f));
        // Every NaN float whose payload is only in the low 16 bits would truncate to infinity.
        for (int sign = 0; sign <= 1; sign++) {
            for (int mantissa = 1; mantissa < (1 << 23); mantissa += (mantissa < 0x10000 ? 1 : 0x1001)) {
                int bits = (sign << 31) | 0x7F800000 | mantissa;
                float nan = Float.intBitsToFloat(bits);
                checkNaN(HalfFloats.fromBFloat16(HalfFloats.toBFloat16(nan)), nan, "float NaN " + hex(bits));
            }
        }
    }

    @Test
    void everyFloat16RoundTripsExactly() {
        for (int h = 0; h <= 0xFFFF; h++) {
            float value = HalfFloats.fromFloat16((short) h);
            short back = HalfFloats.toFloat16(value);
            if (Float.isNaN(value)) {
                checkNaN(HalfFloats.fromFloat16(back), value, "fp16 NaN " + hex(h));
            } else if ((back & 0xFFFF) != h) {
                fail("fp16 " + hex(h) + " -> " + value + " -> " + hex(back));
            }
        }
    }

    @Test
    void floatToFloat16RoundsToNearestEvenAtEveryBoundary() {
        for (int sign = 0; sign <= 1; sign++) {
            for (int magnitude = 0; magnitude < 0x7C00; magnitude++) { // every finite fp16 and its upper neighbour
                int h = (sign << 15) | magnitude;
                int next = h + 1;
                float a = HalfFloats.fromFloat16((short) h);
                float b = magnitude + 1 == 0x7C00 ? Math.copySign(65536f, a) : HalfFloats.fromFloat16((short) next);
                float mid = (a + b) / 2; // exact: 12 significant bits at most
                assertEquals((double) a + ((double) b - a) / 2, mid, 0d, "midpoint of " + hex(h));
                int even = (h & 1) == 0 ? h : next;
                expectFloat16(mid, even);
                expectFloat16(Math.nextDown(Math.abs(mid)) * (sign == 0 ? 1 : -1), h);
                expectFloat16(Math.nextUp(Math.abs(mid)) * (sign == 0 ? 1 : -1), next);
            }
        }
        assertEquals((short) 0x7C00, HalfFloats.toFloat16(65520f), "the midpoint above 65504 rounds to infinity");
        assertEquals((short) 0x7BFF, HalfFloats.toFloat16(65519.996f));
        assertEquals((short) 0xFC00, HalfFloats.toFloat16(Float.NEGATIVE_INFINITY));
        assertEquals((short) 0x8000, HalfFloats.toFloat16(-0f));
        checkNaN(HalfFloats.fromFloat16(HalfFloats.toFloat16(Float.NaN)), Float.NaN, "NaN");
        checkNaN(HalfFloats.fromFloat16(HalfFloats.toFloat16(Float.intBitsToFloat(0xFF800001))),
                Float.intBitsToFloat(0xFF800001), "negative NaN with a low payload");
    }

    private static void expectBFloat16(int floatBits, int expected) {
        short got = HalfFloats.toBFloat16(Float.intBitsToFloat(floatBits));
        if ((got & 0xFFFF) != expected) {
            fail("float " + hex(floatBits) + " -> bf16 " + hex(got) + ", expected " + hex(expected));
        }
    }

    private static void expectFloat16(float value, int expected) {
        short got = HalfFloats.toFloat16(value);
        if ((got & 0xFFFF) != expected) {
            fail("float " + value + " (" + hex(Float.floatToRawIntBits(value)) + ") -> fp16 " + hex(got)
                    + ", expected " + hex(expected));
        }
    }

    private static void checkNaN(float converted, float original, String what) {
        assertTrue(Float.isNaN(converted), what + " became " + converted);
        assertEquals(Float.floatToRawIntBits(original) < 0, Float.floatToRawIntBits(converted) < 0,
                what + ": the sign is kept");
    }

    private static String hex(int bits) {
        return "0x" + Integer.toHexString(bits);
    }

    private static String hex(short bits) {
        return hex(bits & 0xFFFF);
    }
}
