package dev.ar4j.benchmarks.perf;

import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ChartTitleTest {

    @Test
    void theTitleComesFromTheFilesMetadataNotItsName() throws Exception {
        ResultCsv csv = ResultFiles.readCsvFile(Path.of("results/perf/2026-11-30-ar4j-perf-graph.csv"));
        ChartTitle t = ChartTitle.of(csv, "all-reduce latency");
        assertEquals("ar4j all-reduce latency: 2 × NVIDIA H200, bf16, CUDA-graph timing, NCCL 2.28.3", t.title());
        assertFalse(t.title().contains(".csv"));
        assertTrue(t.subtitle().startsWith("2026-11-30 · host vm · out-of-place"), t.subtitle());
        ResultCsv eager = ResultFiles.readCsvFile(Path.of("results/perf/2026-11-30-ar4j-perf-eager.csv"));
        assertTrue(ChartTitle.of(eager, "x").title().contains("eager timing"));
    }

    @Test
    void missingFactsAreSaidToBeUnknown() {
        ResultCsv csv = new ResultCsv(Map.of(), List.of(), Map.of(), List.of(Map.of("algorithm", "push")));
        ChartTitle t = ChartTitle.of(csv, "x");
        assertEquals("ar4j x: ? × GPU (model unknown), dtype unknown, timing mode unknown, NCCL version unknown",
                t.title());
    }

    @Test
    void versionAndCommitGoToTheSubtitle() {
        ResultCsv csv = new ResultCsv(Map.of("ar4j_version", "0.1.0", "ar4j_commit", "1a2b3c4", "nccl", "2.28.3"),
                List.of("GPU 0: NVIDIA H100 80GB HBM3, sm_90", "GPU 1: NVIDIA H100 80GB HBM3, sm_90"), Map.of(),
                List.of(Map.of("world_size", "2", "dtype", "fp16", "mode", "eager")));
        ChartTitle t = ChartTitle.of(csv, "x");
        assertTrue(t.title().contains("2 × NVIDIA H100 80GB HBM3, fp16, eager timing"), t.title());
        assertTrue(t.subtitle().contains("ar4j 0.1.0 (commit 1a2b3c4)"), t.subtitle());
    }
}
