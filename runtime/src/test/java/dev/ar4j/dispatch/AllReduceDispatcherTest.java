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

    private static DispatchConfig config(Algorithm policy, boolean gateLifted) {
        return new DispatchConfig(policy, new SettingSource.BuilderValue(), gateLifted, new SettingSource.BuilderValue());
    }

    private static AllReduceDispatcher dispatcher(Topology topology, Algorithm policy) {
        return AllReduceDispatcher.of(topology, config(policy, false), STAGING);
    }

    @Test
    void twoRanksPushUpTo256KiBAndRunOneStageAbove() {
        AllReduceDispatcher d = dispatcher(Topology.singleHost(2, true), Algorithm.AUTO);
        for (long bytes : new long[] {16, KIB, 43008, 256 * KIB}) {
            for (boolean registered : new boolean[] {true, false}) {
                Decision decision = d.decide(bytes, DType.BFLOAT16, true, registered);
                assertEquals(new Decision(Algorithm.PUSH,
                        "auto: world size 2, up to 256 KiB → push (needs no registration or staging copy)",
                        false), decision, bytes + " bytes, registered " + registered);
            }
        }
        for (long bytes : new long[] {256 * KIB + 16, 512 * KIB, 512 * KIB + 16, STAGING}) {
            Decision decision = d.decide(bytes, DType.BFLOAT16, true, false);
            assertEquals(new Decision(Algorithm.ONE_STAGE, "auto: world size 2, over 256 KiB → one-stage", false, true),
                    decision, bytes + " bytes: an unregistered input is staged");
            assertEquals(new Decision(Algorithm.ONE_STAGE, "auto: world size 2, over 256 KiB → one-stage", false, false),
                    d.decide(bytes, DType.BFLOAT16, true, true), bytes + " bytes: a registered input is read in place");
        }
        // Registered inputs are bounded by their buffer, not by staging: still one-stage.
        assertEquals(Algorithm.ONE_STAGE, d.decide(64 * MIB, DType.BFLOAT16, true, true).algorithm());
        // Unregistered inputs beyond the staging buffer go to NCCL.
        Decision tooLarge = d.decide(STAGING + 16, DType.BFLOAT16, true, false);
        assertEquals(Algorithm.NCCL, tooLarge.algorithm());
        assertTrue(tooLarge.reason().contains("8 MiB staging buffer"), tooLarge.reason());
    }

    @Test
    void unregisteredInputsPushEvenWhenLargerThanASmallStagingBuffer() {
        AllReduceDispatcher d = AllReduceDispatcher.of(Topology.singleHost(2, true),
                config(Algorithm.AUTO, false), 64 * KIB);
        Decision push = d.decide(256 * KIB, DType.FLOAT16, true, false);
        assertEquals(Algorithm.PUSH, push.algorithm());
        assertFalse(push.fellBack());
        assertEquals(Algorithm.PUSH, d.decide(64 * KIB + 16, DType.FLOAT16, true, false).algorithm());
        // Above the push threshold one-stage needs the staging copy, which 64 KiB cannot hold.
        Decision overStaging = d.decide(256 * KIB + 16, DType.FLOAT16, true, false);
        assertEquals(new Decision(Algorithm.NCCL, "auto: the input is not registered and is larger than the 64 KiB"
                + " staging buffer it would be copied into → NCCL", false), overStaging);
        assertEquals(Algorithm.ONE_STAGE, d.decide(256 * KIB + 16, DType.FLOAT16, true, true).algorithm());

        AllReduceDispatcher forced = AllReduceDispatcher.of(Topology.singleHost(4, true),
                config(Algorithm.PUSH, false), 64 * KIB);
        assertEquals(Algorithm.PUSH, forced.decide(512 * KIB, DType.FLOAT16, true, false).algorithm());
        Decision overLimit = forced.decide(512 * KIB + 16, DType.FLOAT16, true, false);
        assertTrue(overLimit.fellBack());
        assertTrue(overLimit.reason().contains("512 KiB push limit"), overLimit.reason());
        assertFalse(overLimit.reason().contains("staging"), overLimit.reason());
    }

    @Test
    void nvlinkThresholdsSwitchFromPushToOneStageToTwoStage() {
        AllReduceDispatcher four = dispatcher(Topology.singleHost(4, true), Algorithm.AUTO);
        Decision fourPush = four.decide(256 * KIB, DType.FLOAT32, true, true);
        assertEquals(Algorithm.PUSH, fourPush.algorithm());
        assertTrue(fourPush.reason().startsWith("auto: 4 ranks on NVLink, up to 256 KiB → push"),
                fourPush.reason());
        Decision fourOneStage = four.decide(256 * KIB + 16, DType.FLOAT32, true, true);
        assertEquals(new Decision(Algorithm.ONE_STAGE,
                "auto: 4 ranks on NVLink, over 256 KiB and under 512 KiB → one-stage", false), fourOneStage);
        assertEquals(Algorithm.ONE_STAGE, four.decide(512 * KIB - 16, DType.FLOAT32, true, true).algorithm());
        assertEquals(Algorithm.TWO_STAGE, four.decide(512 * KIB, DType.FLOAT32, true, true).algorithm());

        AllReduceDispatcher eight = dispatcher(Topology.singleHost(8, true), Algorithm.AUTO);
        assertEquals(Algorithm.PUSH, eight.decide(256 * KIB - 16, DType.FLOAT32, true, true).algorithm());
        assertEquals(Algorithm.PUSH, eight.decide(256 * KIB, DType.FLOAT32, true, false).algorithm());
        Decision large = eight.decide(256 * KIB + 16, DType.FLOAT32, true, true);
        assertEquals(new Decision(Algorithm.TWO_STAGE, "auto: 8 ranks on NVLink, over 256 KiB → two-stage", false),
                large);
        // Two-stage's scratch is sized like staging, so a registered input beyond it goes to NCCL.
        Decision beyondScratch = eight.decide(64 * MIB, DType.FLOAT32, true, true);
        assertEquals(Algorithm.NCCL, beyondScratch.algorithm());
        assertFalse(beyondScratch.fellBack());
        assertTrue(beyondScratch.reason().contains("8 MiB two-stage scratch"), beyondScratch.reason());
    }

    @Test
    void thresholdsAreConfigurable() {
        AllReduceDispatcher d = AllReduceDispatcher.of(Topology.singleHost(4, true), config(Algorithm.AUTO, false),
                STAGING, new AlgorithmThresholds(16 * KIB, 64 * KIB, 32 * KIB));
        assertEquals(Algorithm.PUSH, d.decide(16 * KIB, DType.FLOAT16, true, true).algorithm());
        assertEquals(Algorithm.ONE_STAGE, d.decide(16 * KIB + 16, DType.FLOAT16, true, true).algorithm());
        assertEquals(Algorithm.ONE_STAGE, d.decide(64 * KIB - 16, DType.FLOAT16, true, true).algorithm());
        assertEquals(Algorithm.TWO_STAGE, d.decide(64 * KIB, DType.FLOAT16, true, true).algorithm());
        assertEquals(new AlgorithmThresholds(16 * KIB, 64 * KIB, 32 * KIB), d.thresholds());

        // A push threshold of 0 keeps the automatic policy off the push kernel; forcing it still works.
        AlgorithmThresholds noPush = AlgorithmThresholds.DEFAULTS.withPushUpToBytes(0);
        Decision two = AllReduceDispatcher.of(Topology.singleHost(2, true), config(Algorithm.AUTO, false),
                STAGING, noPush).decide(16, DType.FLOAT16, true, true);
        assertEquals(new Decision(Algorithm.ONE_STAGE, "auto: world size 2 → one-stage", false), two);
        assertEquals(Algorithm.PUSH, AllReduceDispatcher.of(Topology.singleHost(2, true),
                config(Algorithm.PUSH, false), STAGING, noPush).decide(16, DType.FLOAT16, true, true).algorithm());

        // The push threshold may reach the kernel's limit, inclusive.
        AllReduceDispatcher atLimit = AllReduceDispatcher.of(Topology.singleHost(2, true),
                config(Algorithm.AUTO, false), STAGING, AlgorithmThresholds.DEFAULTS.withPushUpToBytes(512 * KIB));
        assertEquals(Algorithm.PUSH, atLimit.decide(512 * KIB, DType.BFLOAT16, true, true).algorithm());
        assertEquals(Algorithm.ONE_STAGE, atLimit.decide(512 * KIB + 16, DType.BFLOAT16, true, true).algorithm());
    }

    @Test
    void pcieGateBlocksAutoButNotForcedAndCanBeLifted() {
        Topology pcie = Topology.singleHost(4, false);
        Decision gated = dispatcher(pcie, Algorithm.AUTO).decide(KIB, DType.BFLOAT16, true, true);
        assertEquals(Algorithm.NCCL, gated.algorithm());
        assertFalse(gated.fellBack());
        assertTrue(gated.reason().contains("AR4J_FORCE_CUSTOM_AR_PCIE=1"), gated.reason());

        AllReduceDispatcher lifted = AllReduceDispatcher.of(pcie, config(Algorithm.AUTO, true), STAGING);
        Decision liftedPush = lifted.decide(KIB, DType.BFLOAT16, true, true);
        assertEquals(Algorithm.PUSH, liftedPush.algorithm());
        assertTrue(liftedPush.reason().contains("PCIe (gate lifted by builder)"), liftedPush.reason());
        Decision liftedOneStage = lifted.decide(MIB - 16, DType.BFLOAT16, true, true);
        assertEquals(Algorithm.TWO_STAGE, liftedOneStage.algorithm());
        assertTrue(liftedOneStage.reason().contains("PCIe (gate lifted by builder)"), liftedOneStage.reason());

        Decision forced = dispatcher(pcie, Algorithm.TWO_STAGE).decide(KIB, DType.BFLOAT16, true, true);
        assertEquals(Algorithm.TWO_STAGE, forced.algorithm());
        assertTrue(forced.reason().contains("PCIe gate does not apply"), forced.reason());
        Decision forcedPush = dispatcher(pcie, Algorithm.PUSH).decide(512 * KIB, DType.BFLOAT16, true, false);
        assertEquals(new Decision(Algorithm.PUSH, "forced push by builder (the PCIe gate does not apply to a forced"
                + " algorithm) → push (needs no registration or staging copy)", false), forcedPush);

        // Two GPUs over PCIe are not gated.
        AllReduceDispatcher twoOnPcie = dispatcher(Topology.singleHost(2, false), Algorithm.AUTO);
        assertEquals(Algorithm.PUSH, twoOnPcie.decide(KIB, DType.BFLOAT16, true, true).algorithm());
        assertEquals(Algorithm.ONE_STAGE, twoOnPcie.decide(MIB, DType.BFLOAT16, true, true).algorithm());
    }

    @Test
    void forcedAlgorithmsAreHonouredOrFallBackWithAReason() {
        Topology nvlink4 = Topology.singleHost(4, true);
        assertEquals(Algorithm.ONE_STAGE, dispatcher(nvlink4, Algorithm.ONE_STAGE)
                .decide(4 * MIB, DType.FLOAT32, true, true).algorithm());
        assertEquals(Algorithm.ONE_STAGE, dispatcher(nvlink4, Algorithm.ONE_STAGE)
                .decide(16, DType.FLOAT32, true, true).algorithm());
        assertEquals(Algorithm.TWO_STAGE, dispatcher(nvlink4, Algorithm.TWO_STAGE)
                .decide(16, DType.FLOAT32, true, true).algorithm());
        assertEquals(Algorithm.TWO_STAGE, dispatcher(Topology.singleHost(2, true), Algorithm.TWO_STAGE)
                .decide(KIB, DType.FLOAT32, true, true).algorithm());
        Decision nccl = dispatcher(nvlink4, Algorithm.NCCL).decide(16, DType.FLOAT32, true, true);
        assertEquals(Algorithm.NCCL, nccl.algorithm());
        assertFalse(nccl.fellBack());

        Decision unaligned = dispatcher(Topology.singleHost(2, true), Algorithm.ONE_STAGE)
                .decide(43010, DType.BFLOAT16, true, true);
        assertEquals(new Decision(Algorithm.NCCL,
                "forced 1stage by builder, but the byte count is not a multiple of 16 → NCCL", true), unaligned);

        Decision oddWorld = dispatcher(Topology.singleHost(3, true), Algorithm.TWO_STAGE)
                .decide(KIB, DType.BFLOAT16, true, true);
        assertTrue(oddWorld.fellBack());
        assertTrue(oddWorld.reason().contains("world size 3 is not 2, 4, 6 or 8"), oddWorld.reason());

        Decision misaligned = dispatcher(nvlink4, Algorithm.ONE_STAGE).decide(KIB, DType.BFLOAT16, false, true);
        assertTrue(misaligned.fellBack());
        assertTrue(misaligned.reason().contains("16-byte aligned"), misaligned.reason());
    }

    @Test
    void forcedPushRunsUpTo512KiBAndFallsBackAbove() {
        AllReduceDispatcher d = dispatcher(Topology.singleHost(8, true), Algorithm.PUSH);
        Decision push = d.decide(16, DType.BFLOAT16, true, true);
        assertEquals(new Decision(Algorithm.PUSH,
                "forced push by builder → push (needs no registration or staging copy)", false), push);
        for (long bytes : new long[] {256 * KIB, 256 * KIB + 16, 512 * KIB}) {
            for (boolean registered : new boolean[] {true, false}) {
                assertSame(push, d.decide(bytes, DType.BFLOAT16, true, registered), bytes + " bytes");
            }
        }
        for (long bytes : new long[] {512 * KIB + 16, 64 * MIB}) {
            for (boolean registered : new boolean[] {true, false}) {
                assertEquals(new Decision(Algorithm.NCCL, "forced push by builder, but the input is larger than the"
                        + " 512 KiB push limit (AR4J_PUSH_MAX_BYTES) → NCCL", true),
                        d.decide(bytes, DType.BFLOAT16, true, registered), bytes + " bytes");
            }
        }
        Decision misaligned = d.decide(KIB, DType.FLOAT32, false, false);
        assertEquals(new Decision(Algorithm.NCCL, "forced push by builder, but a pointer is not 16-byte aligned → NCCL",
                true), misaligned);
        assertTrue(d.decide(43010, DType.BFLOAT16, true, true).fellBack());
        Decision twoHosts = dispatcher(new Topology(2, true, true, false), Algorithm.PUSH)
                .decide(KIB, DType.FLOAT32, true, true);
        assertEquals(new Decision(Algorithm.NCCL, "forced push by builder, but the ranks span several hosts → NCCL",
                true), twoHosts);
    }

    @Test
    void topologyThatRulesOutCustomKernelsGivesNccl() {
        Topology twoHosts = new Topology(4, true, true, false);
        Decision d = dispatcher(twoHosts, Algorithm.AUTO).decide(KIB, DType.FLOAT32, true, true);
        assertEquals(new Decision(Algorithm.NCCL, "auto: the ranks span several hosts → NCCL", false), d);
        Decision noP2p = dispatcher(new Topology(2, false, false, true), Algorithm.AUTO)
                .decide(KIB, DType.FLOAT32, true, true);
        assertTrue(noP2p.reason().contains("P2P"), noP2p.reason());
        Decision three = dispatcher(Topology.singleHost(3, true), Algorithm.AUTO)
                .decide(KIB, DType.FLOAT32, true, true);
        assertEquals(new Decision(Algorithm.NCCL, "auto: world size 3 is not 2, 4, 6 or 8 → NCCL", false), three);
    }

    @Test
    void worldSizeOneCommunicatesNothing() {
        Decision single = dispatcher(Topology.singleHost(1, true), Algorithm.AUTO)
                .decide(KIB, DType.FLOAT32, true, true);
        assertEquals(new Decision(Algorithm.LOCAL, "auto: world size 1 → local copy: no communication; allReduce "
                + "is a copy (out of place) or nothing (in place)", false), single);
    }

    @Test
    void decisionsAreCachedInstances() {
        AllReduceDispatcher d = dispatcher(Topology.singleHost(8, true), Algorithm.AUTO);
        assertSame(d.decide(16, DType.BFLOAT16, true, true), d.decide(4 * KIB, DType.FLOAT32, true, false));
        assertSame(d.decide(256 * KIB, DType.BFLOAT16, true, true), d.decide(16, DType.FLOAT16, true, false));
        assertSame(d.decide(256 * KIB + 16, DType.BFLOAT16, true, true), d.decide(MIB, DType.FLOAT16, true, true));
        assertSame(d.decide(256 * KIB + 16, DType.BFLOAT16, true, false), d.decide(MIB, DType.FLOAT16, true, false));
        assertTrue(d.decide(MIB, DType.FLOAT16, true, false).staged(), "an unregistered two-stage input is staged");
        assertFalse(d.decide(MIB, DType.FLOAT16, true, true).staged(), "a registered one is read in place");
        assertFalse(d.decide(16, DType.FLOAT16, true, false).staged(), "push reads its input in place");
        assertSame(d.decide(18, DType.BFLOAT16, true, true), d.decide(43010, DType.FLOAT16, false, false));
        assertSame(d.decide(32, DType.BFLOAT16, false, true), d.decide(64, DType.FLOAT32, false, false));
    }

    @Test
    void emptyNegativeAndPartialElementSizesAreRejected() {
        AllReduceDispatcher d = dispatcher(Topology.singleHost(2, true), Algorithm.AUTO);
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
                () -> AllReduceDispatcher.of(topology, auto, 0));
        assertTrue(staging.getMessage().contains("staging"), staging.getMessage());
        assertThrows(NullPointerException.class, () -> AllReduceDispatcher.of(null, auto, STAGING));
        assertThrows(NullPointerException.class, () -> AllReduceDispatcher.of(topology, null, STAGING));
        assertThrows(NullPointerException.class, () -> AllReduceDispatcher.of(topology, auto, STAGING, null));
        assertThrows(IllegalArgumentException.class, () -> AlgorithmThresholds.oneStage(0, 256 * KIB));
        assertThrows(IllegalArgumentException.class, () -> AlgorithmThresholds.oneStage(512 * KIB, -1));
        IllegalArgumentException overPushLimit = assertThrows(IllegalArgumentException.class,
                () -> new AlgorithmThresholds(512 * KIB + 16, 512 * KIB, 256 * KIB));
        assertTrue(overPushLimit.getMessage().contains("524288") && overPushLimit.getMessage().contains("524304"),
                overPushLimit.getMessage());
        assertThrows(IllegalArgumentException.class, () -> AlgorithmThresholds.DEFAULTS.withPushUpToBytes(-16));
    }

    @Test
    void explainNamesTheAlgorithmTheReasonAndTheWinningSources() {
        DispatchConfig config = DispatchConfig.builder()
                .environment(Map.of(DispatchConfig.SGLANG_ALGORITHM_ENV, "oneshot"))
                .systemProperties(new Properties())
                .build();
        AllReduceDispatcher d = AllReduceDispatcher.of(Topology.singleHost(4, true), config, STAGING);
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
        AllReduceDispatcher d = AllReduceDispatcher.of(Topology.singleHost(8, true), DispatchConfig.defaults(), STAGING);
        String text = d.explain(MIB, DType.FLOAT16);
        assertTrue(text.contains("two-stage — auto: 8 ranks on NVLink, over 256 KiB → two-stage"), text);
        assertTrue(text.contains("algorithm policy auto (from default)"), text);
        assertTrue(text.contains("automatic push up to 256 KiB, one-stage below 512 KiB up to 4 ranks"), text);
    }

    @Test
    void explainSaysWhetherAnUnregisteredInputIsCopiedIntoStaging() {
        AllReduceDispatcher d = dispatcher(Topology.singleHost(2, true), Algorithm.AUTO);
        String push = d.explain(43008, DType.BFLOAT16);
        assertTrue(push.contains("unregistered input, 16-byte aligned pointers: push — auto: world size 2,"
                + " up to 256 KiB → push (needs no registration or staging copy)\n"), push);
        assertFalse(push.contains("copied into the staging buffer"), push);
        assertFalse(push.contains("copies the input"), push);

        String oneStage = d.explain(MIB, DType.BFLOAT16, true, false);
        assertTrue(oneStage.contains("unregistered input, 16-byte aligned pointers: one-stage — auto: world size 2,"
                + " over 256 KiB → one-stage; the eager path first copies the input into the 8 MiB staging buffer"),
                oneStage);
        String registered = d.explain(MIB, DType.BFLOAT16, true, true);
        assertTrue(registered.contains("registered or captured input"), registered);
        assertFalse(registered.contains("staging buffer;"), registered);
        assertFalse(registered.contains("copies the input"), registered);

        String off = AllReduceDispatcher.of(Topology.singleHost(2, true), config(Algorithm.AUTO, false), STAGING,
                AlgorithmThresholds.DEFAULTS.withPushUpToBytes(0)).explain(KIB, DType.FLOAT32);
        assertTrue(off.contains("automatic push off"), off);
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
