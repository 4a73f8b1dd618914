package dev.ar4j.benchmarks.perf;

import dev.ar4j.DType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.imageio.ImageIO;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The operation and pdl columns round-trip through CSV and JSON; the tables, the chart series and
 * the titles carry them; verify-fused's table has the fused row with what ran.
 */
class NewColumnsTest {
    private static PerfSettings settings(Scenario scenario, Operation op, List<Long> sizes, List<PerfAlgorithm> columns,
                                         List<PdlSetting> pdl) {
        return new PerfSettings(scenario, sizes, DType.BFLOAT16, columns, 5, 50, 7, List.of(TimingMode.GRAPH),
                List.of(Placement.OUT_OF_PLACE), false, 8L << 20, false, Duration.ofSeconds(120), 1, op, pdl, false);
    }

    private static PerfResult row(String scenario, String op, String pdl, long bytes, String algorithm, String ran,
                                  double us, int perPass) {
        return new PerfResult(scenario, "graph", "out-of-place", false, 4, bytes, bytes / 2, "bf16", algorithm, ran,
                false, "reason", us, us * 1.01, 0, Double.NaN, Double.NaN, perPass, 50, 7, 5, op, pdl);
    }

    private static PerfReport allGather() {
        List<Long> sizes = List.of(1024L, 1L << 20);
        PerfReport report = new PerfReport(settings(Scenario.SWEEP, Operation.ALL_GATHER, sizes,
                List.of(PerfAlgorithm.NCCL, PerfAlgorithm.NCCL_SYMMETRIC), List.of(PdlSetting.ON, PdlSetting.OFF)), 4,
                "ar4j-perf -o allgather --pdl on,off", "one JVM per GPU", null);
        report.machine(new MachineInfo(Map.of("date", "2026-12-01T10:00:00Z", "nccl", "2.28.3"),
                List.of("GPU 0: NVIDIA H200, sm_90", "GPU 1: NVIDIA H200, sm_90")));
        for (String pdl : List.of("on", "off")) {
            for (long bytes : sizes) {
                report.add(row("sweep", "allgather", pdl, bytes, "nccl", "nccl", 10 + bytes / 1e5, 1));
                report.add(row("sweep", "allgather", pdl, bytes, "nccl-symm", "nccl-symm", 8 + bytes / 1e5, 1));
            }
        }
        report.noteOnce(PdlSetting.NOT_REPORTED);
        report.noteOnce(PdlSetting.NOT_REPORTED);
        return report;
    }

    private static PerfReport fused() {
        long bytes = PerfSettings.fusedBytes(DType.BFLOAT16);
        PerfReport report = new PerfReport(settings(Scenario.VERIFY_FUSED, Operation.ALL_REDUCE, List.of(bytes),
                PerfAlgorithm.parseListWithBaselines(List.of("push")), List.of(PdlSetting.DEFAULT)), 4,
                "ar4j-perf --scenario verify-fused", "one JVM per GPU", null);
        report.add(row("verify-fused", "allreduce", "default", bytes, "push+norm", "push+norm", 4.0, 122));
        report.add(row("verify-fused", "allreduce", "default", bytes, "nccl+norm", "nccl+norm", 9.0, 122));
        report.add(row("verify-fused", "allreduce", "default", bytes, "nccl-symm+norm", "nccl-symm+norm", 8.0, 122));
        report.add(row("verify-fused", "allreduce", "default", bytes, "fused", "fused", 3.0, 122));
        return report;
    }

