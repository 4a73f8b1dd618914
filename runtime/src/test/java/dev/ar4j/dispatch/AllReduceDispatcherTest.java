package dev.ar4j.dispatch;

import dev.ar4j.DType;
import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.Properties;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Named examples of the dispatch rules, the argument checks, caching, and {@code explain()}. */
class AllReduceDispatcherTest {

    private static final long KIB = 1024;
    private static final long MIB = 1024 * KIB;
    private static final long STAGING = 8 * MIB;

    private static DispatchConfig config(AlgorithmPolicy policy, boolean gateLifted) {
        return new DispatchConfig(policy, new SettingSource.BuilderValue(), gateLifted, new SettingSource.BuilderValue());
    }

    private static AllReduceDispatcher dispatcher(Topology topology, AlgorithmPolicy policy) {
        return new AllReduceDispatcher(topology, config(policy, false), STAGING);
    }

    @Test
    void twoRanksRunOneStageAtEverySizeWithinStaging() {
        AllReduceDispatcher d = dispatcher(Topology.singleHost(2, true), AlgorithmPolicy.AUTO);
        for (long bytes : new long[] {16, 43008, 512 * KIB, STAGING}) {
            Decision decision = d.decide(bytes, DType.BFLOAT16, true, false);
            assertEquals(Algorithm.ONE_STAGE, decision.algorithm(), bytes + " bytes");
            assertEquals("auto: world size 2 → one-stage", decision.reason());
            assertFalse(decision.fellBack());
        }
        // Registered inputs are bounded by their buffer, not by staging: still one-stage.
        assertEquals(Algorithm.ONE_STAGE, d.decide(64 * MIB, DType.BFLOAT16, true, true).algorithm());
        // Unregistered inputs beyond the staging buffer go to NCCL.
        Decision tooLarge = d.decide(STAGING + 16, DType.BFLOAT16, true, false);
        assertEquals(Algorithm.NCCL, tooLarge.algorithm());
        assertTrue(tooLarge.reason().contains("8 MiB staging buffer"), tooLarge.reason());
    }

    @Test
    void nvlinkThresholdsSwitchToTwoStage() {
        AllReduceDispatcher four = dispatcher(Topology.singleHost(4, true), AlgorithmPolicy.AUTO);
        assertEquals(Algorithm.ONE_STAGE, four.decide(512 * KIB - 16, DType.FLOAT32, true, true).algorithm());
        assertEquals(Algorithm.TWO_STAGE, four.decide(512 * KIB, DType.FLOAT32, true, true).algorithm());
        AllReduceDispatcher eight = dispatcher(Topology.singleHost(8, true), AlgorithmPolicy.AUTO);
        assertEquals(Algorithm.ONE_STAGE, eight.decide(256 * KIB - 16, DType.FLOAT32, true, true).algorithm());
        Decision large = eight.decide(256 * KIB, DType.FLOAT32, true, true);
        assertEquals(Algorithm.TWO_STAGE, large.algorithm());
        assertEquals("auto: 8 ranks on NVLink, 256 KiB or more → two-stage", large.reason());
        // Two-stage's scratch is sized like staging, so a registered input beyond it goes to NCCL.
        Decision beyondScratch = eight.decide(64 * MIB, DType.FLOAT32, true, true);
        assertEquals(Algorithm.NCCL, beyondScratch.algorithm());
        assertFalse(beyondScratch.fellBack());
        assertTrue(beyondScratch.reason().contains("8 MiB two-stage scratch"), beyondScratch.reason());
    }

    @Test
    void thresholdsAreConfigurable() {
        AllReduceDispatcher d = new AllReduceDispatcher(Topology.singleHost(4, true), config(AlgorithmPolicy.AUTO, false),
                STAGING, new OneStageThresholds(64 * KIB, 32 * KIB));
        assertEquals(Algorithm.ONE_STAGE, d.decide(64 * KIB - 16, DType.FLOAT16, true, true).algorithm());
        assertEquals(Algorithm.TWO_STAGE, d.decide(64 * KIB, DType.FLOAT16, true, true).algorithm());
        assertEquals(new OneStageThresholds(64 * KIB, 32 * KIB), d.thresholds());
    }

