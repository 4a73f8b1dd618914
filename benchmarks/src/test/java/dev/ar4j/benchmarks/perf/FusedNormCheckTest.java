package dev.ar4j.benchmarks.perf;

import dev.ar4j.DType;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The host reference of verify-fused against a host model of the kernel (fp32 arithmetic, one
 * rounding to the dtype at the store, as {@code residual_rmsnorm.cu} does): the model passes in
 * every dtype; an output 2 % off (bf16) or a residual off by one is counted.
 */
class FusedNormCheckTest {
    private static final long SEED = 7;
    private static final int RANKS = 8;

    /** Round to nearest even, as __float2bfloat16_rn. */
    private static short bf16(float v) {
        int bits = Float.floatToRawIntBits(v);
        return (short) ((bits + 0x7FFF + ((bits >>> 16) & 1)) >>> 16);
    }

    private static void store(MemorySegment m, DType dtype, long i, float v) {
        switch (dtype) {
            case FLOAT32 -> m.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i, v);
            case FLOAT16 -> m.setAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i, Float.floatToFloat16(v));
            case BFLOAT16 -> m.setAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i, bf16(v));
        }
    }

    /** The kernel's rows in fp32: residualOut and out for {@code rows} rows. */
    private static void kernel(MemorySegment out, MemorySegment residualOut, DType dtype, long rows) {
        int h = FusedNormCheck.HIDDEN;
        for (long row = 0; row < rows; row++) {
            float squares = 0;
            float[] r = new float[h];
            for (int j = 0; j < h; j++) {
                r[j] = FusedNormCheck.residualOut(RANKS, SEED, row * h + j);
                squares += r[j] * r[j];
            }
            float inv = (float) (1.0 / Math.sqrt(squares / h + FusedNormCheck.EPS));
            for (int j = 0; j < h; j++) {
                store(residualOut, dtype, row * h + j, r[j]);
                store(out, dtype, row * h + j, r[j] * inv * FusedNormCheck.weight(SEED, j));
            }
        }
    }

    @Test
    void tolerancesAreStatedPerDtype() {
        assertEquals(1.6e-2, FusedNormCheck.tolerance(DType.BFLOAT16));
        assertTrue(FusedNormCheck.tolerance(DType.FLOAT16) < FusedNormCheck.tolerance(DType.BFLOAT16));
        assertTrue(FusedNormCheck.tolerance(DType.FLOAT32) < FusedNormCheck.tolerance(DType.FLOAT16));
        assertTrue(FusedNormCheck.within(1.01, 1.0, 1.6e-2));
        assertTrue(!FusedNormCheck.within(1.02, 1.0, 1.6e-2));
        assertTrue(FusedNormCheck.within(0.0, 0.0, 1.6e-2), "a zero reference needs an exact zero");
        assertTrue(!FusedNormCheck.within(1e-30, 0.0, 1.6e-2));
        assertTrue(!FusedNormCheck.within(Double.NaN, 1.0, 1.6e-2));
    }

    @Test
    void inputsAreExactInEveryDtype() {
        for (long i = 0; i < 10_000; i++) {
            int r = FusedNormCheck.residualOut(RANKS, SEED, i);
            assertTrue(Math.abs(r) <= 8 * InputPattern.MAX_MAGNITUDE + InputPattern.MAX_MAGNITUDE, "|" + r + "| <= 144");
        }
        for (int j = 0; j < FusedNormCheck.HIDDEN; j++) {
            float w = FusedNormCheck.weight(SEED, j);
            assertTrue(Math.abs(w) <= 1 && w * 16 == Math.rint(w * 16), "a multiple of 1/16 in [-1, 1]: " + w);
            assertEquals(w, Float.intBitsToFloat(bf16(w) << 16), "exact in bf16");
        }
    }

    @Test
    void theKernelsArithmeticPassesAndDamageIsCounted() {
        long rows = 2 * FusedNormCheck.ROWS;
        for (DType dtype : DType.values()) {
            long bytes = rows * FusedNormCheck.HIDDEN * dtype.byteSize();
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment out = arena.allocate(bytes, 16);
                MemorySegment residualOut = arena.allocate(bytes, 16);
                kernel(out, residualOut, dtype, rows);
                FusedNormCheck.Outcome good = FusedNormCheck.check(out, residualOut, dtype, RANKS, SEED);
                assertEquals(0, good.wrong(), dtype + ": " + good);
                assertTrue(good.maxRelative() <= FusedNormCheck.tolerance(dtype), dtype + ": " + good);

                long i = FusedNormCheck.HIDDEN + 11;
                float v = InputPattern.read(out, dtype, i);
                store(out, dtype, i, v == 0 ? 1f : v * 1.05f);
                assertEquals(1, FusedNormCheck.check(out, residualOut, dtype, RANKS, SEED).normWrong(), dtype + " 5 % off");
                kernel(out, residualOut, dtype, rows);
                store(residualOut, dtype, 5, InputPattern.read(residualOut, dtype, 5) + 1);
                assertEquals(1, FusedNormCheck.check(out, residualOut, dtype, RANKS, SEED).residualWrong(), dtype + " residual off by one");
                kernel(out, residualOut, dtype, rows);
                out.asSlice(0, dtype.byteSize()).fill((byte) CollectiveCheck.POISON);
                assertEquals(1, FusedNormCheck.check(out, residualOut, dtype, RANKS, SEED).normWrong(), dtype + " NaN");
                assertTrue(FusedNormCheck.check(out, residualOut, dtype, RANKS - 1, SEED).wrong() > 0,
                        dtype + ": the sum of another world size is not accepted");
            }
        }
    }

    @Test
    void aBfloat16OutputTwoPercentOffIsOutsideTheTolerance() {
        long bytes = (long) FusedNormCheck.HIDDEN * 2;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(bytes, 16);
            MemorySegment residualOut = arena.allocate(bytes, 16);
            kernel(out, residualOut, DType.BFLOAT16, 1);
            double[] ref = FusedNormCheck.referenceRow(RANKS, SEED, 0);
            int j = 0;
            while (Math.abs(ref[j]) < 0.5) {
                j++;
            }
            store(out, DType.BFLOAT16, j, (float) (ref[j] * 1.02));
            assertEquals(1, FusedNormCheck.check(out, residualOut, DType.BFLOAT16, RANKS, SEED).normWrong());
            assertThrows(IllegalArgumentException.class, () -> FusedNormCheck.check(out.asSlice(0, bytes - 2),
                    residualOut.asSlice(0, bytes - 2), DType.BFLOAT16, RANKS, SEED), "not whole rows");
        }
    }
}
