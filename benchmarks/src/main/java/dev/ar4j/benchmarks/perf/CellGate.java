package dev.ar4j.benchmarks.perf;

import dev.ar4j.Communicator;
import dev.ar4j.DType;
import dev.ar4j.dispatch.Algorithm;
import dev.ar4j.dispatch.AlgorithmThresholds;
import dev.ar4j.dispatch.AllReduceDispatcher;
import dev.ar4j.dispatch.Decision;
import dev.ar4j.dispatch.DispatchConfig;
import dev.ar4j.dispatch.Topology;

import java.util.EnumMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Properties;

/**
 * Which all-reduce cells of a sweep can run. A communicator built with {@code nccl(false)}
 * ({@code --share-gpu}: NCCL refuses two ranks on one GPU) refuses a call that its dispatcher
 * sends to NCCL: a forced push above the push kernel's 512 KiB limit, an unregistered eager input
 * larger than the staging buffer, a size that is not a multiple of 16 bytes. Such a cell is not
 * runnable: the sweep reports it with the dispatcher's reason and goes on with the next cell
 * (instead of failing the run on the refusal). With NCCL every cell runs: a forced kernel that
 * cannot take the call falls back to NCCL, and the table says so.
 *
 * <p>The decision is the one the communicator makes for a call with the policy forced
 * ({@code Communicator.allReduce(..., Algorithm)}): the same topology, staging size and PCIe
 * gate. In a CUDA graph an unregistered input counts as registered (the runtime records it and
 * shares it when the capture scope closes), so a cell can be runnable in graph mode and not in
 * eager mode. Every rank decides alike, so every rank skips the same cells and no collective is
 * left unmatched.
 */
final class CellGate {
    private final boolean hasNccl;
    private final Map<PerfAlgorithm, AllReduceDispatcher> forced = new EnumMap<>(PerfAlgorithm.class);

    /**
     * @param topology          the group's topology
     * @param stagingBytes      the communicators' staging-buffer size, positive
     * @param forceCustomOnPcie whether {@code AR4J_FORCE_CUSTOM_AR_PCIE} lifts the PCIe gate (automatic policy)
     * @param hasNccl           whether the communicators have NCCL (false with {@code --share-gpu})
     */
    CellGate(Topology topology, long stagingBytes, boolean forceCustomOnPcie, boolean hasNccl) {
        Objects.requireNonNull(topology, "topology");
        this.hasNccl = hasNccl;
        for (PerfAlgorithm a : PerfAlgorithm.values()) {
            if (a.isAr4j()) {
                DispatchConfig config = DispatchConfig.builder().environment(Map.of()).systemProperties(new Properties())
                        .algorithmPolicy(a.policy().orElseThrow()).forceCustomOnPcie(forceCustomOnPcie).build();
                forced.put(a, AllReduceDispatcher.of(topology, config, stagingBytes,
                        AlgorithmThresholds.forWorldSize(topology.worldSize())));
            }
        }
    }

    /** The gate of {@code comm}'s group (its topology, staging size and NCCL), the PCIe gate as configured. */
    static CellGate of(Communicator comm) {
        return new CellGate(comm.topology(), comm.stagingBytes(), DispatchConfig.fromSystem().forceCustomOnPcie(),
                comm.hasNccl());
    }

    /**
     * Why one cell cannot run, if it cannot.
     *
     * @param algorithm       the column; the NCCL baselines are never gated here
     * @param mode            graph or eager
     * @param bytesPerCall    the size of one all-reduce of the cell
     * @param dtype           the element type
     * @param registeredInput whether the input is registered ({@code --registered})
     * @return empty when the cell can run; otherwise the dispatcher's reason and that there is no NCCL
     */
    Optional<String> notRunnable(PerfAlgorithm algorithm, TimingMode mode, long bytesPerCall, DType dtype,
                                 boolean registeredInput) {
        if (hasNccl || !algorithm.isAr4j()) {
            return Optional.empty();
        }
        boolean registered = registeredInput || mode == TimingMode.GRAPH;
        Decision d = forced.get(algorithm).decide(bytesPerCall, dtype, true, registered);
        if (d.algorithm() != Algorithm.NCCL) {
            return Optional.empty();
        }
        return Optional.of(d.reason() + ", and the communicators have no NCCL (built with nccl(false) for "
                + "--share-gpu)");
    }
}
