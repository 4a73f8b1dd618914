package dev.ar4j.benchmarks.perf;

import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * The PNG chart of an ar4j-perf CSV: for a sweep, latency against size with the NCCL baselines
 * on top and a speed-up panel below ({@link SweepChart}); for the verify scenario, bars
 * ({@link VerifyChart}). A forced kernel that fell back to NCCL is never drawn as that kernel
 * ({@link SweepSeries#classify}). Drawn with JFreeChart in headless AWT, so the Java runtime needs
 * {@code java.desktop} and fonts; where it has neither, draw it later with {@code ar4j-perf plot}.
 */
public final class LatencyChart {
    static final int WIDTH = 1400;
    static final int HEIGHT = 1000;
    static final int VERIFY_HEIGHT = 600;

    private LatencyChart() {
    }

    /**
     * Draws a CSV read with {@link ResultFiles#readCsvFile} into a PNG: the latency sweep as one
     * series per column, or the verify scenarios as bars.
     *
     * @param csv   the results and their comment header
     * @param png   the PNG file to write, replaced if it exists; parent directories are created
     * @param title the title, or null for one made from the file's metadata ({@link ChartTitle})
     * @return the number of series (sweep) or bars (verify) drawn
     * @throws IllegalArgumentException if the rows have no {@code bytes}, {@code time_us} or
     *                                  {@code algorithm} column, or no timed row
     * @throws IOException              if the directory or the PNG cannot be written
     */
    public static int draw(ResultCsv csv, Path png, String title) throws IOException {
        System.setProperty("java.awt.headless", "true");
        List<Map<String, String>> rows = csv.rows();
        if (rows.isEmpty()) {
            throw new IllegalArgumentException("no results to plot");
        }
        for (String column : List.of("bytes", "time_us", "algorithm")) {
            if (!rows.getFirst().containsKey(column)) {
                throw new IllegalArgumentException("the CSV has no '" + column + "' column (is it an ar4j-perf CSV?)");
            }
        }
        boolean verify = rows.stream().allMatch(r -> isVerify(r.get("scenario")));
        boolean fused = rows.stream().allMatch(r -> Scenario.VERIFY_FUSED.label().equals(r.get("scenario")));
        String operation = operationTitle(rows);
        JFreeChart chart;
        int drawn;
        int height;
        if (verify) {
            List<VerifyChart.Bar> bars = VerifyChart.bars(rows);
            if (bars.isEmpty()) {
                throw new IllegalArgumentException("no timed rows to plot");
            }
            String calls = rows.getFirst().getOrDefault("allreduces_per_pass", "?");
            String perPass = fused ? calls + " × (all-reduce of " + rows.getFirst().get("bytes") + " B + residual + "
                    + "RMSNorm) in one CUDA graph" : calls + " all-reduces of " + rows.getFirst().get("bytes")
                    + " B in one CUDA graph";
            List<String> missing = csv.skipped().entrySet().stream()
                    .filter(e -> e.getKey().equals(FusedVariant.FUSED)).map(e -> e.getKey() + ": " + e.getValue())
                    .toList();
            chart = VerifyChart.build(bars, titleOf(csv, fused ? "verify-fused scenario (all-reduce + RMSNorm)"
                    : "verify scenario", title), perPass, fused ? "all-reduce + norm" : "all-reduce", missing);
            drawn = bars.size();
            height = VERIFY_HEIGHT;
        } else {
            List<Map<String, String>> sweep = rows.stream().filter(r -> !isVerify(r.get("scenario"))).toList();
            SweepSeries series = SweepSeries.of(sweep);
            drawn = series.ar4j().size() + series.baselines().size();
            if (drawn == 0) {
                throw new IllegalArgumentException("no timed rows to plot");
            }
            chart = SweepChart.build(series, titleOf(csv, operation + " latency", title), operation);
            height = HEIGHT;
        }
        Path parent = png.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        ChartUtils.saveChartAsPNG(png.toFile(), chart, WIDTH, height);
        return drawn;
    }

    private static boolean isVerify(String scenario) {
        return Scenario.VERIFY.label().equals(scenario) || Scenario.VERIFY_FUSED.label().equals(scenario);
    }

    /**
     * "all-reduce", "all-gather", ... from the rows' {@code operation} column (files of earlier
     * versions have none: all-reduce); several joined with "/".
     */
    static String operationTitle(List<Map<String, String>> rows) {
        java.util.Set<String> titles = new java.util.LinkedHashSet<>();
        for (Map<String, String> r : rows) {
            String op = r.getOrDefault("operation", "");
            titles.add(op.isBlank() ? Operation.ALL_REDUCE.title() : Operation.parse(op).title());
        }
        return String.join("/", titles);
    }

    private static ChartTitle titleOf(ResultCsv csv, String what, String override) {
        ChartTitle made = ChartTitle.of(csv, what);
        return override == null ? made : new ChartTitle(override, made.title());
    }
}
