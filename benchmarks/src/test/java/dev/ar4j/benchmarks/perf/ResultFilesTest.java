package dev.ar4j.benchmarks.perf;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ResultFilesTest {

    @Test
    void csvRoundTripsEveryResultWithQuotedCellsAndMachineComments(@TempDir Path dir) throws Exception {
        PerfReport report = SyntheticResults.sweep();
        Path csv = dir.resolve("sub/results.csv");
        ResultFiles.writeCsv(csv, report);
        String text = Files.readString(csv, StandardCharsets.UTF_8);
        assertTrue(text.startsWith("# "), "machine description comes first as comments");
        assertTrue(text.contains("# nvidia_driver: 580.159.04"));
        assertTrue(text.contains("# skipped nccl-symm: NCCL 2.26.2"));

        List<Map<String, String>> rows = ResultFiles.readCsv(csv);
        assertEquals(report.results().size(), rows.size());
        assertEquals(PerfResult.COLUMNS, List.copyOf(rows.getFirst().keySet()));
        for (int i = 0; i < rows.size(); i++) {
            PerfResult r = report.results().get(i);
            Map<String, String> row = rows.get(i);
            assertEquals(r.algorithm(), row.get("algorithm"));
            assertEquals(r.ran(), row.get("ran"));
            assertEquals(Long.toString(r.bytes()), row.get("bytes"));
            assertEquals(r.timeUs(), Double.parseDouble(row.get("time_us")), 1e-4);
            assertEquals(r.busbwGBps(), Double.parseDouble(row.get("busbw_gbps")), 1e-3);
            assertEquals(r.reason(), row.get("reason"));
            assertEquals("", row.get("host_us"), "graph rows have no host time");
        }
    }

    @Test
    void readingAFileWithoutHeaderSaysSo(@TempDir Path dir) throws Exception {
        Path csv = Files.writeString(dir.resolve("empty.csv"), "# only a comment\n");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ResultFiles.readCsv(csv));
        assertTrue(e.getMessage().contains("no header"), e.getMessage());
    }

    @Test
    void resultsAreAppendedAsTheyArriveSoAStoppedRunLeavesThem(@TempDir Path dir) throws Exception {
        PerfReport report = new PerfReport(SyntheticResults.settings(Scenario.SWEEP, List.of(1024L)), 2, "ar4j-perf",
                "one JVM per GPU", null);
        Path csv = dir.resolve("out/partial.csv");
        report.streamTo(csv);
        assertEquals(0, ResultFiles.readCsv(csv).size(), "the header comes first");
        SyntheticResults.add(report, 1024, "push", "push", false, 3.0);
        SyntheticResults.add(report, 1024, "nccl", "nccl", false, 6.0);
        List<Map<String, String>> rows = ResultFiles.readCsv(csv);
        assertEquals(2, rows.size());
        assertEquals("nccl", rows.get(1).get("algorithm"));
        assertEquals("6.0000", rows.get(1).get("time_us"));
    }
}
