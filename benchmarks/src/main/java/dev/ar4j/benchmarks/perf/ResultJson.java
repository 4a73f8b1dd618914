package dev.ar4j.benchmarks.perf;

import com.fasterxml.jackson.jr.ob.JSON;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The JSON result file, written and read with jackson-jr: the ar4j version and commit, machine,
 * command, settings, skipped columns, notes and typed results (numbers as numbers, booleans as
 * booleans, a figure that does not apply as {@code null}).
 */
public final class ResultJson {
    private static final JSON JSON_WRITER = JSON.std.with(JSON.Feature.PRETTY_PRINT_OUTPUT,
            JSON.Feature.WRITE_NULL_PROPERTIES);

    private ResultJson() {
    }

    /** The JSON text of a report, ending with a newline. */
    static String text(PerfReport report) throws IOException {
        return JSON_WRITER.asString(tree(report)) + "\n";
    }

    /**
     * Reads a result file back as maps, lists, strings, numbers, booleans and nulls.
     *
     * @param path the JSON file written by {@link ResultFiles#writeJson}, UTF-8
     * @return the root object, keys in file order
     * @throws IOException if the file cannot be read, is not well-formed JSON, or its root is not an object
     */
    public static Map<String, Object> read(Path path) throws IOException {
        return JSON.std.mapFrom(Files.readString(path, StandardCharsets.UTF_8));
    }

    private static Map<String, Object> tree(PerfReport report) {
        PerfSettings s = report.settings();
        Map<String, Object> root = new LinkedHashMap<>();
        root.put("tool", "ar4j-perf");
        Ar4jVersion version = Ar4jVersion.current();
        root.put("ar4j_version", version.version());
        root.put("ar4j_commit", version.commit());
        MachineInfo machine = report.machine();
        if (machine != null) {
            Map<String, Object> m = new LinkedHashMap<>(machine.fields());
            m.put("gpus", machine.gpus());
            root.put("machine", m);
        }
        root.put("command", report.commandLine());
        Map<String, Object> settings = new LinkedHashMap<>();
        settings.put("scenario", s.scenario().label());
        settings.put("operation", s.operation().label());
        settings.put("pdl", s.pdl().stream().map(PdlSetting::label).toList());
        settings.put("share_gpu", s.shareGpu());
        settings.put("sizes", s.sizes());
        settings.put("dtype", InputPattern.dtypeLabel(s.dtype()));
        settings.put("algorithms", s.algorithms().stream().map(PerfAlgorithm::label).toList());
        settings.put("warmup", s.warmup());
        settings.put("iterations", s.iterations());
        settings.put("repetitions", s.repetitions());
        settings.put("modes", s.modes().stream().map(TimingMode::label).toList());
        settings.put("placements", s.placements().stream().map(Placement::label).toList());
        settings.put("registered_input", s.registeredInput());
        settings.put("staging_bytes", s.stagingBytes());
        settings.put("timeout_ms", s.timeout().toMillis());
        settings.put("seed", s.seed());
        settings.put("world_size", report.worldSize());
        settings.put("process_model", report.processModel());
        root.put("settings", settings);
        Map<String, Object> skipped = new LinkedHashMap<>();
        for (Map.Entry<String, String> e : report.skippedInOrder()) {
            skipped.put(e.getKey(), e.getValue());
        }
        root.put("skipped", skipped);
        root.put("notes", report.notes());
        root.put("total_wrong", report.totalWrong());
        List<Object> results = new ArrayList<>();
        for (PerfResult r : report.results()) {
            Map<String, Object> row = new LinkedHashMap<>();
            List<String> cells = r.csvCells();
            for (int i = 0; i < PerfResult.COLUMNS.size(); i++) {
                row.put(PerfResult.COLUMNS.get(i), typed(PerfResult.COLUMNS.get(i), cells.get(i)));
            }
            results.add(row);
        }
        root.put("results", results);
        return root;
    }

    /**
     * A CSV cell as a JSON value: numbers and booleans typed (an empty one, a figure that does not
     * apply, as null; infinities as "inf"), text as it is (an empty text stays "").
     */
    static Object typed(String column, String cell) {
        boolean text = switch (column) {
            case "registered", "fell_back", "world_size", "bytes", "count", "wrong", "allreduces_per_pass",
                 "iterations", "repetitions", "warmup", "time_us", "time_us_max", "algbw_gbps", "busbw_gbps",
                 "host_us", "call_us", "pass_us" -> false;
            default -> true;
        };
        if (cell.isEmpty()) {
            return text ? "" : null;
        }
        return switch (column) {
            case "registered", "fell_back" -> Boolean.parseBoolean(cell);
            case "world_size", "bytes", "count", "wrong", "allreduces_per_pass", "iterations", "repetitions", "warmup" ->
                    Long.parseLong(cell);
            case "time_us", "time_us_max", "algbw_gbps", "busbw_gbps", "host_us", "call_us", "pass_us" ->
                    cell.equals("inf") || cell.equals("-inf") ? cell : (Object) Double.parseDouble(cell);
            default -> cell;
        };
    }
}
