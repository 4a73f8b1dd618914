package dev.ar4j.benchmarks.perf;

import dev.ar4j.DType;
import dev.ar4j.dispatch.Topology;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A cell that communicators without NCCL ({@code --share-gpu}) would refuse is reported as not
 * runnable, with its reason, instead of stopping the sweep (no GPU needed).
 */
class NotRunnableCellTest extends CapturedOutput {
    private static final long STAGING = 8L << 20;
    private final CellGate withoutNccl = new CellGate(Topology.singleHost(2, true), STAGING, false, false);

    @Test
    void pushAboveItsLimitIsNotRunnableWithoutNcclAndSaysWhy() {
        Optional<String> why = withoutNccl.notRunnable(PerfAlgorithm.PUSH, TimingMode.GRAPH, 4L << 20, DType.BFLOAT16, false);
        assertTrue(why.isPresent(), "push of 4 MiB on nccl(false) communicators");
        assertTrue(why.get().contains("512 KiB") && why.get().contains("nccl(false)"), why.get());
        assertEquals(Optional.empty(), withoutNccl.notRunnable(PerfAlgorithm.PUSH, TimingMode.GRAPH, 512 * 1024,
                DType.BFLOAT16, false), "push up to its limit runs");
        assertEquals(Optional.empty(), withoutNccl.notRunnable(PerfAlgorithm.ONE_STAGE, TimingMode.GRAPH, 4L << 20,
                DType.BFLOAT16, false), "1stage of 4 MiB runs");
    }

    @Test
    void anUnregisteredEagerInputOverTheStagingBufferIsNotRunnableButRunsInAGraph() {
        long bytes = 2 * STAGING;
        Optional<String> eager = withoutNccl.notRunnable(PerfAlgorithm.ONE_STAGE, TimingMode.EAGER, bytes, DType.FLOAT32, false);
        assertTrue(eager.isPresent() && eager.get().contains("staging"), eager.toString());
        assertEquals(Optional.empty(), withoutNccl.notRunnable(PerfAlgorithm.ONE_STAGE, TimingMode.EAGER, bytes,
                DType.FLOAT32, true), "a registered input needs no staging copy");
        assertEquals(Optional.empty(), withoutNccl.notRunnable(PerfAlgorithm.ONE_STAGE, TimingMode.GRAPH, bytes,
                DType.FLOAT32, false), "a captured input is recorded, not staged");
    }

    @Test
    void withNcclEveryCellRuns() {
        CellGate withNccl = new CellGate(Topology.singleHost(2, true), STAGING, false, true);
        for (PerfAlgorithm a : PerfAlgorithm.values()) {
            for (TimingMode mode : TimingMode.values()) {
                assertEquals(Optional.empty(), withNccl.notRunnable(a, mode, 64L << 20, DType.BFLOAT16, false),
                        a.label() + " " + mode.label() + " falls back to NCCL, it is not refused");
            }
        }
        assertEquals(Optional.empty(), withoutNccl.notRunnable(PerfAlgorithm.NCCL, TimingMode.EAGER, 64L << 20,
                DType.BFLOAT16, false), "the NCCL baselines are not gated here");
    }

    @Test
    void theReportRecordsTheCellAndItsReasonAsANote() {
        ByteArrayOutputStream progress = new ByteArrayOutputStream();
        PerfReport report = new PerfReport(SyntheticResults.settings(Scenario.SWEEP, List.of(4L << 20)), 2,
                "ar4j-perf --share-gpu", "one JVM, one thread per GPU", new PrintStream(progress, true, StandardCharsets.UTF_8));
        report.notRunnable("graph out-of-place all-reduce of 4194304 bytes (push, pdl on)", "the reason");
        assertEquals(List.of("not runnable: graph out-of-place all-reduce of 4194304 bytes (push, pdl on): the reason"),
                report.notes());
        assertTrue(progress.toString(StandardCharsets.UTF_8).contains("[ar4j-perf] not runnable: graph out-of-place"),
                progress.toString(StandardCharsets.UTF_8));
        assertTrue(report.results().isEmpty());
    }

    @Test
    void theTableShowsTheCellsThatRanAndNotesTheOneThatCouldNot() {
        PerfReport report = new PerfReport(SyntheticResults.settings(Scenario.SWEEP, List.of(1024L, 4L << 20)), 2,
                "ar4j-perf --share-gpu", "one JVM, one thread per GPU", null);
        SyntheticResults.add(report, 1024, "push", "push", false, 2.5);
        SyntheticResults.add(report, 1024, "1stage", "1stage", false, 2.6);
        SyntheticResults.add(report, 4L << 20, "1stage", "1stage", false, 16.4);
        report.notRunnable("graph out-of-place all-reduce of 4194304 bytes (push, pdl default)", "over the push limit");
        ByteArrayOutputStream text = new ByteArrayOutputStream();
        ResultTable.print(new PrintStream(text, true, StandardCharsets.UTF_8), report);
        String table = text.toString(StandardCharsets.UTF_8);
        String row = table.lines().filter(l -> l.trim().startsWith("4194304")).findFirst().orElseThrow(() ->
                new AssertionError("no 4 MiB row:\n" + table));
        assertTrue(row.contains("16.40") && row.contains(" - "), "1stage measured, push not: " + row);
        assertTrue(table.contains("# note: not runnable: graph out-of-place all-reduce of 4194304 bytes (push, pdl "
                + "default): over the push limit"), table);
        assertTrue(table.contains("#wrong: 0"), table);
    }

    @Test
    void thePlanOfAOneGpuSweepListsTheCellsThatWillBeReportedNotRunnable() {
        assertEquals(ExitCodes.OK, Ar4jPerf.run("--plan", "nvlink:2", "--share-gpu", "--sizes", "1K,43008,256K,4M",
                "-a", "push,1stage,2stage", "--both"));
        List<String> notRunnable = out().lines().filter(l -> l.startsWith("# not runnable:")).toList();
        assertEquals(List.of("# not runnable: graph push 4194304 B", "# not runnable: eager push 4194304 B"),
                notRunnable.stream().map(l -> l.substring(0, l.indexOf(" B:") + 2)).toList(), out());
        assertTrue(notRunnable.getFirst().contains("push limit"), notRunnable.getFirst());
        assertFalse(out().contains("fails the run"), out());
    }
}
