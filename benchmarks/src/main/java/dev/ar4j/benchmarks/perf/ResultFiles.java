package dev.ar4j.benchmarks.perf;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The result files: CSV (one row per size, algorithm, timing mode and placement, with the machine
 * description as leading {@code #} comment lines) and JSON (machine, settings, skipped columns,
 * notes and results), and reading a CSV back for {@code ar4j-perf plot}.
 */
public final class ResultFiles {
    private ResultFiles() {
    }

    /** Writes the CSV, creating parent directories. */
    public static void writeCsv(Path path, PerfReport report) throws IOException {
        StringBuilder b = new StringBuilder();
        MachineInfo machine = report.machine();
        if (machine != null) {
            for (Map.Entry<String, String> e : machine.fields().entrySet()) {
                b.append("# ").append(e.getKey()).append(": ").append(oneLine(e.getValue())).append('\n');
            }
            for (String gpu : machine.gpus()) {
                b.append("# ").append(oneLine(gpu)).append('\n');
            }
        }
        for (Map.Entry<String, String> skip : report.skippedInOrder()) {
            b.append("# skipped ").append(skip.getKey()).append(": ").append(oneLine(skip.getValue())).append('\n');
        }
        b.append(csvLine(PerfResult.COLUMNS)).append('\n');
        for (PerfResult r : report.results()) {
            b.append(csvLine(r.csvCells())).append('\n');
        }
        write(path, b.toString());
    }

    /** Writes the JSON, creating parent directories. */
    public static void writeJson(Path path, PerfReport report) throws IOException {
        PerfSettings s = report.settings();
        Map<String, Object> root = new LinkedHashMap<>();
        root.put("tool", "ar4j-perf");
        MachineInfo machine = report.machine();
        if (machine != null) {
            Map<String, Object> m = new LinkedHashMap<>(machine.fields());
            m.put("gpus", machine.gpus());
            root.put("machine", m);
        }
        root.put("command", report.commandLine());
        Map<String, Object> settings = new LinkedHashMap<>();
        settings.put("scenario", s.scenario().label());
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
        StringBuilder b = new StringBuilder();
        json(b, root, "");
        b.append('\n');
        write(path, b.toString());
    }

    /**
     * Reads a CSV written by {@link #writeCsv}: {@code #} lines are skipped, the first other line
     * names the columns.
     *
     * @return one map per row, column name to cell
     * @throws IllegalArgumentException if the file has no header or a row has the wrong number of cells
     */
    public static List<Map<String, String>> readCsv(Path path) throws IOException {
        List<String> lines = Files.readAllLines(path, StandardCharsets.UTF_8);
        List<String> header = null;
        List<Map<String, String>> rows = new ArrayList<>();
        int number = 0;
        for (String line : lines) {
            number++;
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            List<String> cells = parseCsvLine(line, path, number);
            if (header == null) {
                header = cells;
                continue;
            }
            if (cells.size() != header.size()) {
                throw new IllegalArgumentException(path + " line " + number + " has " + cells.size() + " cells; the header has "
                        + header.size());
            }
            Map<String, String> row = new LinkedHashMap<>();
            for (int i = 0; i < header.size(); i++) {
                row.put(header.get(i), cells.get(i));
            }
            rows.add(row);
        }
        if (header == null) {
            throw new IllegalArgumentException(path + " has no header line (is it an ar4j-perf CSV?)");
        }
        return rows;
    }

    // ---- CSV ------------------------------------------------------------------------------------

    static String csvLine(List<String> cells) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < cells.size(); i++) {
            if (i > 0) {
                b.append(',');
            }
            String c = cells.get(i);
            if (c.contains(",") || c.contains("\"") || c.contains("\n") || c.contains("\r")) {
                b.append('"').append(c.replace("\"", "\"\"")).append('"');
            } else {
                b.append(c);
            }
        }
        return b.toString();
    }

    static List<String> parseCsvLine(String line, Path path, int number) {
        List<String> cells = new ArrayList<>();
        StringBuilder cell = new StringBuilder();
        boolean quoted = false;
        for (int i = 0; i < line.length(); i++) {
            char ch = line.charAt(i);
            if (quoted) {
                if (ch == '"') {
                    if (i + 1 < line.length() && line.charAt(i + 1) == '"') {
                        cell.append('"');
                        i++;
                    } else {
                        quoted = false;
                    }
                } else {
                    cell.append(ch);
                }
            } else if (ch == '"') {
                quoted = true;
            } else if (ch == ',') {
                cells.add(cell.toString());
                cell.setLength(0);
            } else {
                cell.append(ch);
            }
        }
        if (quoted) {
            throw new IllegalArgumentException(path + " line " + number + " ends inside a quoted cell");
        }
        cells.add(cell.toString());
        return cells;
    }

    private static String oneLine(String text) {
        return text.replace('\n', ' ').replace('\r', ' ');
    }

    // ---- JSON -----------------------------------------------------------------------------------

    /** A CSV cell as a JSON value: numbers and booleans typed, empty cells null. */
    private static Object typed(String column, String cell) {
        if (cell.isEmpty()) {
            return null;
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

    private static void json(StringBuilder b, Object value, String indent) {
        switch (value) {
            case null -> b.append("null");
            case String s -> quote(b, s);
            case Boolean bool -> b.append(bool);
            case Double d -> b.append(Double.isFinite(d) ? String.format(Locale.ROOT, "%.4f", d) : "null");
            case Number n -> b.append(n);
            case Map<?, ?> map -> {
                if (map.isEmpty()) {
                    b.append("{}");
                    return;
                }
                b.append("{\n");
                int i = 0;
                for (Map.Entry<?, ?> e : map.entrySet()) {
                    b.append(indent).append("  ");
                    quote(b, e.getKey().toString());
                    b.append(": ");
                    json(b, e.getValue(), indent + "  ");
                    b.append(++i < map.size() ? ",\n" : "\n");
                }
                b.append(indent).append('}');
            }
            case List<?> list -> {
                if (list.isEmpty()) {
                    b.append("[]");
                    return;
                }
                boolean scalars = list.stream().noneMatch(v -> v instanceof Map || v instanceof List);
                if (scalars) {
                    b.append('[');
                    for (int i = 0; i < list.size(); i++) {
                        if (i > 0) {
                            b.append(", ");
                        }
                        json(b, list.get(i), indent);
                    }
                    b.append(']');
                    return;
                }
                b.append("[\n");
                for (int i = 0; i < list.size(); i++) {
                    b.append(indent).append("  ");
                    json(b, list.get(i), indent + "  ");
                    b.append(i + 1 < list.size() ? ",\n" : "\n");
                }
                b.append(indent).append(']');
            }
            default -> quote(b, value.toString());
        }
    }

    private static void quote(StringBuilder b, String s) {
        b.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (c < 0x20) {
                        b.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        b.append('"');
    }

    private static void write(Path path, String text) throws IOException {
        Path parent = path.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        Files.writeString(path, text, StandardCharsets.UTF_8);
    }
}
