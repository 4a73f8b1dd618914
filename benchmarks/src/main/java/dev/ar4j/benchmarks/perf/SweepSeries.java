package dev.ar4j.benchmarks.perf;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * What the sweep chart draws, worked out from the CSV rows without drawing anything: one latency
 * series per algorithm (and per timing mode and placement when a file has several), the NCCL
 * baselines apart, and the speed-up of each ar4j series over the best NCCL baseline at each size.
 *
 * <p>A forced algorithm that fell back to NCCL ({@code ran} is e.g. {@code push→nccl}) measured
 * NCCL, not that algorithm: such points are left out of the algorithm's series and of the
 * speed-ups, and listed in {@link #fallbacks()} so that the chart can say so.
 */
final class SweepSeries {
    /** How a row is drawn. */
    enum Kind {
        /** One of ar4j's columns (auto or a forced kernel) that ran what it names. */
        AR4J,
        /** An NCCL baseline ({@code nccl}, {@code nccl-symm}). */
        BASELINE,
        /** A forced kernel that fell back to NCCL: not drawn as that kernel. */
        FELL_BACK
    }

    /** One point: message size in bytes, value (µs or ×). */
    record Point(double bytes, double value) {
    }

    private final Map<String, List<Point>> ar4j = new LinkedHashMap<>();
    private final Map<String, List<Point>> baselines = new LinkedHashMap<>();
    private final Map<String, List<Point>> speedups = new LinkedHashMap<>();
    private final Map<String, List<Long>> fallbacks = new LinkedHashMap<>();

    private SweepSeries() {
    }

    /**
     * Classifies a row: the NCCL columns are baselines; a row whose {@code fell_back} is true or
     * whose {@code ran} names something else than its forced algorithm fell back; the rest are
     * ar4j's ({@code auto} runs what the dispatcher chose, NCCL included, and is drawn as auto).
     */
    static Kind classify(Map<String, String> row) {
        String algorithm = row.getOrDefault("algorithm", "");
        if (algorithm.startsWith("nccl")) {
            return Kind.BASELINE;
        }
        String ran = row.getOrDefault("ran", "");
        if (Boolean.parseBoolean(row.getOrDefault("fell_back", "false")) || ran.contains("→") || ran.contains("->")) {
            return Kind.FELL_BACK;
        }
        if (!algorithm.equals("auto") && !ran.isEmpty() && !ran.equals(algorithm)) {
            return Kind.FELL_BACK;
        }
        return Kind.AR4J;
    }

    /** Builds the series from the timed rows (rows without {@code time_us} are ignored). */
    static SweepSeries of(List<Map<String, String>> rows) {
        Set<String> variants = new LinkedHashSet<>();
        rows.forEach(r -> variants.add(variant(r)));
        boolean nameVariants = variants.size() > 1;
        SweepSeries s = new SweepSeries();
        // variant -> bytes -> best NCCL time
        Map<String, Map<Double, Double>> bestNccl = new LinkedHashMap<>();
        for (Map<String, String> row : rows) {
            Double time = time(row);
            if (time == null) {
                continue;
            }
            String name = row.get("algorithm") + (nameVariants ? " (" + variant(row) + ")" : "");
            double bytes = Double.parseDouble(row.get("bytes"));
            switch (classify(row)) {
                case BASELINE -> {
                    s.baselines.computeIfAbsent(name, n -> new ArrayList<>()).add(new Point(bytes, time));
                    bestNccl.computeIfAbsent(variant(row), v -> new TreeMap<>()).merge(bytes, time, Math::min);
                }
                case FELL_BACK -> s.fallbacks.computeIfAbsent(name, n -> new ArrayList<>()).add((long) bytes);
                case AR4J -> s.ar4j.computeIfAbsent(name, n -> new ArrayList<>()).add(new Point(bytes, time));
            }
        }
        for (Map<String, String> row : rows) {
            Double time = time(row);
            if (time == null || classify(row) != Kind.AR4J) {
                continue;
            }
            double bytes = Double.parseDouble(row.get("bytes"));
            Double best = bestNccl.getOrDefault(variant(row), Map.of()).get(bytes);
            if (best != null && time > 0) {
                String name = row.get("algorithm") + (nameVariants ? " (" + variant(row) + ")" : "");
                s.speedups.computeIfAbsent(name, n -> new ArrayList<>()).add(new Point(bytes, best / time));
            }
        }
        return s;
    }

    /** ar4j's series (auto and the forced kernels), fallback points left out. */
    Map<String, List<Point>> ar4j() {
        return ar4j;
    }

    /** The NCCL baselines. */
    Map<String, List<Point>> baselines() {
        return baselines;
    }

    /** Best NCCL time over each ar4j point's time, per series (above 1: ar4j is faster). */
    Map<String, List<Point>> speedups() {
        return speedups;
    }

    /** Series name to the sizes where the forced algorithm fell back to NCCL (not drawn). */
    Map<String, List<Long>> fallbacks() {
        return fallbacks;
    }

    /** "fell back to NCCL, not drawn: push at 1M..64M (7 sizes); 2stage at 16M..64M (3 sizes)", or "" if none. */
    String fallbackNote() {
        if (fallbacks.isEmpty()) {
            return "";
        }
        List<String> parts = new ArrayList<>();
        for (Map.Entry<String, List<Long>> e : fallbacks.entrySet()) {
            List<Long> sizes = e.getValue().stream().sorted().distinct().toList();
            String range = sizes.size() == 1 ? ByteSizes.format(sizes.getFirst())
                    : ByteSizes.format(sizes.getFirst()) + "–" + ByteSizes.format(sizes.getLast()) + " ("
                    + sizes.size() + " sizes)";
            parts.add(e.getKey() + " at " + range);
        }
        return "forced kernels that fell back to NCCL are not drawn: " + String.join("; ", parts);
    }

    /** "graph, out-of-place" (plus ", registered" and ", pdl on" / ", pdl off" when so). */
    static String variant(Map<String, String> row) {
        String mode = row.getOrDefault("mode", "");
        String placement = row.getOrDefault("placement", "");
        boolean registered = Boolean.parseBoolean(row.getOrDefault("registered", "false"));
        String pdl = row.getOrDefault("pdl", "");
        return mode + ", " + placement + (registered ? ", registered" : "")
                + (pdl.isEmpty() || pdl.equals(PdlSetting.DEFAULT.label()) ? "" : ", pdl " + pdl);
    }

    private static Double time(Map<String, String> row) {
        String time = row.get("time_us");
        if (time == null || time.isBlank()) {
            return null;
        }
        String t = time.trim().toLowerCase(Locale.ROOT);
        if (t.equals("inf") || t.equals("-inf") || t.equals("nan")) {
            return null;
        }
        return Double.parseDouble(t);
    }
}
