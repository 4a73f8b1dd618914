package dev.ar4j.dispatch;

import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The value types: {@link Algorithm}, {@link Algorithm}, {@link Decision}, {@link Topology}, sources. */
class DispatchTypesTest {

    @Test
    void algorithmCodesMatchTheCAbi() {
        assertEquals(1, Algorithm.ONE_STAGE.kernelCode());
        assertEquals(2, Algorithm.TWO_STAGE.kernelCode());
        assertEquals(3, Algorithm.PUSH.kernelCode());
        assertEquals(524288, Algorithm.PUSH_MAX_BYTES);
        assertEquals("push", Algorithm.PUSH.displayName());
        IllegalStateException e = assertThrows(IllegalStateException.class, Algorithm.NCCL::kernelCode);
        assertTrue(e.getMessage().contains("ncclAllReduce"), e.getMessage());
        assertTrue(Algorithm.ONE_STAGE.isCustomKernel());
        assertTrue(Algorithm.TWO_STAGE.isCustomKernel());
        assertTrue(Algorithm.PUSH.isCustomKernel());
        assertFalse(Algorithm.NCCL.isCustomKernel());
        Set<String> names = Arrays.stream(Algorithm.values()).map(Algorithm::displayName).collect(Collectors.toSet());
        assertEquals(Algorithm.values().length, names.size(), "display names are distinct");
    }

    @Test
    void policyParsesEverySpellingCaseInsensitivelyAndTrimmed() {
        // "oneshot" keeps its SGLang/vLLM meaning (the one-stage kernel), not the push kernel; no name
        // of the push kernel says "shot".
        Map<String, Algorithm> spellings = Map.ofEntries(
                Map.entry("auto", Algorithm.AUTO), Map.entry(" AUTO ", Algorithm.AUTO),
                Map.entry("1stage", Algorithm.ONE_STAGE), Map.entry("OneShot", Algorithm.ONE_STAGE),
                Map.entry("2Stage", Algorithm.TWO_STAGE), Map.entry("\ttwoshot\n", Algorithm.TWO_STAGE),
                Map.entry("push", Algorithm.PUSH), Map.entry(" PUSH", Algorithm.PUSH),
                Map.entry("lamport", Algorithm.PUSH), Map.entry("Lamport ", Algorithm.PUSH),
                Map.entry("force_1stage", Algorithm.ONE_STAGE), Map.entry("FORCE_2STAGE", Algorithm.TWO_STAGE),
                Map.entry("nccl", Algorithm.NCCL), Map.entry("NCCL", Algorithm.NCCL));
        spellings.forEach((text, policy) -> assertEquals(policy, Algorithm.parse(text, "test"), text));
        for (Algorithm policy : Algorithm.values()) {
            if (policy.isPolicy()) {
                assertEquals(policy, Algorithm.parse(policy.configName(), "test"), "round trip of " + policy);
            } else {
                assertThrows(IllegalArgumentException.class, () -> Algorithm.parse(policy.configName(), "test"),
                        policy + " is no policy");
            }
        }
        for (String name : Algorithm.ACCEPTED_VALUES.split(", ")) {
            Algorithm p = Algorithm.parse(name, "test");
            assertEquals(name.contains("shot") || name.contains("1stage") || name.contains("2stage"),
                    p == Algorithm.ONE_STAGE || p == Algorithm.TWO_STAGE, name + " -> " + p);
        }
        assertEquals("push", Algorithm.PUSH.displayName(), "the push kernel is not called one-shot");
    }

    @Test
    void policyRejectsUnknownValuesNamingSourceAndAcceptedValues() {
        for (String bad : new String[] {"", "  ", "3stage", "one-stage", "ncc", "oneshot-push", "pushes"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> Algorithm.parse(bad, "environment variable AR4J_ALLREDUCE_ALGO"));
            assertTrue(e.getMessage().startsWith("environment variable AR4J_ALLREDUCE_ALGO"), e.getMessage());
            assertTrue(e.getMessage().contains("auto, 1stage, oneshot, force_1stage, 2stage, twoshot, force_2stage, push, lamport, nccl"),
                    e.getMessage());
        }
    }

    @Test
    void autoIsAskedForButNeverLaunchedOrDecided() {
        assertEquals("auto", Algorithm.AUTO.configName());
        assertEquals("push", Algorithm.PUSH.configName());
        assertFalse(Algorithm.AUTO.isCustomKernel());
        assertThrows(IllegalStateException.class, Algorithm.AUTO::kernelCode);
        assertThrows(IllegalArgumentException.class, () -> new Decision(Algorithm.AUTO, "why", false));
    }

