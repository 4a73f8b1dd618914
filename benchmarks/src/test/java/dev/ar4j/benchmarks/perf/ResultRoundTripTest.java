package dev.ar4j.benchmarks.perf;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** CSV (Commons CSV) and JSON (jackson-jr) give back every value written, and the committed files still read. */
class ResultRoundTripTest {
    /** Cells a CSV writer and reader must agree on. */
    private static final List<String> NASTY = List.of("plain", "comma, inside", "quote \" inside", "\"quoted\"",
            "line one\nline two", "crlf\r\nend", "# looks like a comment", "  padded  ", "", "ünïcødé → µs ✓ 中文 😀",
            "back\\slash \\n not a newline", "trailing,", ",leading", "\n");

    private static PerfReport reportWithReasons(List<String> reasons) {
        PerfReport report = new PerfReport(SyntheticResults.settings(Scenario.SWEEP, List.of(1024L)), 2,
                "ar4j-perf --csv 'a,b \"c\"\nd'", "one JVM per GPU", null);
        report.machine(new MachineInfo(Map.of("date", "2026-11-30T12:00:00Z", "host", "h\nost,\"x\"\\y ü",
                "nccl", "2.28.3"), List.of("GPU 0: NVIDIA H200, sm_90", "GPU 1: NVIDIA H200, sm_90")));
        for (String reason : reasons) {
            report.add(new PerfResult("sweep", "graph", "out-of-place", false, 2, 1024, 512, "bf16", "push", "push",
                    false, reason, 2.5, 2.6, 0, Double.NaN, Double.NaN, 1, 50, 7, 5));
        }
        report.skip(PerfAlgorithm.NCCL_SYMMETRIC, "needs NCCL 2.27\nor newer, \"symmetric\"");
        return report;
    }

    @Test
    void everyCsvCellAndCommentValueRoundTrips(@TempDir Path dir) throws Exception {
        PerfReport report = reportWithReasons(NASTY);
        Path csv = dir.resolve("nasty.csv");
        ResultFiles.writeCsv(csv, report);
        ResultCsv read = ResultFiles.readCsvFile(csv);
        assertEquals(NASTY.size(), read.rows().size());
        for (int i = 0; i < NASTY.size(); i++) {
            assertEquals(NASTY.get(i), read.rows().get(i).get("reason"), "row " + i);
            assertEquals(report.results().get(i).csvCells(), List.copyOf(read.rows().get(i).values()), "row " + i);
        }
        assertEquals("h\nost,\"x\"\\y ü", read.metadata().get("host"));
        assertEquals("2.28.3", read.metadata().get("nccl"));
        assertEquals(List.of("GPU 0: NVIDIA H200, sm_90", "GPU 1: NVIDIA H200, sm_90"), read.gpus());
        assertEquals("needs NCCL 2.27\nor newer, \"symmetric\"", read.skipped().get("nccl-symm"));
        assertTrue(read.metadata().containsKey("ar4j_version"), read.metadata().toString());
        assertTrue(read.metadata().containsKey("ar4j_commit"), read.metadata().toString());
    }

    @Test
    void rowsAppendedWhileARunGoesReadBackToo(@TempDir Path dir) throws Exception {
        PerfReport report = reportWithReasons(List.of());
        Path csv = dir.resolve("partial.csv");
        report.streamTo(csv);
        for (String reason : NASTY) {
            report.add(new PerfResult("sweep", "graph", "out-of-place", false, 2, 2048, 1024, "bf16", "auto", "push",
                    false, reason, 3.0, 3.1, 0, Double.NaN, Double.NaN, 1, 50, 7, 5));
        }
        List<Map<String, String>> rows = ResultFiles.readCsv(csv);
        assertEquals(NASTY, rows.stream().map(r -> r.get("reason")).toList());
    }

