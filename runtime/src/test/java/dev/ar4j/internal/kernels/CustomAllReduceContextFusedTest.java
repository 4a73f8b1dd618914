package dev.ar4j.internal.kernels;

import dev.ar4j.DType;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Argument checks of {@link CustomAllReduceContext#allReduceResidualRmsNorm}, all made before any native
 * call (no GPU, no context: the context handle here is NULL and never reaches native code).
 */
class CustomAllReduceContextFusedTest {
    private static final long A = 0x7f00_0000_0000L;
    private static final long MiB = 1 << 20;
    private static final int PUSH = CustomAllReduceKernels.ALGO_PUSH;
    private static final int ONE_STAGE = CustomAllReduceKernels.ALGO_ONE_STAGE;

    // in, residual, weight, out, residualOut one MiB apart: no overlap.
    private static final long IN = A, RES = A + MiB, W = A + 2 * MiB, OUT = A + 3 * MiB, RO = A + 4 * MiB;

    private final CustomAllReduceContext context = new CustomAllReduceContext(MemorySegment.NULL, 0, 2);

    private IllegalArgumentException refused(int algorithm, DType dtype, long in, long residual, long weight, long out,
                                             long residualOut, long rows, int hidden, float eps) {
        return assertThrows(IllegalArgumentException.class, () -> context.allReduceResidualRmsNorm(algorithm, dtype, in,
                residual, weight, out, residualOut, rows, hidden, eps, 0));
    }

    private static void assertMessage(IllegalArgumentException e, String part) {
        assertTrue(e.getMessage().contains(part), e.getMessage());
    }

    @Test
    void theLimitsAreTheHeaders() {
        assertEquals(65536, CustomAllReduceKernels.FUSED_MAX_HIDDEN);
        assertEquals(800, CustomAllReduceKernels.EXPECTED_ABI_VERSION);
        assertEquals(24, CustomAllReduceKernels.STATUS_NOT_FUSED);
        assertEquals(25, CustomAllReduceKernels.STATUS_HIDDEN_TOO_LARGE);
        assertEquals(26, CustomAllReduceKernels.STATUS_ROW_NOT_MULTIPLE_OF_16);
    }

    @Test
    void validArgumentsPassTheChecks() {
        assertDoesNotThrow(() -> FusedArguments.check(PUSH, DType.BFLOAT16, IN, RES, W, OUT, RO, 3, 7168,
                1e-6f));
        // In place: out == in, residualOut == residual (or in).
        assertDoesNotThrow(() -> FusedArguments.check(PUSH, DType.FLOAT32, IN, RES, W, IN, RES, 17, 4096,
                1e-6f));
        assertDoesNotThrow(() -> FusedArguments.check(PUSH, DType.FLOAT16, IN, RES, W, OUT, IN, 1, 65536,
                1e-5f));
    }

    @Test
    void onlyThePushAndOneStageAlgorithmsAreFused() {
        for (int algorithm : new int[] {CustomAllReduceKernels.ALGO_TWO_STAGE, 0, 9}) {
            assertMessage(refused(algorithm, DType.BFLOAT16, IN, RES, W, OUT, RO, 3, 7168, 1e-6f),
                    "has no fused all-reduce + residual + RMSNorm kernel");
        }
        assertDoesNotThrow(() -> FusedArguments.check(ONE_STAGE, DType.BFLOAT16, IN, RES, W, OUT, RO, 3,
                7168, 1e-6f));
    }

    @Test
    void oneStageIsBoundedByTheRegistrationNotThePushLimit() {
        // 64 rows of 16384 bf16 are 2 MiB, four times the push limit: the library checks the registration.
        long twoMiB = 64L * 16384 * 2;
        long in = A, res = A + twoMiB, w = A + 2 * twoMiB, out = A + 3 * twoMiB, ro = A + 4 * twoMiB;
        assertDoesNotThrow(() -> FusedArguments.check(ONE_STAGE, DType.BFLOAT16, in, res, w, out, ro, 64,
                16384, 1e-6f));
        assertMessage(refused(PUSH, DType.BFLOAT16, in, res, w, out, ro, 64, 16384, 1e-6f), "rows must be 1 to 16");
        assertMessage(refused(ONE_STAGE, DType.BFLOAT16, in, res, w, out, ro, 0, 16384, 1e-6f), "rows must be at least 1");
        assertMessage(refused(ONE_STAGE, DType.FLOAT32, in, res, w, out, ro, Long.MAX_VALUE / 16 + 1, 4, 1e-6f),
                "rows must be at least 1");
    }

    @Test
    void oneStageOutputsMustNotOverlapTheInputItsPeersRead() {
        // Push takes out == in and residualOut == in; one-stage refuses both, and any partial overlap.
        assertDoesNotThrow(() -> FusedArguments.check(PUSH, DType.BFLOAT16, IN, RES, W, IN, RO, 3, 7168,
                1e-6f));
        assertDoesNotThrow(() -> FusedArguments.check(PUSH, DType.BFLOAT16, IN, RES, W, OUT, IN, 3, 7168,
                1e-6f));
        String peersRead = "which the one-stage kernel's peers read during the whole launch";
        IllegalArgumentException outIsIn = refused(ONE_STAGE, DType.BFLOAT16, IN, RES, W, IN, RO, 3, 7168, 1e-6f);
        assertMessage(outIsIn, "out overlaps in, " + peersRead);
        assertMessage(refused(ONE_STAGE, DType.BFLOAT16, IN, RES, W, OUT, IN, 3, 7168, 1e-6f),
                "residualOut overlaps in, " + peersRead);
        assertMessage(refused(ONE_STAGE, DType.BFLOAT16, IN, RES, W, IN + 3 * 7168 * 2 - 16, RO, 3, 7168, 1e-6f),
                "out overlaps in, " + peersRead);
        // residualOut == residual stays allowed: the residual is local.
        assertDoesNotThrow(() -> FusedArguments.check(ONE_STAGE, DType.FLOAT16, IN, RES, W, OUT, RES, 3,
                7168, 1e-6f));
        // The other aliasing rules are the push kernel's.
        assertMessage(refused(ONE_STAGE, DType.BFLOAT16, IN, RES, W, RES, RO, 3, 7168, 1e-6f), "out overlaps residual");
        assertMessage(refused(ONE_STAGE, DType.BFLOAT16, IN, RES, W, OUT, OUT, 3, 7168, 1e-6f),
                "out and residualOut overlap");
    }

    @Test
    void nullDtypeIsRefused() {
        assertThrows(NullPointerException.class, () -> context.allReduceResidualRmsNorm(PUSH, null, IN, RES, W, OUT, RO,
                3, 7168, 1e-6f, 0));
    }

    @Test
    void hiddenOutsideItsRangeOrNotWholePacksIsRefused() {
        assertMessage(refused(PUSH, DType.BFLOAT16, IN, RES, W, OUT, RO, 1, 0, 1e-6f), "hidden must be 1 to 65536");
        assertMessage(refused(PUSH, DType.BFLOAT16, IN, RES, W, OUT, RO, 1, 65544, 1e-6f), "hidden must be 1 to 65536");
        assertMessage(refused(PUSH, DType.BFLOAT16, IN, RES, W, OUT, RO, 1, 7, 1e-6f), "multiple of 16 bytes");
        assertMessage(refused(PUSH, DType.FLOAT32, IN, RES, W, OUT, RO, 1, 6, 1e-6f), "multiple of 16 bytes");
    }

    @Test
    void rowsOutsideThePushLimitAreRefused() {
        assertMessage(refused(PUSH, DType.BFLOAT16, IN, RES, W, OUT, RO, 0, 7168, 1e-6f), "rows must be 1 to 36");
        // 16 rows of 16384 bf16 are exactly the push limit; 17 are over.
        assertDoesNotThrow(() -> FusedArguments.check(PUSH, DType.BFLOAT16, IN, RES, W, OUT, RO, 16,
                16384, 1e-6f));
        assertMessage(refused(PUSH, DType.BFLOAT16, IN, RES, W, OUT, RO, 17, 16384, 1e-6f), "rows must be 1 to 16");
    }

    @Test
    void badEpsIsRefused() {
        for (float eps : new float[] {0f, -1f, Float.NaN, Float.POSITIVE_INFINITY}) {
            assertMessage(refused(PUSH, DType.FLOAT16, IN, RES, W, OUT, RO, 3, 7168, eps),
                    "eps must be finite and greater than 0");
        }
    }

    @Test
    void zeroOrMisalignedAddressesAreRefused() {
        assertMessage(refused(PUSH, DType.FLOAT16, 0, RES, W, OUT, RO, 3, 7168, 1e-6f), "in must not be 0");
        assertMessage(refused(PUSH, DType.FLOAT16, IN, RES, W + 8, OUT, RO, 3, 7168, 1e-6f),
                "weight must be 16-byte aligned");
        assertMessage(refused(PUSH, DType.FLOAT16, IN, RES, W, OUT, RO + 2, 3, 7168, 1e-6f),
                "residualOut must be 16-byte aligned");
    }

    @Test
    void aliasingTheKernelCannotDoIsRefused() {
        assertMessage(refused(PUSH, DType.BFLOAT16, IN, RES, W, OUT, OUT, 3, 7168, 1e-6f), "out and residualOut overlap");
        assertMessage(refused(PUSH, DType.BFLOAT16, IN, RES, W, IN + 16, RO, 3, 7168, 1e-6f),
                "out overlaps in without being equal");
        assertMessage(refused(PUSH, DType.BFLOAT16, IN, RES, W, RES, RO, 3, 7168, 1e-6f), "out overlaps residual");
        assertMessage(refused(PUSH, DType.BFLOAT16, IN, RES, W, OUT, RES + 32, 3, 7168, 1e-6f),
                "residualOut overlaps residual without being equal");
        assertMessage(refused(PUSH, DType.BFLOAT16, IN, RES, W, OUT, IN + 32, 3, 7168, 1e-6f),
                "residualOut overlaps in without being equal");
        assertMessage(refused(PUSH, DType.BFLOAT16, IN, RES, OUT + 16, OUT, RO, 3, 7168, 1e-6f), "weight overlaps");
    }

    @Test
    void aClosedContextIsRefusedAfterTheArgumentChecks() {
        // Valid arguments on this NULL context would reach native code; only the closed state is checked here.
        CustomAllReduceContext closed = new CustomAllReduceContext(MemorySegment.NULL, 0, 2);
        markClosed(closed);
        assertThrows(IllegalStateException.class, () -> closed.allReduceResidualRmsNorm(PUSH, DType.BFLOAT16, IN, RES, W,
                OUT, RO, 3, 7168, 1e-6f, 0));
    }

    private static void markClosed(CustomAllReduceContext c) {
        try {
            var f = CustomAllReduceContext.class.getDeclaredField("closed");
            f.setAccessible(true);
            ((java.util.concurrent.atomic.AtomicBoolean) f.get(c)).set(true);
        } catch (ReflectiveOperationException e) {
            throw new AssertionError(e);
        }
    }
}