    @Test
    void pcieGateBlocksAutoButNotForcedAndCanBeLifted() {
        Topology pcie = Topology.singleHost(4, false);
        Decision gated = dispatcher(pcie, AlgorithmPolicy.AUTO).decide(KIB, DType.BFLOAT16, true, true);
        assertEquals(Algorithm.NCCL, gated.algorithm());
        assertFalse(gated.fellBack());
        assertTrue(gated.reason().contains("AR4J_FORCE_CUSTOM_AR_PCIE=1"), gated.reason());

        Decision lifted = new AllReduceDispatcher(pcie, config(AlgorithmPolicy.AUTO, true), STAGING)
                .decide(KIB, DType.BFLOAT16, true, true);
        assertEquals(Algorithm.ONE_STAGE, lifted.algorithm());
        assertTrue(lifted.reason().contains("PCIe (gate lifted by builder)"), lifted.reason());

        Decision forced = dispatcher(pcie, AlgorithmPolicy.TWO_STAGE).decide(KIB, DType.BFLOAT16, true, true);
        assertEquals(Algorithm.TWO_STAGE, forced.algorithm());
        assertTrue(forced.reason().contains("PCIe gate does not apply"), forced.reason());

        // Two GPUs over PCIe are not gated.
        assertEquals(Algorithm.ONE_STAGE, dispatcher(Topology.singleHost(2, false), AlgorithmPolicy.AUTO)
                .decide(KIB, DType.BFLOAT16, true, true).algorithm());
    }

    @Test
    void forcedAlgorithmsAreHonouredOrFallBackWithAReason() {
        Topology nvlink4 = Topology.singleHost(4, true);
        assertEquals(Algorithm.ONE_STAGE, dispatcher(nvlink4, AlgorithmPolicy.ONE_STAGE)
                .decide(4 * MIB, DType.FLOAT32, true, true).algorithm());
        assertEquals(Algorithm.TWO_STAGE, dispatcher(nvlink4, AlgorithmPolicy.TWO_STAGE)
                .decide(16, DType.FLOAT32, true, true).algorithm());
        assertEquals(Algorithm.TWO_STAGE, dispatcher(Topology.singleHost(2, true), AlgorithmPolicy.TWO_STAGE)
                .decide(KIB, DType.FLOAT32, true, true).algorithm());
        Decision nccl = dispatcher(nvlink4, AlgorithmPolicy.NCCL).decide(16, DType.FLOAT32, true, true);
        assertEquals(Algorithm.NCCL, nccl.algorithm());
        assertFalse(nccl.fellBack());

        Decision unaligned = dispatcher(Topology.singleHost(2, true), AlgorithmPolicy.ONE_STAGE)
                .decide(43010, DType.BFLOAT16, true, true);
        assertEquals(new Decision(Algorithm.NCCL,
                "forced 1stage by builder, but the byte count is not a multiple of 16 → NCCL", true), unaligned);

        Decision oddWorld = dispatcher(Topology.singleHost(3, true), AlgorithmPolicy.TWO_STAGE)
                .decide(KIB, DType.BFLOAT16, true, true);
        assertTrue(oddWorld.fellBack());
        assertTrue(oddWorld.reason().contains("world size 3 is not 2, 4, 6 or 8"), oddWorld.reason());

        Decision misaligned = dispatcher(nvlink4, AlgorithmPolicy.ONE_STAGE).decide(KIB, DType.BFLOAT16, false, true);
        assertTrue(misaligned.fellBack());
        assertTrue(misaligned.reason().contains("16-byte aligned"), misaligned.reason());
    }

    @Test
    void topologyThatRulesOutCustomKernelsGivesNccl() {
        Topology twoHosts = new Topology(4, true, true, false);
        Decision d = dispatcher(twoHosts, AlgorithmPolicy.AUTO).decide(KIB, DType.FLOAT32, true, true);
        assertEquals(new Decision(Algorithm.NCCL, "auto: the ranks span several hosts → NCCL", false), d);
        Decision noP2p = dispatcher(new Topology(2, false, false, true), AlgorithmPolicy.AUTO)
                .decide(KIB, DType.FLOAT32, true, true);
        assertTrue(noP2p.reason().contains("P2P"), noP2p.reason());
        Decision single = dispatcher(Topology.singleHost(1, true), AlgorithmPolicy.AUTO)
                .decide(KIB, DType.FLOAT32, true, true);
        assertEquals(Algorithm.NCCL, single.algorithm());
    }

    @Test
    void decisionsAreCachedInstances() {
        AllReduceDispatcher d = dispatcher(Topology.singleHost(8, true), AlgorithmPolicy.AUTO);
        assertSame(d.decide(16, DType.BFLOAT16, true, true), d.decide(4 * KIB, DType.FLOAT32, true, false));
        assertSame(d.decide(256 * KIB, DType.BFLOAT16, true, true), d.decide(MIB, DType.FLOAT16, true, false));
        assertSame(d.decide(18, DType.BFLOAT16, true, true), d.decide(43010, DType.FLOAT16, false, false));
        assertSame(d.decide(32, DType.BFLOAT16, false, true), d.decide(64, DType.FLOAT32, false, false));
    }

