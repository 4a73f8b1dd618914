package dev.ar4j.benchmarks.perf;

import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A forced kernel that fell back to NCCL is never drawn as that kernel; speed-ups are against the best NCCL. */
class SweepSeriesTest {

    private static Map<String, String> row(long bytes, String algorithm, String ran, String fellBack, double time) {
        return Map.of("scenario", "sweep", "mode", "graph", "placement", "out-of-place", "registered", "false",
                "bytes", Long.toString(bytes), "algorithm", algorithm, "ran", ran, "fell_back", fellBack,
                "time_us", Double.toString(time));
    }

    @Test
    void rowsAreClassifiedByWhatRan() {
        assertEquals(SweepSeries.Kind.AR4J, SweepSeries.classify(row(1, "push", "push", "false", 1)));
        assertEquals(SweepSeries.Kind.AR4J, SweepSeries.classify(row(1, "auto", "1stage", "false", 1)));
        assertEquals(SweepSeries.Kind.AR4J, SweepSeries.classify(row(1, "auto", "nccl", "false", 1)),
                "auto choosing NCCL is auto's decision, drawn as auto");
        assertEquals(SweepSeries.Kind.FELL_BACK, SweepSeries.classify(row(1, "push", "push→nccl", "true", 1)));
        assertEquals(SweepSeries.Kind.FELL_BACK, SweepSeries.classify(row(1, "2stage", "2stage→nccl", "false", 1)),
                "the ran column alone is enough");
        assertEquals(SweepSeries.Kind.FELL_BACK, SweepSeries.classify(row(1, "1stage", "nccl", "false", 1)));
        assertEquals(SweepSeries.Kind.BASELINE, SweepSeries.classify(row(1, "nccl", "nccl", "false", 1)));
        assertEquals(SweepSeries.Kind.BASELINE, SweepSeries.classify(row(1, "nccl-symm", "nccl-symm", "false", 1)));
    }

    @Test
    void fallbackPointsAreLeftOutAndNamed() {
        SweepSeries s = SweepSeries.of(List.of(
                row(1024, "push", "push", "false", 2.5), row(1024, "nccl", "nccl", "false", 6.0),
                row(1024, "nccl-symm", "nccl-symm", "false", 4.0),
                row(1 << 20, "push", "push→nccl", "true", 13.5), row(1 << 20, "nccl", "nccl", "false", 13.4),
                row(1 << 20, "nccl-symm", "nccl-symm", "false", 15.0),
                row(2 << 20, "push", "push→nccl", "true", 26.6), row(2 << 20, "nccl", "nccl", "false", 26.7),
                row(2 << 20, "nccl-symm", "nccl-symm", "false", 19.0)));
        assertEquals(List.of(new SweepSeries.Point(1024, 2.5)), s.ar4j().get("push"));
        assertEquals(3, s.baselines().get("nccl").size(), "NCCL is drawn over the whole range");
        assertEquals(List.of(1L << 20, 2L << 20), s.fallbacks().get("push"));
        assertTrue(s.fallbackNote().contains("push at 1M–2M (2 sizes)"), s.fallbackNote());
        List<SweepSeries.Point> speedups = s.speedups().get("push");
        assertEquals(1, speedups.size(), "no speed-up for a point that measured NCCL");
        assertEquals(4.0 / 2.5, speedups.getFirst().value(), 1e-12, "against the better of nccl and nccl-symm");
    }

    @Test
    void theCommittedGraphSweepDrawsNcclEverywhereAndNoPushFromOneMiB() throws Exception {
        ResultCsv csv = ResultFiles.readCsvFile(Path.of("results/perf/2026-11-30-ar4j-perf-graph.csv"));
        SweepSeries s = SweepSeries.of(csv.rows());
        assertEquals(18, s.baselines().get("nccl").size());
        assertEquals(18, s.baselines().get("nccl-symm").size());
        assertTrue(s.ar4j().get("push").stream().allMatch(p -> p.bytes() < (1 << 20)), s.ar4j().get("push").toString());
        assertEquals(7, s.fallbacks().get("push").size());
        assertEquals(3, s.fallbacks().get("2stage").size());
        assertFalse(s.fallbacks().containsKey("auto"));
    }

    @Test
    void variantsAreNamedOnlyWhenAFileHasSeveral() {
        Map<String, String> eager = new java.util.HashMap<>(row(1024, "push", "push", "false", 4.0));
        eager.put("mode", "eager");
        SweepSeries s = SweepSeries.of(List.of(row(1024, "push", "push", "false", 2.5), eager));
        assertEquals(java.util.Set.of("push (graph, out-of-place)", "push (eager, out-of-place)"), s.ar4j().keySet());
    }
}
