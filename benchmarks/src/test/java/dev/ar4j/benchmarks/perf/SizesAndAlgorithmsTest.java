package dev.ar4j.benchmarks.perf;

import dev.ar4j.Communicator;
import dev.ar4j.DType;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SizesAndAlgorithmsTest {

    @Test
    void byteSizesTakeSuffixes() {
        assertEquals(1024, ByteSizes.parse("1K"));
        assertEquals(1024, ByteSizes.parse("1k"));
        assertEquals(2048, ByteSizes.parse("2KiB"));
        assertEquals(64L << 20, ByteSizes.parse("64M"));
        assertEquals(8L << 20, ByteSizes.parse("8MB"));
        assertEquals(1L << 30, ByteSizes.parse("1G"));
        assertEquals(43008, ByteSizes.parse(" 43008 "));
        for (String bad : List.of("", "K", "abc", "-1", "0", "1T", "1.5M", "99999999999999999999")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ByteSizes.parse(bad), bad);
            assertTrue(e.getMessage().contains("'" + bad + "'") || e.getMessage().contains("positive"), e.getMessage());
        }
        assertEquals("64M", ByteSizes.format(64L << 20));
        assertEquals("42K", ByteSizes.format(43008));
        assertEquals("43000", ByteSizes.format(43000));
        assertEquals("1K", ByteSizes.format(1024));
    }

    @Test
    void sweepLikeAllReducePerf() {
        List<Long> sizes = SizeSweep.geometric(1024, 64L << 20, 2, DType.BFLOAT16);
        assertEquals(17, sizes.size());
        assertEquals(1024L, sizes.getFirst());
        assertEquals(64L << 20, sizes.getLast());
        assertEquals(List.of(1024L, 4096L, 16384L), SizeSweep.geometric(1024, 20000, 4, DType.FLOAT32));
        assertEquals(List.of(4L), SizeSweep.geometric(6, 6, 2, DType.FLOAT32), "rounded down to whole elements");
        assertEquals(List.of(43008L, 1024L), SizeSweep.explicit(List.of(43008L, 1024L, 43008L), DType.BFLOAT16));
        assertThrows(IllegalArgumentException.class, () -> SizeSweep.geometric(2048, 1024, 2, DType.BFLOAT16));
        assertThrows(IllegalArgumentException.class, () -> SizeSweep.geometric(1024, 2048, 1, DType.BFLOAT16));
        assertThrows(IllegalArgumentException.class, () -> SizeSweep.geometric(2, 2, 2, DType.FLOAT32));
        assertEquals(List.of(Long.MAX_VALUE / 2 / 2 * 2), SizeSweep.geometric(Long.MAX_VALUE / 2, Long.MAX_VALUE / 2, 2,
                DType.BFLOAT16), "no overflow at the top");
    }

    @Test
    void algorithmListsAlwaysMeasureBothNcclBaselines() {
        assertEquals(List.of(PerfAlgorithm.PUSH, PerfAlgorithm.NCCL, PerfAlgorithm.NCCL_SYMMETRIC),
                PerfAlgorithm.parseListWithBaselines(List.of("push")));
        assertEquals(List.of(PerfAlgorithm.ONE_STAGE, PerfAlgorithm.TWO_STAGE, PerfAlgorithm.NCCL_SYMMETRIC,
                PerfAlgorithm.NCCL), PerfAlgorithm.parseListWithBaselines(List.of("oneshot,twoshot,nccl-symm,1stage")));
        assertEquals(6, PerfAlgorithm.parseListWithBaselines(List.of(PerfAlgorithm.DEFAULT_LIST)).size());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> PerfAlgorithm.parseListWithBaselines(List.of("auto,3stage")));
        assertTrue(e.getMessage().contains("3stage") && e.getMessage().contains(PerfAlgorithm.ACCEPTED), e.getMessage());
    }

    @Test
    void workloadsAndRegistrationSlots() {
        PerfSettings sweep = SyntheticResults.settings(Scenario.SWEEP, List.of(1024L, 65536L));
        PerfSettings.Workload w = sweep.workload(1024);
        assertEquals(1, w.callsPerPass());
        assertEquals(50, w.graphPasses());
        assertEquals(512, w.count(DType.BFLOAT16));
        assertEquals(65536, sweep.bufferBytes());
        // 4 ar4j columns x 2 sizes x (50 captured + 1 check graph) + 64, below the default
        assertEquals(Communicator.DEFAULT_MAX_REGISTRATIONS, sweep.registrationSlots());

        PerfSettings verify = SyntheticResults.settings(Scenario.VERIFY, List.of(Scenario.VERIFY_BYTES));
        PerfSettings.Workload v = verify.workload(Scenario.VERIFY_BYTES);
        assertEquals(122, v.callsPerPass());
        assertEquals(1, v.graphPasses());
        assertEquals(50, v.replaysPerRep());
        assertEquals(122 * 43008L, verify.bufferBytes());

        PerfSettings big = new PerfSettings(Scenario.SWEEP, SizeSweep.geometric(1024, 64L << 20, 2, DType.BFLOAT16),
                DType.BFLOAT16, PerfAlgorithm.parseListWithBaselines(List.of(PerfAlgorithm.DEFAULT_LIST)), 5, 100, 7,
                List.of(TimingMode.GRAPH, TimingMode.EAGER), List.of(Placement.OUT_OF_PLACE, Placement.IN_PLACE), false,
                8L << 20, false, Duration.ofSeconds(120), 1);
        assertEquals(4 * 17 * 101 * 2 + 64, big.registrationSlots());
        assertThrows(IllegalArgumentException.class, () -> new PerfSettings(Scenario.SWEEP, List.of(1023L), DType.BFLOAT16,
                List.of(PerfAlgorithm.NCCL), 0, 1, 1, List.of(TimingMode.GRAPH), List.of(Placement.IN_PLACE), false, 16,
                false, Duration.ofSeconds(1), 1));
    }

    @Test
    void busBandwidthFollowsNcclTests() {
        PerfResult r = new PerfResult("sweep", "graph", "out-of-place", false, 8, 1_000_000, 500_000, "bf16", "nccl", "nccl",
                false, "", 10.0, 10.0, 0, Double.NaN, Double.NaN, 1, 50, 7, 5);
        assertEquals(100.0, r.algbwGBps(), 1e-9);
        assertEquals(175.0, r.busbwGBps(), 1e-9);
    }

    @Test
    void ranLabelsShowFallbacks() {
        var fellBack = new dev.ar4j.dispatch.Decision(dev.ar4j.dispatch.Algorithm.NCCL, "forced 2stage, but → NCCL", true);
        var push = new dev.ar4j.dispatch.Decision(dev.ar4j.dispatch.Algorithm.PUSH, "auto → push", false);
        assertEquals("2stage→nccl", RankSweep.ranLabel(PerfAlgorithm.TWO_STAGE, fellBack));
        assertEquals("push", RankSweep.ranLabel(PerfAlgorithm.AUTO, push));
        assertEquals("nccl-symm", RankSweep.ranLabel(PerfAlgorithm.NCCL_SYMMETRIC, push));
        assertEquals(2.5, RankSweep.median(new double[] {4, 1, 2, 3}));
        assertEquals(3.0, RankSweep.median(new double[] {5, 3, 1}));
    }
}
