package dev.ar4j.internal.engine;

import dev.ar4j.DType;
import dev.ar4j.dispatch.Algorithm;
import dev.ar4j.dispatch.AlgorithmThresholds;
import dev.ar4j.dispatch.AllReduceDispatcher;
import dev.ar4j.dispatch.Decision;
import dev.ar4j.dispatch.DispatchConfig;
import dev.ar4j.dispatch.Topology;
import dev.ar4j.nccl.NcclDisabledException;

import java.util.EnumMap;
import java.util.Map;
import java.util.Properties;

/**
 * The dispatchers of one communicator: the configured one, and one per policy for calls that
 * override the policy (the PCIe gate stays as configured).
 */
final class Dispatchers {

    final DispatchConfig config;
    final AllReduceDispatcher configured;
    private final Map<Algorithm, AllReduceDispatcher> perPolicy = new EnumMap<>(Algorithm.class);

    Dispatchers(Topology topology, DispatchConfig config, long stagingBytes, AlgorithmThresholds thresholds) {
        this.config = config;
        this.configured = AllReduceDispatcher.of(topology, config, stagingBytes, thresholds);
        for (Algorithm p : Algorithm.values()) {
            if (!p.isPolicy()) {
                continue;
            }
            DispatchConfig forced = DispatchConfig.builder().environment(Map.of()).systemProperties(new Properties())
                    .algorithmPolicy(p).forceCustomOnPcie(config.forceCustomOnPcie()).build();
            perPolicy.put(p, AllReduceDispatcher.of(topology, forced, stagingBytes, thresholds));
        }
    }

    /**
     * The refusal of a call that needs NCCL on a group built without it ({@code nccl(false)}):
     * names the size, the dtype and why the dispatcher chose NCCL.
     */
    static NcclDisabledException ncclRefusal(int rank, long bytes, DType dtype, Decision decision) {
        return new NcclDisabledException("rank " + rank + ": an all-reduce of " + bytes + " bytes of " + dtype
                + " needs NCCL (" + decision.reason() + ") but this communicator was built with nccl(false); "
                + "use a size, alignment and registration the custom kernels take (see explain(bytes, dtype)), or "
                + "build with NCCL");
    }

    /**
     * The dispatcher of one per-call policy.
     *
     * @throws IllegalArgumentException for {@link Algorithm#LOCAL}, which is never a policy
     */
    AllReduceDispatcher forPolicy(Algorithm policy) {
        if (!policy.isPolicy()) {
            throw new IllegalArgumentException(policy + " is not an algorithm policy (the dispatcher of a world size "
                    + "of 1 decides it itself); pass one of " + Algorithm.ACCEPTED_VALUES);
        }
        return perPolicy.get(policy);
    }
}
