package dev.ar4j.benchmarks.perf;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ResultTableTest {

    private static String print(PerfReport report) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        ResultTable.print(new PrintStream(bytes, true, StandardCharsets.UTF_8), report);
        return bytes.toString(StandardCharsets.UTF_8);
    }

    @Test
    void sweepTableHasNcclTestsColumnsPerAlgorithmAndTheSpeedup() {
        String text = print(SyntheticResults.sweep());
        System.out.println(text);
        List<String> lines = text.lines().toList();
        String header = lines.stream().filter(l -> l.contains("size") && l.contains("count")).findFirst().orElseThrow();
        for (String column : List.of("type", "ran", "time", "algbw", "busbw", "#wrong", "speedup", "best")) {
            assertTrue(header.contains(column), column + " missing from " + header);
        }
        String groups = lines.stream().filter(l -> l.contains("- auto -")).findFirst().orElseThrow();
        for (String group : List.of("auto", "1stage", "2stage", "push", "nccl")) {
            assertTrue(groups.contains(" " + group + " "), group + " missing from " + groups);
        }
        // 1 KiB: push 0.9 * base against nccl 2 * base -> 2.22x, best push
        String first = lines.stream().filter(l -> l.trim().startsWith("1024 ")).findFirst().orElseThrow();
        assertTrue(first.contains("2.22x"), first);
        assertTrue(first.trim().endsWith("auto(push)") || first.trim().endsWith("push"), first);
        // 16 MiB: the forced 2stage fell back; the best ar4j kernel is 1stage (auto ran it too)
        String last = lines.stream().filter(l -> l.trim().startsWith("16777216 ")).findFirst().orElseThrow();
        assertTrue(last.contains("2stage→nccl"), last);
        assertTrue(last.contains("push→nccl"), last);
        assertTrue(text.contains("# nccl-symm not measured: NCCL 2.26.2"), text);
        assertTrue(text.contains("# #wrong: 0 in every result"), text);
        assertTrue(text.contains("# GPU 1: NVIDIA H200"), text);
    }

    @Test
    void bestSkipsFallbacksWrongResultsAndBaselines() {
        PerfReport report = SyntheticResults.sweep();
        List<PerfResult> at16M = report.results().stream().filter(r -> r.bytes() == 16L << 20).toList();
        Optional<PerfResult> ar4j = ResultTable.best(at16M, true);
        Optional<PerfResult> nccl = ResultTable.best(at16M, false);
        assertEquals("1stage", ar4j.orElseThrow().ran());
        assertEquals("nccl", nccl.orElseThrow().algorithm());
    }

    @Test
    void wrongResultsAreReportedAsFailed() {
        PerfReport report = SyntheticResults.sweep();
        report.add(new PerfResult("sweep", "graph", "out-of-place", false, 2, 2048, 1024, "bf16", "push", "push", false,
                "", 3.0, 3.0, 17, Double.NaN, Double.NaN, 1, 50, 7, 5));
        assertTrue(print(report).contains("# FAILED: 17 wrong elements"));
        assertEquals(17, report.totalWrong());
    }

    @Test
    void verifyTableShowsThePassTimeAndTheRatioToTheBestNccl() {
        PerfReport report = new PerfReport(SyntheticResults.settings(Scenario.VERIFY, List.of(Scenario.VERIFY_BYTES)), 2,
                "ar4j-perf --scenario verify", "one JVM per GPU", null);
        report.add(new PerfResult("verify", "graph", "out-of-place", false, 2, 43008, 21504, "bf16", "push", "push", false,
                "", 3.0, 3.1, 0, Double.NaN, Double.NaN, 122, 50, 7, 5));
        report.add(new PerfResult("verify", "graph", "out-of-place", false, 2, 43008, 21504, "bf16", "nccl", "nccl", false,
                "", 7.5, 7.6, 0, Double.NaN, Double.NaN, 122, 50, 7, 5));
        String text = print(report);
        System.out.println(text);
        String push = text.lines().filter(l -> l.trim().startsWith("push")).findFirst().orElseThrow();
        assertTrue(push.contains("366.00"), push);  // 122 x 3.0 us per pass
        assertTrue(push.contains("2.50x"), push);
    }

    @Test
    void eagerTablesShowTheHostTimePerCall() {
        PerfReport report = new PerfReport(SyntheticResults.settings(Scenario.SWEEP, List.of(43008L)), 2, "ar4j-perf --eager",
                "one JVM per GPU", null);
        report.add(new PerfResult("sweep", "eager", "out-of-place", false, 2, 43008, 21504, "bf16", "push", "push", false,
                "", 4.7, 4.8, 0, 6.25, 2.5, 1, 50, 7, 5));
        report.add(new PerfResult("sweep", "eager", "out-of-place", false, 2, 43008, 21504, "bf16", "nccl", "nccl", false,
                "", 20.0, 20.5, 0, 21.0, 3.0, 1, 50, 7, 5));
        String text = print(report);
        String header = text.lines().filter(l -> l.contains("size")).findFirst().orElseThrow();
        assertEquals(2, header.split("host").length - 1, header);
        String row = text.lines().filter(l -> l.trim().startsWith("43008")).findFirst().orElseThrow();
        assertTrue(row.contains("6.25") && row.contains("21.00") && row.contains("4.26x"), row);
    }
}
