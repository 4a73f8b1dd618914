package dev.ar4j.benchmarks.perf;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The chart's title and subtitle, from what a result file says about its run (never from the
 * file's name): GPU model and count, dtype, timing mode, NCCL version; then the date, host, ar4j
 * version and placement.
 *
 * @param title    "ar4j all-reduce: 2 × NVIDIA H200, bf16, CUDA-graph timing, NCCL 2.28.3"
 * @param subtitle "2026-11-30 · host vm · out-of-place · ar4j 0.1.0 (commit 1a2b3c4)"
 */
record ChartTitle(String title, String subtitle) {

    /** Reads the facts from the CSV's metadata and rows. */
    static ChartTitle of(ResultCsv csv, String what) {
        List<Map<String, String>> rows = csv.rows();
        Map<String, String> meta = csv.metadata();
        List<String> parts = new ArrayList<>();
        parts.add(gpus(csv));
        parts.add(joined(rows, "dtype", "dtype unknown"));
        parts.add(timing(rows));
        String nccl = meta.get("nccl");
        parts.add(nccl == null || nccl.isBlank() ? "NCCL version unknown" : "NCCL " + nccl);
        String title = "ar4j " + what + ": " + String.join(", ", parts);

        List<String> sub = new ArrayList<>();
        String date = meta.get("date");
        if (date != null && date.length() >= 10) {
            sub.add(date.substring(0, 10));
        }
        if (meta.containsKey("host")) {
            sub.add("host " + meta.get("host"));
        }
        String placement = joined(rows, "placement", "");
        if (!placement.isEmpty()) {
            sub.add(placement);
        }
        String pdl = joined(rows.stream().filter(r -> !PdlSetting.DEFAULT.label().equals(r.get("pdl"))).toList(), "pdl", "");
        if (!pdl.isEmpty()) {
            sub.add("pdl " + pdl);
        }
        if (rows.stream().anyMatch(r -> Boolean.parseBoolean(r.getOrDefault("registered", "false")))) {
            sub.add("registered input");
        }
        String version = meta.get("ar4j_version");
        if (version != null && !version.startsWith(Ar4jVersion.UNKNOWN)) {
            String commit = meta.getOrDefault("ar4j_commit", "");
            sub.add("ar4j " + version + (commit.isEmpty() || commit.startsWith(Ar4jVersion.UNKNOWN) ? ""
                    : " (commit " + commit + ")"));
        }
        return new ChartTitle(title, String.join(" · ", sub));
    }

    /** "2 × NVIDIA H200" from the world size and the {@code # GPU n: name, ...} lines. */
    static String gpus(ResultCsv csv) {
        Set<String> models = new LinkedHashSet<>();
        for (String gpu : csv.gpus()) {
            int colon = gpu.indexOf(": ");
            String rest = colon >= 0 ? gpu.substring(colon + 2) : gpu;
            int comma = rest.indexOf(',');
            String model = (comma >= 0 ? rest.substring(0, comma) : rest).trim();
            if (!model.isEmpty() && !model.startsWith("(name unknown")) {
                models.add(model);
            }
        }
        String count = joined(csv.rows(), "world_size", "");
        if (count.isEmpty()) {
            count = csv.metadata().getOrDefault("world_size", csv.gpus().isEmpty() ? "?" : Integer.toString(csv.gpus().size()));
        }
        return count + " × " + (models.isEmpty() ? "GPU (model unknown)" : String.join(" + ", models));
    }

    private static String timing(List<Map<String, String>> rows) {
        Set<String> modes = new LinkedHashSet<>();
        rows.forEach(r -> modes.add(r.getOrDefault("mode", "")));
        modes.remove("");
        if (modes.isEmpty()) {
            return "timing mode unknown";
        }
        List<String> names = modes.stream().map(m -> m.equals("graph") ? "CUDA-graph" : m).toList();
        return String.join(" and ", names) + " timing";
    }

    /** The distinct values of a column, joined with "/", or {@code none} when the column is absent or empty. */
    private static String joined(List<Map<String, String>> rows, String column, String none) {
        Set<String> values = new LinkedHashSet<>();
        rows.forEach(r -> values.add(r.getOrDefault(column, "")));
        values.remove("");
        return values.isEmpty() ? none : String.join("/", values);
    }
}
