package dev.ar4j.internal.engine;

import dev.ar4j.DType;
import dev.ar4j.cuda.CudaException;
import dev.ar4j.dispatch.Algorithm;
import dev.ar4j.dispatch.AlgorithmThresholds;
import dev.ar4j.dispatch.AllReduceDispatcher;
import dev.ar4j.dispatch.Decision;
import dev.ar4j.dispatch.DispatchConfig;
import dev.ar4j.dispatch.SettingSource;
import dev.ar4j.dispatch.Topology;
import dev.ar4j.internal.platform.NativeLibraries;
import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.Properties;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A group of one rank costs nothing (CPU): it sets up no NCCL whatever the NCCL setting, every
 * decision is {@link Algorithm#LOCAL} with a reason that says so, whatever the policy, size,
 * alignment or registration, {@code explain} says that nothing is communicated, an in-place
 * all-reduce touches no CUDA at all and an out-of-place one is exactly one {@code cudaMemcpyAsync}
 * (on this machine without a driver it reaches libcudart, which refuses it), and the residual
 * RMSNorm call is described as one kernel. The GPU side is {@code dev.ar4j.it.WorldSizeOneIT}.
 */
class WorldSizeOneTest {

    private static Settings settings(Boolean nccl, String property, String env) {
        Settings.Draft d = new Settings.Draft();
        d.ncclEnabled = nccl;
        d.systemProperties = new Properties();
        if (property != null) {
            d.systemProperties.setProperty(BuilderChecks.NCCL_PROPERTY, property);
        }
        d.environment = env == null ? Map.of() : Map.of(BuilderChecks.NCCL_ENV, env);
        return d.freeze();
    }

    @Test
    void aGroupOfOneSetsUpNoNcclWhateverTheSetting() {
        for (Settings s : new Settings[] {settings(null, null, null), settings(true, null, null),
                settings(null, "true", null), settings(null, null, "1"), settings(false, null, null)}) {
            assertFalse(GroupParts.ncclWanted(1, s), "world size 1 never wants NCCL");
        }
        assertTrue(GroupParts.ncclWanted(2, settings(null, null, null)), "world size 2 sets NCCL up by default");
        assertTrue(GroupParts.ncclWanted(3, settings(true, null, null)));
        assertFalse(GroupParts.ncclWanted(2, settings(false, null, null)), "nccl(false) still turns it off");
        assertFalse(GroupParts.ncclWanted(4, settings(null, null, "0")));
    }

    private static AllReduceDispatcher dispatcher(Algorithm policy, boolean p2p, boolean singleHost) {
        DispatchConfig config = new DispatchConfig(policy, new SettingSource.BuilderValue(), false,
                new SettingSource.BuilderValue());
        return AllReduceDispatcher.of(new Topology(1, false, p2p, singleHost), config, 8L << 20,
                AlgorithmThresholds.forWorldSize(1));
    }

    @Test
    void everyDecisionOfAGroupOfOneIsALocalCopy() {
        for (Algorithm policy : Algorithm.values()) {
            if (!policy.isPolicy()) {
                continue;
            }
            for (boolean p2p : new boolean[] {false, true}) {
                for (boolean host : new boolean[] {false, true}) {
                    AllReduceDispatcher d = dispatcher(policy, p2p, host);
                    Decision first = d.decide(16, DType.BFLOAT16, true, false);
                    for (long bytes : new long[] {2, 16, 43008, 43010, 1L << 20, 64L << 20, 1L << 33}) {
                        for (boolean aligned : new boolean[] {false, true}) {
                            for (boolean registered : new boolean[] {false, true}) {
                                Decision decision = d.decide(bytes, DType.BFLOAT16, aligned, registered);
                                assertSame(first, decision, "one decision for every call");
                            }
                        }
                    }
                    assertEquals(Algorithm.LOCAL, first.algorithm(), policy.toString());
                    assertFalse(first.fellBack());
                    assertFalse(first.staged());
                    assertTrue(first.reason().contains("world size 1 → local copy: no communication; allReduce is a "
                            + "copy (out of place) or nothing (in place)"), first.reason());
                    assertTrue(first.reason().startsWith(policy == Algorithm.AUTO ? "auto: " : "forced "
                            + policy.configName()), first.reason());
                }
            }
        }
    }

    @Test
    void explainSaysNothingIsCommunicated() {
        String text = Observation.explain(dispatcher(Algorithm.AUTO, true, true), 1, false, false, 43008,
                DType.BFLOAT16);
        assertTrue(text.contains("world size 1 → local copy"), text);
        assertTrue(text.contains(Observation.SOLO), text);
        assertTrue(text.contains("libnccl is not loaded"), text);
        assertFalse(text.contains("nccl(false)"), "a group of one is not a group built without NCCL: " + text);
        assertFalse(text.contains("custom kernels are not set up"), text);
        String two = Observation.explain(AllReduceDispatcher.of(Topology.singleHost(2, true),
                DispatchConfig.defaults(), 8L << 20), 2, true, true, 43008, DType.BFLOAT16);
        assertFalse(two.contains("world size 1"), two);
    }

    @Test
    void theResidualNormOfAGroupOfOneIsOneKernel() {
        Decision d = dispatcher(Algorithm.AUTO, true, true).decide(3 * 4096 * 2, DType.BFLOAT16, true, false);
        String text = ResidualNormCalls.describeSolo(d, 4096, DType.BFLOAT16, true);
        assertTrue(text.startsWith("auto: world size 1 → local copy"), text);
        assertTrue(text.contains("one residual add + RMSNorm kernel on the input and nothing else (no all-reduce, "
                + "no copy; 16-byte loads"), text);
        assertTrue(text.contains("programmatic dependent launch requested"), text);
        String odd = ResidualNormCalls.describeSolo(d, 4099, DType.BFLOAT16, false);
        assertTrue(odd.contains("element loads: a row of 4099 BFLOAT16 is not a multiple of 16 bytes"), odd);
        assertTrue(odd.contains("programmatic dependent launch off"), odd);
    }

    @Test
    void inPlaceEnqueuesNothingOutOfPlaceIsOneDeviceCopy() {
        // In place: returns before any CUDA call (on this driverless machine any call would throw).
        LocalCopy.allReduce(0x7f00_0000_0000L, 0x7f00_0000_0000L, 43008, 0);
        IllegalArgumentException overlap = assertThrows(IllegalArgumentException.class,
                () -> LocalCopy.allReduce(0x7f00_0000_0000L, 0x7f00_0000_0010L, 43008, 0));
        assertTrue(overlap.getMessage().contains("overlaps the input"), overlap.getMessage());
        // Out of place: the one cudaMemcpyAsync, refused here by libcudart for want of a driver.
        NativeLibraries.cudart();
        CudaException e = assertThrows(CudaException.class,
                () -> LocalCopy.allReduce(0x7f00_0000_0000L, 0x7f10_0000_0000L, 43008, 0));
        assertTrue(e.getMessage().contains("cudaMemcpyAsync(device -> device)"), e.getMessage());
    }

    @Test
    void localIsNeverAPolicy() {
        assertFalse(Algorithm.LOCAL.isPolicy());
        assertFalse(Algorithm.LOCAL.isCustomKernel());
        assertThrows(IllegalStateException.class, Algorithm.LOCAL::kernelCode);
        assertThrows(IllegalArgumentException.class, () -> new DispatchConfig(Algorithm.LOCAL,
                new SettingSource.BuilderValue(), false, new SettingSource.BuilderValue()));
        Dispatchers d = new Dispatchers(Topology.singleHost(1, true), DispatchConfig.defaults(), 8L << 20,
                AlgorithmThresholds.forWorldSize(1));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> d.forPolicy(Algorithm.LOCAL));
        assertTrue(e.getMessage().contains("not an algorithm policy"), e.getMessage());
        assertEquals(Algorithm.LOCAL, d.forPolicy(Algorithm.NCCL).decide(64, DType.FLOAT32, true, true).algorithm(),
                "a per-call policy changes nothing at world size 1");
    }
}