    @Test
    void operationAndPdlRoundTripThroughCsvAndJson(@TempDir Path dir) throws Exception {
        PerfReport report = allGather();
        Path csv = dir.resolve("ag.csv");
        Path json = dir.resolve("ag.json");
        ResultFiles.writeCsv(csv, report);
        ResultFiles.writeJson(json, report);
        ResultCsv read = ResultFiles.readCsvFile(csv);
        assertEquals(PerfResult.COLUMNS, List.copyOf(read.rows().getFirst().keySet()));
        for (int i = 0; i < report.results().size(); i++) {
            assertEquals(report.results().get(i).csvCells(), List.copyOf(read.rows().get(i).values()), "row " + i);
        }
        assertEquals("allgather", read.rows().getFirst().get("operation"));
        assertEquals(List.of("on", "on", "on", "on", "off", "off", "off", "off"),
                read.rows().stream().map(r -> r.get("pdl")).toList());
        PerfResult first = report.results().getFirst();
        assertEquals(first.algbwGBps() * 0.75, Double.parseDouble(read.rows().getFirst().get("busbw_gbps")), 1e-3,
                "all-gather busbw on 4 ranks: algbw x 3/4");

        Map<String, Object> root = ResultJson.read(json);
        Map<?, ?> settings = (Map<?, ?>) root.get("settings");
        assertEquals("allgather", settings.get("operation"));
        assertEquals(List.of("on", "off"), settings.get("pdl"));
        assertEquals(List.of(PdlSetting.NOT_REPORTED), root.get("notes"), "noted once");
        Map<?, ?> r0 = (Map<?, ?>) ((List<?>) root.get("results")).getFirst();
        assertEquals("allgather", r0.get("operation"));
        assertEquals("on", r0.get("pdl"));
        assertEquals(first.busbwGBps(), ((Number) r0.get("busbw_gbps")).doubleValue(), 1e-3);
    }

    @Test
    void tablesAreGroupedByOperationAndPdlAndSayWhatWasNotReported() {
        ByteArrayOutputStream text = new ByteArrayOutputStream();
        ResultTable.print(new PrintStream(text, true, StandardCharsets.UTF_8), allGather());
        String t = text.toString(StandardCharsets.UTF_8);
        assertTrue(t.contains("# allgather: 4 ranks (one JVM per GPU), pdl on, bf16, CUDA graph (50 all-gathers per graph)"), t);
        assertTrue(t.contains("pdl off, bf16"), t);
        assertTrue(!t.contains("speedup"), "no ar4j column, no speed-up: " + t);
        assertTrue(t.contains("# note: pdl setting not reported by the runtime"), t);
        assertTrue(t.contains("checked against the exact all-gather of the inputs"), t);
        assertTrue(t.contains("# pdl off against on"), t);
        assertTrue(t.matches("(?s).*allgather\\s+graph\\s+out-of-place\\s+1024\\s+nccl\\s+nccl\\s+10\\.01\\s+10\\.01"
                + "\\s+1\\.000x.*"), t);
    }

    @Test
    void pdlPairsAreOnlyCellsMeasuredCorrectlyBothWays() {
        PerfResult off = row("sweep", "allreduce", "off", 1024, "push", "push", 3.0, 1);
        PerfResult on = row("sweep", "allreduce", "on", 1024, "push", "push", 2.0, 1);
        PerfResult otherSize = row("sweep", "allreduce", "on", 2048, "push", "push", 2.0, 1);
        PerfResult wrongOn = new PerfResult("sweep", "graph", "out-of-place", false, 4, 1024, 512, "bf16", "auto",
                "push", false, "", 1.0, 1.0, 5, Double.NaN, Double.NaN, 1, 50, 7, 5, "allreduce", "on");
        PerfResult autoOff = row("sweep", "allreduce", "off", 1024, "auto", "push", 3.0, 1);
        List<PdlComparison.Pair> pairs = PdlComparison.pairs(List.of(off, on, otherSize, wrongOn, autoOff));
        assertEquals(1, pairs.size(), pairs.toString());
        assertEquals(1.5, pairs.getFirst().speedup(), 1e-12);
        assertTrue(PdlComparison.pairs(List.of(row("sweep", "allreduce", "default", 1024, "push", "push", 3, 1)))
                .isEmpty(), "no --pdl: nothing to compare");
    }

