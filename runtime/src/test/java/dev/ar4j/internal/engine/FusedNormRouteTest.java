package dev.ar4j.internal.engine;

import dev.ar4j.DType;
import dev.ar4j.dispatch.Algorithm;
import dev.ar4j.dispatch.AllReduceDispatcher;
import dev.ar4j.dispatch.Decision;
import dev.ar4j.dispatch.DispatchConfig;
import dev.ar4j.dispatch.SettingSource;
import dev.ar4j.dispatch.Topology;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Which way {@code Communicator.allReduceResidualRmsNorm} runs a call, and how explain says it. */
class FusedNormRouteTest {
    private static final long MIB = 1 << 20;
    private static final long STAGING = 8 * MIB;

    private static FusedNormRoute route(Algorithm a, boolean registered, boolean overlap, long bytes) {
        return FusedNormRoute.of(a, 7168, DType.BFLOAT16, registered, overlap, bytes, STAGING);
    }

    private static AllReduceDispatcher dispatcher(Algorithm policy) {
        DispatchConfig config = new DispatchConfig(policy, new SettingSource.BuilderValue(), false,
                new SettingSource.BuilderValue());
        return AllReduceDispatcher.of(Topology.singleHost(2, true), config, STAGING);
    }

    @Test
    void pushIsFusedOnTheInputWhereItLies() {
        for (boolean registered : new boolean[] {false, true}) {
            for (boolean overlap : new boolean[] {false, true}) {
                assertEquals(FusedNormRoute.PUSH, route(Algorithm.PUSH, registered, overlap, 3 * 7168 * 2));
            }
        }
    }

    @Test
    void oneStageReadsARegisteredInputInPlaceAndStagesTheRest() {
        long bytes = 64 * 7168 * 2;
        assertEquals(FusedNormRoute.ONE_STAGE, route(Algorithm.ONE_STAGE, true, false, bytes));
        // An output over the input (out == in, say): peers read the input during the launch, so it is staged.
        assertEquals(FusedNormRoute.ONE_STAGE_STAGED, route(Algorithm.ONE_STAGE, true, true, bytes));
        assertEquals(FusedNormRoute.ONE_STAGE_STAGED, route(Algorithm.ONE_STAGE, false, false, bytes));
        assertEquals(FusedNormRoute.ONE_STAGE_STAGED, route(Algorithm.ONE_STAGE, false, true, STAGING));
        // A registered input larger than the staging buffer can only be read in place.
        assertEquals(FusedNormRoute.ONE_STAGE, route(Algorithm.ONE_STAGE, true, false, 2 * STAGING));
        assertEquals(FusedNormRoute.UNFUSED, route(Algorithm.ONE_STAGE, true, true, STAGING + 16));
    }

    @Test
    void twoStageNcclAndUnsuitableRowsAreUnfused() {
        assertEquals(FusedNormRoute.UNFUSED, route(Algorithm.TWO_STAGE, true, false, 64 * MIB));
        assertEquals(FusedNormRoute.UNFUSED, route(Algorithm.NCCL, true, false, 64 * MIB));
        // 7 bf16 are 14 bytes a row; 65544 elements exceed the fused kernels' row.
        assertEquals(FusedNormRoute.UNFUSED, FusedNormRoute.of(Algorithm.ONE_STAGE, 7, DType.BFLOAT16, true, false,
                7 * 2 * 8, STAGING));
        assertEquals(FusedNormRoute.UNFUSED, FusedNormRoute.of(Algorithm.PUSH, 65544, DType.FLOAT16, true, false,
                65544 * 2, STAGING));
        assertTrue(FusedNormRoute.fusableRow(65536, DType.FLOAT32));
        assertFalse(FusedNormRoute.fusableRow(6, DType.FLOAT32));
    }

    @Test
    void overlapIsOfHalfOpenRanges() {
        assertTrue(FusedNormRoute.overlaps(0x1000, 0x1000, 16));
        assertTrue(FusedNormRoute.overlaps(0x1000, 0x1010 - 16 + 1, 16));
        assertFalse(FusedNormRoute.overlaps(0x1000, 0x1010, 16));
        assertFalse(FusedNormRoute.overlaps(0x1010, 0x1000, 16));
    }

    @Test
    void aForcedOneStagePolicyGivesTheFusedOneStageKernelAndExplainSaysSo() {
        AllReduceDispatcher d = dispatcher(Algorithm.ONE_STAGE);
        long bytes = 64 * 7168 * 2;
        Decision registered = d.decide(bytes, DType.BFLOAT16, true, true);
        Decision unregistered = d.decide(bytes, DType.BFLOAT16, true, false);
        FusedNormRoute inPlace = FusedNormRoute.of(registered.algorithm(), 7168, DType.BFLOAT16, true, false, bytes,
                STAGING);
        FusedNormRoute staged = FusedNormRoute.of(unregistered.algorithm(), 7168, DType.BFLOAT16, false, false, bytes,
                STAGING);
        assertEquals(FusedNormRoute.ONE_STAGE, inPlace);
        assertEquals(FusedNormRoute.ONE_STAGE_STAGED, staged);
        String a = inPlace.describe(registered, 7168, DType.BFLOAT16);
        String b = staged.describe(unregistered, 7168, DType.BFLOAT16);
        assertTrue(a.startsWith("fused: one 1-stage kernel all-reduces the registered input in place"), a);
        assertTrue(b.startsWith("fused: one 1-stage kernel all-reduces, adds the residual and normalises, after a copy"),
                b);
        assertTrue(a.endsWith("(" + registered.reason() + ")"), a);
        // An unregistered input beyond the staging buffer goes to NCCL: the unfused path, as allReduce decides.
        Decision big = d.decide(2 * STAGING, DType.BFLOAT16, true, false);
        assertEquals(Algorithm.NCCL, big.algorithm());
        FusedNormRoute r = FusedNormRoute.of(big.algorithm(), 7168, DType.BFLOAT16, false, false, 2 * STAGING, STAGING);
        assertEquals(FusedNormRoute.UNFUSED, r);
        assertTrue(r.describe(big, 7168, DType.BFLOAT16).startsWith("all-reduce by NCCL"));
    }

    @Test
    void autoPolicyFusesSmallCallsWithPushAndExplainsUnsuitableRows() {
        AllReduceDispatcher d = dispatcher(Algorithm.AUTO);
        Decision small = d.decide(3 * 7168 * 2, DType.BFLOAT16, true, false);
        assertEquals(Algorithm.PUSH, small.algorithm());
        assertTrue(FusedNormRoute.PUSH.describe(small, 7168, DType.BFLOAT16).startsWith("fused: one push kernel"));
        String odd = FusedNormRoute.UNFUSED.describe(small, 7, DType.BFLOAT16);
        assertTrue(odd.contains("the fused kernels take rows of a multiple of 16 bytes"), odd);
    }
}
