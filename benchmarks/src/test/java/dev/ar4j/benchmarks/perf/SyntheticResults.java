package dev.ar4j.benchmarks.perf;

import dev.ar4j.DType;

import java.time.Duration;
import java.util.List;
import java.util.Map;

/** A report with made-up but plausible figures, for the table, file and chart tests. */
final class SyntheticResults {
    private SyntheticResults() {
    }

    static PerfSettings settings(Scenario scenario, List<Long> sizes) {
        return new PerfSettings(scenario, sizes, DType.BFLOAT16,
                PerfAlgorithm.parseListWithBaselines(List.of(PerfAlgorithm.DEFAULT_LIST)), 5, 50, 7,
                List.of(TimingMode.GRAPH), List.of(Placement.OUT_OF_PLACE), false, 8L << 20, false,
                Duration.ofSeconds(120), 1);
    }

    /** A sweep of 1 KiB .. 16 MiB: push fastest while it runs, 2stage falling back above 8 MiB, nccl-symm skipped. */
    static PerfReport sweep() {
        List<Long> sizes = SizeSweep.geometric(1024, 16L << 20, 4, DType.BFLOAT16);
        PerfReport report = new PerfReport(settings(Scenario.SWEEP, sizes), 2, "ar4j-perf -b 1K -e 16M -f 4",
                "one JVM per GPU", null);
        report.machine(new MachineInfo(Map.of("date", "2026-11-30T12:00:00Z", "nvidia_driver", "580.159.04",
                "cuda_runtime", "13.0", "nccl", "2.28.9", "topology", "2 ranks on one host"),
                List.of("GPU 0: NVIDIA H200, sm_90, 132 SMs, PCI 0000:1B:00.0",
                        "GPU 1: NVIDIA H200, sm_90, 132 SMs, PCI 0000:2C:00.0")));
        for (long bytes : sizes) {
            double base = 3.0 + bytes / 300_000.0;
            boolean pushRuns = bytes <= 512 * 1024;
            add(report, bytes, "auto", pushRuns && bytes <= 256 * 1024 ? "push" : "1stage", false,
                    pushRuns ? base * 0.9 : base);
            add(report, bytes, "1stage", "1stage", false, base);
            add(report, bytes, "2stage", bytes > 8L << 20 ? "2stage→nccl" : "2stage", bytes > 8L << 20, base * 1.4);
            add(report, bytes, "push", pushRuns ? "push" : "push→nccl", !pushRuns, pushRuns ? base * 0.9 : base * 2);
            add(report, bytes, "nccl", "nccl", false, base * 2);
        }
        report.skip(PerfAlgorithm.NCCL_SYMMETRIC, "NCCL 2.26.2 has no symmetric windows (needs 2.27 or newer)");
        return report;
    }

    static void add(PerfReport report, long bytes, String algorithm, String ran, boolean fellBack, double timeUs) {
        report.add(new PerfResult("sweep", "graph", "out-of-place", false, 2, bytes, bytes / 2, "bf16", algorithm, ran,
                fellBack, fellBack ? "forced, but the input is too large → NCCL" : "reason, with a comma", timeUs,
                timeUs * 1.01, 0, Double.NaN, Double.NaN, 1, 50, 7, 5));
    }
}