    @Test
    void theFusedTableHasTheFusedRowWithWhatRan() {
        ByteArrayOutputStream text = new ByteArrayOutputStream();
        ResultTable.print(new PrintStream(text, true, StandardCharsets.UTF_8), fused());
        String t = text.toString(StandardCharsets.UTF_8);
        assertTrue(t.contains("--scenario verify-fused: 122 x (all-reduce of 43008 bytes bf16 = 3 x 7168, then residual "
                + "add + RMSNorm) per pass"), t);
        assertTrue(t.matches("(?s).*push\\+norm\\s+push\\+norm\\s+488\\.00\\s+4\\.00.*2\\.00x.*"), "vs best NCCL (symm): " + t);
        assertTrue(t.matches("(?s).*\\n\\s+fused\\s+fused\\s+366\\.00\\s+3\\.00.*2\\.67x.*"), t);
        assertTrue(!t.contains("not available") && !t.contains("not measured"), t);
        assertTrue(t.contains("host RMSNorm within 0.016 relative"), t);
        assertTrue(new PerfResult("verify-fused", "graph", "out-of-place", false, 2, 43008, 21504, "bf16", "push+norm",
                "push+norm", false, "", 1, 1, 0, Double.NaN, Double.NaN, 122, 50, 7, 5).ranCustomKernel());
        PerfResult fellBackToTwoKernels = new PerfResult("verify-fused", "graph", "out-of-place", false, 2, 43008, 21504,
                "bf16", "fused", "push+norm", false, "", 1, 1, 0, Double.NaN, Double.NaN, 122, 50, 7, 5);
        assertTrue(fellBackToTwoKernels.ranCustomKernel(), "the runtime's push + the separate kernel");
        assertEquals(SweepSeries.Kind.FELL_BACK, SweepSeries.classify(Map.of("algorithm", "fused", "ran", "push+norm",
                "fell_back", "false")), "drawn as not what the row names");
    }

    @Test
    void chartsDrawBothPdlSettingsAndTheFusedBarsWithTheOperationInTheTitle(@TempDir Path dir) throws Exception {
        Path csv = dir.resolve("ag.csv");
        ResultFiles.writeCsv(csv, allGather());
        ResultCsv read = ResultFiles.readCsvFile(csv);
        SweepSeries series = SweepSeries.of(read.rows());
        assertEquals(List.of("nccl (graph, out-of-place, pdl on)", "nccl-symm (graph, out-of-place, pdl on)",
                "nccl (graph, out-of-place, pdl off)", "nccl-symm (graph, out-of-place, pdl off)"),
                List.copyOf(series.baselines().keySet()), "one series per pdl setting");
        assertEquals("all-gather", LatencyChart.operationTitle(read.rows()));
        assertTrue(!SeriesStyle.paint("nccl (graph, out-of-place, pdl on)").equals(
                SeriesStyle.paint("nccl (graph, out-of-place, pdl off)")), "pdl off is drawn lighter");
        assertEquals(SeriesStyle.paint("push"), SeriesStyle.paint("push+norm"), "a +norm row takes its kernel's colour");
        ChartTitle title = ChartTitle.of(read, LatencyChart.operationTitle(read.rows()) + " latency");
        assertTrue(title.title().startsWith("ar4j all-gather latency: 4 × NVIDIA H200"), title.title());
        assertTrue(title.subtitle().contains("pdl on/off"), title.subtitle());
        assertEquals(4, LatencyChart.draw(read, dir.resolve("ag.png"), null));
        assertEquals(LatencyChart.HEIGHT, ImageIO.read(dir.resolve("ag.png").toFile()).getHeight());

        Path fusedCsv = dir.resolve("fused.csv");
        ResultFiles.writeCsv(fusedCsv, fused());
        ResultCsv fusedRead = ResultFiles.readCsvFile(fusedCsv);
        assertTrue(!fusedRead.skipped().containsKey("fused"), fusedRead.skipped().toString());
        assertEquals(List.of("push+norm", "nccl+norm", "nccl-symm+norm", "fused"),
                fusedRead.rows().stream().map(r -> r.get("algorithm")).toList());
        assertEquals(4, LatencyChart.draw(fusedRead, dir.resolve("fused.png"), null), "one bar per measured variant");
        assertEquals(LatencyChart.VERIFY_HEIGHT, ImageIO.read(dir.resolve("fused.png").toFile()).getHeight());
    }
}
