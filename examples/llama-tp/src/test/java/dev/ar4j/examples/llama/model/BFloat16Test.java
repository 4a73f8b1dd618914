package dev.ar4j.examples.llama.model;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The float16/float32 to bfloat16 conversion, bit for bit, against a reference written another way: the exact
 * value (a double, which holds every float16 and float32 exactly) rounded to the nearest of the bfloat16 values
 * around it, found by binary search over the ordered positive bfloat16 patterns, ties to the even pattern, and
 * values at or past half an ulp above the largest finite one to infinity. (Run once on the build machine
 * against PyTorch 1.13.1's CPU {@code .to(torch.bfloat16)}: equal on all 63490 non-NaN float16 patterns and on
 * the 996163 non-NaN float32 patterns of this class's kind of sample; torch writes every NaN as 0xFFFF there.)
 */
class BFloat16Test {

    private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfFloat FLOAT = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** The value of a positive bfloat16 pattern (0 .. 0x7F80), 0x7F80 standing for 2^128 (where rounding goes to infinity). */
    private static double bf16Value(int pattern) {
        if (pattern == 0x7F80) {
            return 0x1p128;
        }
        return Float.intBitsToFloat(pattern << 16);
    }

    /** Round-to-nearest-even of a finite or infinite double onto bfloat16, by search (NaN excluded). */
    static int reference(double x) {
        int sign = (Double.doubleToRawLongBits(x) < 0) ? 0x8000 : 0;
        double a = Math.abs(x);
        if (Double.isInfinite(a)) {
            return sign | 0x7F80;
        }
        int lo = 0;
        int hi = 0x7F80;
        if (a >= bf16Value(hi)) {
            return sign | 0x7F80;
        }
        // Invariant: bf16Value(lo) <= a < bf16Value(hi).
        while (hi - lo > 1) {
            int mid = (lo + hi) >>> 1;
            if (bf16Value(mid) <= a) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        double below = a - bf16Value(lo);
        double above = bf16Value(hi) - a;
        int pick = below < above ? lo : above < below ? hi : (lo % 2 == 0 ? lo : hi);
        return sign | pick;
    }

    /** A float16's exact value from its bits (not through Float.float16ToFloat). */
    static double halfValue(int h) {
        int sign = (h & 0x8000) != 0 ? -1 : 1;
        int exp = (h >> 10) & 0x1f;
        int man = h & 0x3ff;
        if (exp == 0x1f) {
            return man == 0 ? sign * Double.POSITIVE_INFINITY : Double.NaN;
        }
        double v = exp == 0 ? man * 0x1p-24 : (1024 + man) * Math.scalb(1.0, exp - 25);
        return sign == 1 ? v : -v;
    }

    private static String hex(int v) {
        return String.format("0x%04X", v & 0xffff);
    }

    @Test
    void everyFloat16MatchesTheReference() {
        int nans = 0;
        for (int h = 0; h < 0x10000; h++) {
            short got = BFloat16.fromHalf((short) h);
            double v = halfValue(h);
            if (Double.isNaN(v)) {
                assertTrue(Float.isNaN(Float.intBitsToFloat(got << 16)), "half " + hex(h) + " stays NaN: " + hex(got));
                assertEquals(h & 0x8000, got & 0x8000, "half NaN " + hex(h) + " keeps its sign");
                nans++;
                continue;
            }
            if (v == 0) {
                assertEquals((h & 0x8000) != 0 ? 0x8000 : 0, got & 0xffff, "signed zero " + hex(h));
                continue;
            }
            assertEquals(hex(reference(v)), hex(got), "half " + hex(h) + " = " + v);
        }
        assertEquals(2 * 1023, nans);
    }

    @Test
    void float16SubnormalsInfinitiesAndTies() {
        // 2^-24, the smallest float16 subnormal: exact in bfloat16 (normal there).
        assertEquals(hex(0x3380), hex(BFloat16.fromHalf((short) 0x0001)));
        // 0x03FF = 1023 * 2^-24: 10 significant bits, rounds to 1024 * 2^-24 = 2^-14 (0x3880).
        assertEquals(hex(0x3880), hex(BFloat16.fromHalf((short) 0x03FF)));
        // 1 + 2^-8 (0x3C04): a tie between 1 and 1 + 2^-7, to the even 1.0.
        assertEquals(hex(0x3F80), hex(BFloat16.fromHalf((short) 0x3C04)));
        // 1 + 3 * 2^-8 (0x3C0C): a tie between 1 + 2^-7 (odd) and 1 + 2^-6, to the even 1 + 2^-6.
        assertEquals(hex(0x3F82), hex(BFloat16.fromHalf((short) 0x3C0C)));
        // 65504, the largest float16: 0xFFE0 * 1 -> 65536 (0x4780) after rounding the 11 bits to 8.
        assertEquals(hex(0x4780), hex(BFloat16.fromHalf((short) 0x7BFF)));
        assertEquals(hex(0x7F80), hex(BFloat16.fromHalf((short) 0x7C00)));
        assertEquals(hex(0xFF80), hex(BFloat16.fromHalf((short) 0xFC00)));
        assertEquals(hex(0x8000), hex(BFloat16.fromHalf((short) 0x8000)));
    }

    @Test
    void float32SpecialValuesAndTies() {
        int[][] cases = {
            {0x3F800000, 0x3F80},  // 1
            {0x3F808000, 0x3F80},  // 1 + 2^-8: tie, to even (down)
            {0x3F818000, 0x3F82},  // 1 + 3 * 2^-8: tie, to even (up)
            {0x3F808001, 0x3F81},  // just above the tie: up
            {0x3F807FFF, 0x3F80},  // just below the tie: down
            {0x00000001, 0x0000},  // the smallest subnormal: to zero
            {0x00008000, 0x0000},  // a subnormal tie, to the even zero
            {0x00018000, 0x0002},  // a subnormal tie, to the even 2
            {0x00008001, 0x0001},  // above a subnormal tie
            {0x007FFFFF, 0x0080},  // the largest subnormal rounds up to the smallest normal
            {0x7F7FFFFF, 0x7F80},  // the largest float: past the bfloat16 maximum's half ulp, to infinity
            {0x7F7F7FFF, 0x7F7F},  // below that half ulp: the bfloat16 maximum
            {0x7F7F8000, 0x7F80},  // exactly the half ulp: a tie with an odd maximum, to infinity
            {0xFF7FFFFF, 0xFF80},  // and negative
            {0x7F800000, 0x7F80},  // infinity
            {0xFF800000, 0xFF80},
            {0x80000000, 0x8000},  // -0
            {0xBF808000, 0xBF80},  // -(1 + 2^-8): tie, to even
        };
        for (int[] c : cases) {
            assertEquals(hex(c[1]), hex(BFloat16.fromFloat(Float.intBitsToFloat(c[0]))),
                    String.format("float 0x%08X", c[0]));
            if (!Float.isInfinite(Float.intBitsToFloat(c[0]))) {
                assertEquals(hex(c[1]), hex(reference(Float.intBitsToFloat(c[0]))), "the reference agrees");
            }
        }
        for (int nan : new int[] {0x7FC00000, 0x7F800001, 0xFFC00000, 0x7FFFFFFF, 0xFF800001}) {
            short got = BFloat16.fromFloat(Float.intBitsToFloat(nan));
            assertTrue(Float.isNaN(Float.intBitsToFloat(got << 16)), String.format("0x%08X stays NaN: %s", nan, hex(got)));
            assertEquals((nan >>> 16) & 0x8000, got & 0x8000, "NaN keeps its sign");
            assertEquals(0x0040, got & 0x0040, "a quiet NaN");
        }
    }

    @Test
    void float32SampleMatchesTheReference() {
        SplittableRandom random = new SplittableRandom(29);
        for (int i = 0; i < 300_000; i++) {
            int bits = random.nextInt();
            // Half the draws land on or next to a tie: the low 16 bits 0x8000, 0x7FFF or 0x8001.
            if (i % 2 == 1) {
                bits = (bits & 0xFFFF0000) | (0x7FFF + random.nextInt(3));
            }
            float f = Float.intBitsToFloat(bits);
            if (Float.isNaN(f)) {
                continue;
            }
            assertEquals(hex(reference(f)), hex(BFloat16.fromFloat(f)), String.format("float 0x%08X = %s", bits, f));
        }
    }

    @Test
    void convertsLittleEndianBuffersAtAnyOffset() {
        float[] values = {1.0f, -2.5f, 3.0e-41f, 65504f, Float.NEGATIVE_INFINITY, 1.00390625f};
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment single = arena.allocate(1 + 4L * values.length);
            MemorySegment half = arena.allocate(1 + 2L * values.length);
            for (int i = 0; i < values.length; i++) {
                single.set(FLOAT, 1 + 4L * i, values[i]);
                half.set(SHORT, 1 + 2L * i, Float.floatToFloat16(values[i]));
            }
            MemorySegment out = arena.allocate(3 + 2L * values.length);
            BFloat16.convert(TensorDType.F32, single, 1, out, 3, values.length);
            for (int i = 0; i < values.length; i++) {
                assertEquals(hex(BFloat16.fromFloat(values[i])), hex(out.get(SHORT, 3 + 2L * i)), "float " + i);
            }
            BFloat16.convert(TensorDType.F16, half, 1, out, 3, values.length);
            for (int i = 0; i < values.length; i++) {
                assertEquals(hex(BFloat16.fromHalf(half.get(SHORT, 1 + 2L * i))), hex(out.get(SHORT, 3 + 2L * i)),
                        "half " + i);
            }
            BFloat16.convert(TensorDType.BF16, half, 1, out, 3, values.length);
            for (int i = 0; i < values.length; i++) {
                assertEquals(hex(half.get(SHORT, 1 + 2L * i)), hex(out.get(SHORT, 3 + 2L * i)), "copied " + i);
            }
            assertThrows(IllegalArgumentException.class, () -> BFloat16.convert(TensorDType.F64, single, 0, out, 0, 1));
        }
    }
}
