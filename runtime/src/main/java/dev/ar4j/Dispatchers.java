package dev.ar4j;

import dev.ar4j.dispatch.AlgorithmPolicy;
import dev.ar4j.dispatch.AlgorithmThresholds;
import dev.ar4j.dispatch.AllReduceDispatcher;
import dev.ar4j.dispatch.DispatchConfig;
import dev.ar4j.dispatch.Topology;

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
    private final Map<AlgorithmPolicy, AllReduceDispatcher> perPolicy = new EnumMap<>(AlgorithmPolicy.class);

    Dispatchers(Topology topology, DispatchConfig config, long stagingBytes, AlgorithmThresholds thresholds) {
        this.config = config;
        this.configured = new AllReduceDispatcher(topology, config, stagingBytes, thresholds);
        for (AlgorithmPolicy p : AlgorithmPolicy.values()) {
            DispatchConfig forced = DispatchConfig.builder().environment(Map.of()).systemProperties(new Properties())
                    .algorithmPolicy(p).forceCustomOnPcie(config.forceCustomOnPcie()).build();
            perPolicy.put(p, new AllReduceDispatcher(topology, forced, stagingBytes, thresholds));
        }
    }

    AllReduceDispatcher forPolicy(AlgorithmPolicy policy) {
        return perPolicy.get(policy);
    }
}
