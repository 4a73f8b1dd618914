package dev.ar4j.benchmarks.perf;

import dev.ar4j.DType;
import dev.ar4j.dispatch.AlgorithmThresholds;
import dev.ar4j.dispatch.AllReduceDispatcher;
import dev.ar4j.dispatch.Decision;
import dev.ar4j.dispatch.DispatchConfig;
import dev.ar4j.dispatch.Topology;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * {@code ar4j-perf --plan nvlink:4}: the dispatcher's decision, with its reason, for every size of
 * the sweep and a registered and an unregistered input, on a topology given by name. Needs no
 * GPU. The configuration is read as a communicator reads it (system properties, then
 * {@code AR4J_ALLREDUCE_ALGO}, the SGLang and vLLM variables, {@code AR4J_FORCE_CUSTOM_AR_PCIE}).
 */
public final class DispatchPlan {
    /** The topology names {@link #parseTopology} accepts. */
    public static final String ACCEPTED = "nvlink:N (one host, NVLink between every pair), pcie:N (one host, P2P "
            + "over PCIe), nop2p:N (one host, no P2P), multihost:N (ranks on several hosts); N = world size";

    private DispatchPlan() {
    }

    /**
     * Parses {@code nvlink:4}, {@code pcie:8}, {@code nop2p:2} or {@code multihost:16}.
     *
     * @param spec the value of {@code --plan}: a kind and a world size, case-insensitive
     * @return the topology described: one host with NVLink, PCIe P2P or no P2P, or several hosts
     * @throws IllegalArgumentException if the kind is unknown or the world size is not an integer of
     *                                  at least 1, with a message naming the accepted forms
     * @throws NullPointerException     if {@code spec} is null
     */
    public static Topology parseTopology(String spec) {
        Objects.requireNonNull(spec, "spec");
        String[] parts = spec.trim().toLowerCase(Locale.ROOT).split(":");
        if (parts.length != 2) {
            throw new IllegalArgumentException("--plan: '" + spec + "' is not a topology; accepted: " + ACCEPTED);
        }
        int n;
        try {
            n = Integer.parseInt(parts[1].trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--plan: '" + parts[1] + "' is not a world size; accepted: " + ACCEPTED, e);
        }
        if (n < 1) {
            throw new IllegalArgumentException("--plan: the world size must be at least 1, got " + n);
        }
        return switch (parts[0].trim()) {
            case "nvlink" -> Topology.singleHost(n, true);
            case "pcie" -> Topology.singleHost(n, false);
            case "nop2p" -> new Topology(n, false, false, true);
            case "multihost" -> new Topology(n, false, false, false);
            default -> throw new IllegalArgumentException("--plan: '" + parts[0] + "' is not a topology kind; accepted: "
                    + ACCEPTED);
        };
    }

    /**
     * Prints the plan: a header naming the topology and configuration, then one row per size with
     * the algorithm the dispatcher would choose for a registered and an unregistered input, and why.
     *
     * @param out          where the plan is printed
     * @param topology     the topology the dispatcher plans for ({@link #parseTopology})
     * @param config       the resolved configuration (normally {@link DispatchConfig#fromSystem()})
     * @param stagingBytes the staging buffer size a communicator would have
     * @param sizes        bytes per all-reduce, one row each, in order
     * @param dtype        the element type
     */
    public static void print(PrintStream out, Topology topology, DispatchConfig config, long stagingBytes,
                             List<Long> sizes, DType dtype) {
        AllReduceDispatcher dispatcher = AllReduceDispatcher.of(topology, config, stagingBytes,
                AlgorithmThresholds.forWorldSize(topology.worldSize()));
        out.println("# ar4j dispatch plan for " + topology.describe());
        out.println("# " + config.describe() + "; staging buffer " + ByteSizes.format(stagingBytes) + "B; "
                + InputPattern.dtypeLabel(dtype) + "; 16-byte aligned pointers");
        out.println("# registered: the input lies in a registered buffer or a CUDA graph is being captured;"
                + " unregistered: an eager call on any other buffer");
        Map<String, Integer> reasons = new LinkedHashMap<>();
        ResultTable.TextTable table = new ResultTable.TextTable();
        table.column("", "size", "(B)", false).column("", "count", "(elements)", false)
                .column("registered", "algorithm", "", true).column("", "why", "", true)
                .column("unregistered", "algorithm", "", true).column("", "why", "", true);
        for (long bytes : sizes) {
            Decision registered = dispatcher.decide(bytes, dtype, true, true);
            Decision unregistered = dispatcher.decide(bytes, dtype, true, false);
            List<String> row = new ArrayList<>();
            row.add(Long.toString(bytes));
            row.add(Long.toString(bytes / dtype.byteSize()));
            row.add(name(registered));
            row.add("[" + reasons.computeIfAbsent(registered.reason(), r -> reasons.size() + 1) + "]");
            row.add(name(unregistered));
            row.add("[" + reasons.computeIfAbsent(unregistered.reason(), r -> reasons.size() + 1) + "]");
            table.row(row);
        }
        table.print(out);
        out.println("# why:");
        for (Map.Entry<String, Integer> e : reasons.entrySet()) {
            out.println("#  [" + e.getValue() + "] " + e.getKey());
        }
        out.flush();
    }

    private static String name(Decision d) {
        return d.algorithm().configName() + (d.fellBack() ? " (fell back)" : "");
    }
}