    @Test
    void decisionInvariants() {
        assertThrows(IllegalArgumentException.class, () -> new Decision(Algorithm.NCCL, " ", false));
        assertThrows(IllegalArgumentException.class, () -> new Decision(Algorithm.PUSH, "x", false, true),
                "only the one-stage and two-stage kernels read a staged copy");
        assertThrows(IllegalArgumentException.class, () -> new Decision(Algorithm.NCCL, "x", false, true));
        assertTrue(new Decision(Algorithm.TWO_STAGE, "x", false, true).staged());
        assertFalse(new Decision(Algorithm.TWO_STAGE, "x", false).staged());
        assertThrows(NullPointerException.class, () -> new Decision(null, "why", false));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new Decision(Algorithm.ONE_STAGE, "why", true));
        assertTrue(e.getMessage().contains("NCCL"), e.getMessage());
        assertTrue(new Decision(Algorithm.NCCL, "why", true).fellBack());
    }

    @Test
    void topologyValidatesAndOverrides() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new Topology(0, true, true, true));
        assertTrue(e.getMessage().contains("0"), e.getMessage());
        Topology t = Topology.singleHost(8, true);
        assertEquals(new Topology(8, true, true, true), t);
        assertEquals(new Topology(4, false, false, false),
                t.withWorldSize(4).withFullNvlink(false).withP2pAllPairs(false).withSingleHost(false));
        assertEquals("8 ranks on one host, NVLink between every pair, P2P between every pair", t.describe());
    }

    @Test
    void settingSourcesDescribeThemselves() {
        assertEquals("builder", new SettingSource.BuilderValue().describe());
        assertEquals("default", new SettingSource.DefaultValue().toString());
        assertEquals("system property a.b", new SettingSource.SystemProperty("a.b").describe());
        assertEquals("environment variable X_Y", new SettingSource.EnvironmentVariable("X_Y").toString());
        assertThrows(IllegalArgumentException.class, () -> new SettingSource.EnvironmentVariable(" "));
    }

    @Test
    void thresholdsGiveThePushLimitAndTheOneStageLimitPerWorldSize() {
        AlgorithmThresholds t = AlgorithmThresholds.DEFAULTS;
        assertEquals(256 * 1024, t.pushUpToBytes());
        assertEquals(AlgorithmThresholds.DEFAULT_PUSH_UP_TO_BYTES, t.pushUpToBytes());
        assertEquals(512 * 1024, t.upTo4RanksBytes());
        assertEquals(256 * 1024, t.upTo8RanksBytes());
        assertEquals(Long.MAX_VALUE, t.oneStageBelowBytes(2));
        assertEquals(512 * 1024, t.oneStageBelowBytes(4));
        assertEquals(256 * 1024, t.oneStageBelowBytes(6));
        assertEquals(256 * 1024, t.oneStageBelowBytes(8));
        assertEquals(0, t.oneStageBelowBytes(9));
        assertEquals(128 * 1024, AlgorithmThresholds.oneStage(64 * 1024, 128 * 1024).oneStageBelowBytes(4));
        assertEquals(new AlgorithmThresholds(256 * 1024, 64 * 1024, 128 * 1024),
                AlgorithmThresholds.oneStage(64 * 1024, 128 * 1024));
        assertEquals(new AlgorithmThresholds(0, 512 * 1024, 256 * 1024), t.withPushUpToBytes(0));
        assertEquals(524288, t.withPushUpToBytes(524288).pushUpToBytes());
        for (long bad : new long[] {-1, 524304, Long.MAX_VALUE}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> t.withPushUpToBytes(bad));
            assertTrue(e.getMessage().contains("push threshold") && e.getMessage().contains("524288")
                    && e.getMessage().contains(Long.toString(bad)), e.getMessage());
        }
    }

    @Test
    void twoRanksPushUpToThePushLimitByDefaultMoreRanksKeepTheDefaults() {
        assertEquals(Algorithm.PUSH_MAX_BYTES, AlgorithmThresholds.forWorldSize(2).pushUpToBytes());
        assertEquals(AlgorithmThresholds.DEFAULTS.upTo4RanksBytes(), AlgorithmThresholds.forWorldSize(2).upTo4RanksBytes());
        for (int ws : new int[] {4, 6, 8}) {
            assertEquals(AlgorithmThresholds.DEFAULTS, AlgorithmThresholds.forWorldSize(ws), "world size " + ws);
        }
    }
}
