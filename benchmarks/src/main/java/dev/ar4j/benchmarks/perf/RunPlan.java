package dev.ar4j.benchmarks.perf;

import dev.ar4j.DType;
import dev.ar4j.dispatch.Algorithm;
import dev.ar4j.dispatch.AlgorithmThresholds;
import dev.ar4j.dispatch.AllReduceDispatcher;
import dev.ar4j.dispatch.Decision;
import dev.ar4j.dispatch.DispatchConfig;
import dev.ar4j.dispatch.Topology;
import dev.ar4j.RmsNorm;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * {@code ar4j-perf --plan TOPOLOGY}: what a run with these options would measure, without a GPU.
 * For the all-reduce, the dispatcher's decision for every size ({@link DispatchPlan}); for
 * {@code -o allgather|reducescatter|broadcast}, the NCCL call, the per-rank count and the
 * bus-bandwidth factor of every size; for {@code --scenario verify-fused}, its rows (the fused
 * row: whether {@code Communicator.allReduceResidualRmsNorm} would run its fused kernel); and the
 * PDL settings.
 */
final class RunPlan {
    private RunPlan() {
    }

    /**
     * Prints the plan of {@code settings} on {@code topology}.
     *
     * @param threads the process model ({@link WorkerLauncher#threads}): every rank a thread of one JVM
     */
    static void print(PrintStream out, Topology topology, DispatchConfig config, PerfSettings settings, boolean threads) {
        DType dtype = settings.dtype();
        Operation op = settings.operation();
        int n = topology.worldSize();
        out.println("# ar4j-perf plan: -o " + op.label() + ", --scenario " + settings.scenario().label() + ", "
                + InputPattern.dtypeLabel(dtype) + ", " + n + " ranks, columns "
                + settings.algorithms().stream().map(PerfAlgorithm::label).collect(Collectors.joining(",")));
        printPdl(out, settings.pdl());
        out.println("# process model: " + (threads ? "one JVM, every rank a thread of it (Communicator.localGroup)"
                : "one JVM per GPU"));
        if (settings.shareGpu()) {
            out.println("# --share-gpu: every rank on GPU 0, each a thread of one JVM (one CUDA context: the ranks' "
                    + "kernels run at the same time; separate processes would be time-sliced), built with nccl(false): "
                    + "ar4j's kernels only (NCCL refuses two ranks on one GPU); a cell whose kernel would fall back to "
                    + "NCCL is reported as not runnable and the sweep goes on; the sharing distorts absolute times");
            printNotRunnable(out, topology, config, settings);
        }
        if (settings.scenario() == Scenario.VERIFY_FUSED) {
            printFused(out, topology, config, settings);
        } else if (op == Operation.ALL_REDUCE) {
            DispatchPlan.print(out, topology, config, settings.stagingBytes(), settings.sizes(), dtype);
        } else {
            printCollective(out, op, n, settings.sizes(), dtype);
        }
        out.flush();
    }

    /** With {@code --share-gpu}: the cells the run will report as not runnable ({@link CellGate}), with why. */
    private static void printNotRunnable(PrintStream out, Topology topology, DispatchConfig config, PerfSettings settings) {
        CellGate gate = new CellGate(topology, settings.stagingBytes(), config.forceCustomOnPcie(), false);
        for (TimingMode mode : settings.modes()) {
            for (long bytes : settings.sizes()) {
                long effective = settings.operation().effectiveBytes(bytes, topology.worldSize(), settings.dtype());
                if (effective == 0) {
                    continue;
                }
                long perCall = settings.workload(effective).bytesPerCall();
                for (PerfAlgorithm a : settings.algorithms()) {
                    gate.notRunnable(a, mode, perCall, settings.dtype(), settings.registeredInput()).ifPresent(why ->
                            out.println("# not runnable: " + mode.label() + " " + a.label() + " " + perCall + " B: " + why));
                }
            }
        }
    }

    private static void printPdl(PrintStream out, List<PdlSetting> pdl) {
        if (pdl.equals(List.of(PdlSetting.DEFAULT))) {
            out.println("# pdl: the runtime's default (no --pdl: -D" + PdlSetting.PROPERTY + " is not set)");
            return;
        }
        List<String> parts = new ArrayList<>();
        for (PdlSetting p : pdl) {
            parts.add(p.label() + " (Builder.pdl(" + p.enabled().orElseThrow() + "), -D" + PdlSetting.PROPERTY + "="
                    + p.propertyValue().orElseThrow() + ")");
        }
        out.println("# pdl: every measurement once per setting, the communicators rebuilt for each: "
                + String.join(", then ", parts) + "; the row's pdl column says which. If the runtime does not mention "
                + "PDL in its self-description, the run notes \"pdl setting not reported by the runtime\"");
    }