    @Test
    void everyJsonValueRoundTrips(@TempDir Path dir) throws Exception {
        PerfReport report = reportWithReasons(NASTY);
        Path json = dir.resolve("nasty.json");
        ResultFiles.writeJson(json, report);
        Map<String, Object> root = ResultJson.read(json);
        assertEquals("ar4j-perf", root.get("tool"));
        assertTrue(root.get("ar4j_version") instanceof String);
        assertTrue(root.get("ar4j_commit") instanceof String);
        assertEquals(report.commandLine(), root.get("command"));
        Map<?, ?> machine = (Map<?, ?>) root.get("machine");
        assertEquals("h\nost,\"x\"\\y ü", machine.get("host"));
        assertEquals(List.of("GPU 0: NVIDIA H200, sm_90", "GPU 1: NVIDIA H200, sm_90"), machine.get("gpus"));
        assertEquals("needs NCCL 2.27\nor newer, \"symmetric\"", ((Map<?, ?>) root.get("skipped")).get("nccl-symm"));
        List<?> results = (List<?>) root.get("results");
        assertEquals(NASTY.size(), results.size());
        for (int i = 0; i < NASTY.size(); i++) {
            Map<?, ?> row = (Map<?, ?>) results.get(i);
            assertEquals(NASTY.get(i), row.get("reason"), "row " + i);
            assertEquals(1024, ((Number) row.get("bytes")).intValue());
            assertEquals(2.5, ((Number) row.get("time_us")).doubleValue(), 1e-12);
            assertEquals(Boolean.FALSE, row.get("fell_back"));
            assertTrue(row.containsKey("host_us"), "a figure that does not apply is written as null");
            assertNull(row.get("host_us"));
        }
        Map<?, ?> settings = (Map<?, ?>) root.get("settings");
        assertEquals(List.of("auto", "1stage", "2stage", "push", "nccl", "nccl-symm"), settings.get("algorithms"));
    }

    @Test
    void theCommittedResultFilesStillRead() throws Exception {
        for (String name : List.of("graph", "eager", "verify")) {
            Path csv = Path.of("results/perf/2026-11-30-ar4j-perf-" + name + ".csv");
            ResultCsv read = ResultFiles.readCsvFile(csv);
            assertEquals(name.equals("verify") ? 6 : 108, read.rows().size(), csv.toString());
            assertEquals("2.28.3", read.metadata().get("nccl"), csv.toString());
            assertEquals(2, read.gpus().size(), csv.toString());
            // Written before the operation and pdl columns existed: every other column, in order; the chart
            // reads their operation as all-reduce.
            List<String> before = PerfResult.COLUMNS.stream().filter(c -> !c.equals("operation") && !c.equals("pdl"))
                    .toList();
            assertEquals(before, List.copyOf(read.rows().getFirst().keySet()), csv.toString());
            assertEquals("all-reduce", LatencyChart.operationTitle(read.rows()), csv.toString());
        }
        Map<String, Object> json = ResultJson.read(Path.of("results/perf/2026-11-30-ar4j-perf-graph.json"));
        assertEquals(108, ((List<?>) json.get("results")).size());
    }

    @Test
    void aRowWithTheWrongNumberOfCellsOrAnOpenQuoteIsRefusedNamingTheFile(@TempDir Path dir) throws Exception {
        Path shortRow = Files.writeString(dir.resolve("short.csv"), "# nccl: 2.28.3\na,b,c\n1,2\n");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ResultFiles.readCsv(shortRow));
        assertTrue(e.getMessage().contains("short.csv") && e.getMessage().contains("2 cells"), e.getMessage());
        Path open = Files.writeString(dir.resolve("open.csv"), "a,b\n1,\"2\n", StandardCharsets.UTF_8);
        IllegalArgumentException o = assertThrows(IllegalArgumentException.class, () -> ResultFiles.readCsv(open));
        assertTrue(o.getMessage().contains("open.csv"), o.getMessage());
    }

    @Test
    void commentEscapesAreInverse() {
        for (String s : NASTY) {
            assertEquals(s, ResultFiles.unescape(ResultFiles.escape(s)));
            assertFalse(ResultFiles.escape(s).contains("\n"), s);
        }
        assertEquals("'it'\\''s'", ResultFiles.unescape("'it'\\''s'"), "an older file's lone backslash stays");
    }
}