    @Test
    void emptyNegativeAndPartialElementSizesAreRejected() {
        AllReduceDispatcher d = dispatcher(Topology.singleHost(2, true), AlgorithmPolicy.AUTO);
        IllegalArgumentException empty = assertThrows(IllegalArgumentException.class,
                () -> d.decide(0, DType.FLOAT32, true, true));
        assertTrue(empty.getMessage().contains("0 bytes"), empty.getMessage());
        IllegalArgumentException negative = assertThrows(IllegalArgumentException.class,
                () -> d.decide(-16, DType.FLOAT32, true, true));
        assertTrue(negative.getMessage().contains("-16"), negative.getMessage());
        IllegalArgumentException partial = assertThrows(IllegalArgumentException.class,
                () -> d.decide(43010, DType.FLOAT32, true, true));
        assertTrue(partial.getMessage().contains("FLOAT32") && partial.getMessage().contains("4 bytes each"),
                partial.getMessage());
        assertThrows(NullPointerException.class, () -> d.decide(16, null, true, true));
        assertThrows(IllegalArgumentException.class, () -> d.explain(0, DType.FLOAT32));
    }

    @Test
    void constructionArgumentsAreChecked() {
        DispatchConfig auto = DispatchConfig.defaults();
        Topology topology = Topology.singleHost(2, true);
        IllegalArgumentException staging = assertThrows(IllegalArgumentException.class,
                () -> new AllReduceDispatcher(topology, auto, 0));
        assertTrue(staging.getMessage().contains("staging"), staging.getMessage());
        assertThrows(NullPointerException.class, () -> new AllReduceDispatcher(null, auto, STAGING));
        assertThrows(NullPointerException.class, () -> new AllReduceDispatcher(topology, null, STAGING));
        assertThrows(NullPointerException.class, () -> new AllReduceDispatcher(topology, auto, STAGING, null));
        assertThrows(IllegalArgumentException.class, () -> new OneStageThresholds(0, 256 * KIB));
        assertThrows(IllegalArgumentException.class, () -> new OneStageThresholds(512 * KIB, -1));
    }

    @Test
    void explainNamesTheAlgorithmTheReasonAndTheWinningSources() {
        DispatchConfig config = DispatchConfig.builder()
                .environment(Map.of(DispatchConfig.SGLANG_ALGORITHM_ENV, "oneshot"))
                .systemProperties(new Properties())
                .build();
        AllReduceDispatcher d = new AllReduceDispatcher(Topology.singleHost(4, true), config, STAGING);
        String text = d.explain(43008, DType.BFLOAT16);
        assertTrue(text.contains("43008 bytes"), text);
        assertTrue(text.contains("21504 BFLOAT16 elements"), text);
        assertTrue(text.contains("one-stage"), text);
        assertTrue(text.contains("forced 1stage by environment variable SGLANG_CUSTOM_ALLREDUCE_ALGO"), text);
        assertTrue(text.contains("algorithm policy 1stage (from environment variable SGLANG_CUSTOM_ALLREDUCE_ALGO)"),
                text);
        assertTrue(text.contains("PCIe gate in force (AR4J_FORCE_CUSTOM_AR_PCIE=0 from default)"), text);
        assertTrue(text.contains("NCCL (forced algorithm fell back)"), text); // the misaligned line
        assertTrue(text.contains("4 ranks on one host"), text);

        String one = d.explain(64 * MIB, DType.FLOAT32, true, false);
        assertTrue(one.contains("NCCL") && one.contains("staging buffer"), one);
        assertTrue(one.contains("unregistered input"), one);
    }

    @Test
    void explainOfAutoDecisionNamesTheDefaultSource() {
        AllReduceDispatcher d = new AllReduceDispatcher(Topology.singleHost(8, true), DispatchConfig.defaults(), STAGING);
        String text = d.explain(MIB, DType.FLOAT16);
        assertTrue(text.contains("two-stage — auto: 8 ranks on NVLink, 256 KiB or more → two-stage"), text);
        assertTrue(text.contains("algorithm policy auto (from default)"), text);
    }

    @Test
    void formatsByteCountsInTheLargestWholeUnit() {
        assertEquals("512 KiB", AllReduceDispatcher.formatBytes(512 * KIB));
        assertEquals("8 MiB", AllReduceDispatcher.formatBytes(8 * MIB));
        assertEquals("2 GiB", AllReduceDispatcher.formatBytes(2048 * MIB));
        assertEquals("42 KiB", AllReduceDispatcher.formatBytes(43008));
        assertEquals("43000 bytes", AllReduceDispatcher.formatBytes(43000));
        assertEquals("16 bytes", AllReduceDispatcher.formatBytes(16));
    }
}