    private static void printCollective(PrintStream out, Operation op, int n, List<Long> sizes, DType dtype) {
        String call = switch (op) {
            case ALL_GATHER -> "ncclAllGather(send, receive, sendCount)";
            case REDUCE_SCATTER -> "ncclReduceScatter(send, receive, receiveCount, ncclSum)";
            case BROADCAST -> "ncclBroadcast(send, receive, count, root " + Operation.ROOT + ")";
            case ALL_REDUCE -> throw new IllegalArgumentException("the all-reduce plan is DispatchPlan's");
        };
        out.println("# " + op.title() + " runs through NCCL only: Communicator.collectives()." + call
                + "; busbw = algbw x " + String.format(Locale.ROOT, "%.4f", op.busFactor(n)) + " ("
                + (op == Operation.BROADCAST ? "1" : "(n-1)/n") + ", nccl-tests); size = "
                + (op == Operation.ALL_GATHER ? "the receive buffer (n x sendCount)" : op == Operation.REDUCE_SCATTER
                ? "the send buffer (n x receiveCount)" : "the buffer") + "; checked exactly (#wrong)");
        ResultTable.TextTable table = new ResultTable.TextTable();
        table.column("", "size", "(B)", false).column("", "measured", "(B)", false)
                .column("", "count", "(NCCL's)", false).column("", "send", "(B)", false)
                .column("", "receive", "(B)", false).column("", "runs", "", true);
        for (long bytes : sizes) {
            long effective = op.effectiveBytes(bytes, n, dtype);
            if (effective == 0) {
                table.row(List.of(Long.toString(bytes), "0", "-", "-", "-", "skipped: under one element per rank"));
                continue;
            }
            CollectiveLayout layout = CollectiveLayout.of(op, effective, n, 0, dtype, false);
            table.row(List.of(Long.toString(bytes), Long.toString(effective), Long.toString(layout.count()),
                    Long.toString(layout.sendBytes()), Long.toString(layout.receiveBytes()), "nccl, nccl-symm"));
        }
        table.print(out);
    }

    /**
     * The fused row: {@code Communicator.allReduceResidualRmsNorm} runs one fused kernel where the
     * configured policy picks push for the size (unregistered, aligned) and the row is a multiple of
     * 16 bytes of at most {@code FUSED_MAX_HIDDEN} elements; otherwise the all-reduce, then the
     * separate kernel (as {@code Communicator.explainResidualRmsNorm} says on a GPU).
     */
    private static List<String> fusedRow(Topology topology, DispatchConfig config, PerfSettings settings, long bytes) {
        DType dtype = settings.dtype();
        AllReduceDispatcher dispatcher = AllReduceDispatcher.of(topology, config, settings.stagingBytes(),
                AlgorithmThresholds.forWorldSize(topology.worldSize()));
        Decision d = dispatcher.decide(bytes, dtype, true, false);
        long rowBytes = (long) FusedNormCheck.HIDDEN * dtype.byteSize();
        boolean fusedKernel = d.algorithm() == Algorithm.PUSH && rowBytes % 16 == 0
                && FusedNormCheck.HIDDEN <= RmsNorm.FUSED_MAX_HIDDEN;
        String call = "Communicator.allReduceResidualRmsNorm";
        return fusedKernel
                ? List.of(FusedVariant.FUSED, call + " -> fused (push: " + d.reason() + ")",
                        "nothing: the one kernel adds the residual and normalises")
                : List.of(FusedVariant.FUSED, call + " -> " + d.algorithm().configName() + " (" + d.reason()
                        + "), ran " + d.algorithm().configName() + FusedVariant.NORM_SUFFIX,
                        "ResidualRmsNorm (the runtime's fallback: no fused kernel for this all-reduce)");
    }

    private static void printFused(PrintStream out, Topology topology, DispatchConfig config, PerfSettings settings) {
        DType dtype = settings.dtype();
        long bytes = settings.sizes().getFirst();
        out.println("# verify-fused: " + Scenario.VERIFY_ALL_REDUCES + " x (all-reduce of " + FusedNormCheck.ROWS + " x "
                + FusedNormCheck.HIDDEN + " " + InputPattern.dtypeLabel(dtype) + " = " + bytes + " B, then residual add + "
                + "RMSNorm, eps " + FusedNormCheck.EPS + ") in one CUDA graph; time per pass; checked against a host "
                + "reference: all-reduce and residualOut exact, out within " + FusedNormCheck.tolerance(dtype)
                + " relative");
        ResultTable.TextTable table = new ResultTable.TextTable();
        table.column("", "row", "", true).column("", "all-reduce", "", true).column("", "then", "", true);
        for (PerfAlgorithm a : settings.algorithms()) {
            String allReduce;
            if (a.isAr4j()) {
                DispatchConfig forced = DispatchConfig.builder().algorithmPolicy(a.policy().orElseThrow())
                        .forceCustomOnPcie(config.forceCustomOnPcie()).build();
                AllReduceDispatcher dispatcher = AllReduceDispatcher.of(topology, forced, settings.stagingBytes(),
                        AlgorithmThresholds.forWorldSize(topology.worldSize()));
                Decision d = dispatcher.decide(bytes, dtype, true, true);
                allReduce = "ar4j " + a.label() + " -> " + d.algorithm().configName()
                        + (d.fellBack() ? " (fell back: " + d.reason() + ")" : "");
            } else {
                allReduce = a == PerfAlgorithm.NCCL ? "ncclAllReduce" : "ncclAllReduce on symmetric windows";
            }
            table.row(List.of(FusedVariant.label(a), allReduce, "RmsNorm.residualRmsNorm (a separate kernel)"));
        }
        table.row(fusedRow(topology, config, settings, bytes));
        table.print(out);
    }
}
