package dev.ar4j.benchmarks.perf;

import org.apache.commons.csv.CSVFormat;
import org.apache.commons.csv.CSVParser;
import org.apache.commons.csv.CSVPrinter;
import org.apache.commons.csv.CSVRecord;

import java.io.IOException;
import java.io.StringReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The CSV result file, written and read with Apache Commons CSV: leading {@code # name: value}
 * comment lines (the ar4j version and commit, the machine, the GPUs, the skipped columns), then
 * the header and one row per size, algorithm, timing mode and placement. Every cell round-trips,
 * commas, quotes, newlines and any Unicode included; comment values are kept on one line with
 * backslash escapes ({@code \\n}, {@code \\r}, {@code \\\\}). The JSON file is {@link ResultJson}.
 */
public final class ResultFiles {
    /** The format of the table part: RFC 4180 quoting, {@code \n} line ends, {@code #} comments. */
    static final CSVFormat FORMAT = CSVFormat.RFC4180.builder().setRecordSeparator('\n').setCommentMarker('#')
            .setIgnoreEmptyLines(true).get();

    private ResultFiles() {
    }

    /**
     * Writes the CSV, creating parent directories: the comment header (version, machine, GPUs,
     * skipped columns), the column names and one row per result; an existing file is replaced.
     *
     * @param path   the file to write
     * @param report the run whose results are written
     * @throws IOException if a directory or the file cannot be written
     */
    public static void writeCsv(Path path, PerfReport report) throws IOException {
        StringBuilder b = new StringBuilder();
        for (Map.Entry<String, String> e : metadata(report).entrySet()) {
            b.append("# ").append(e.getKey()).append(": ").append(escape(e.getValue())).append('\n');
        }
        MachineInfo machine = report.machine();
        if (machine != null) {
            for (String gpu : machine.gpus()) {
                b.append("# ").append(escape(gpu)).append('\n');
            }
        }
        for (Map.Entry<String, String> skip : report.skippedInOrder()) {
            b.append("# skipped ").append(skip.getKey()).append(": ").append(escape(skip.getValue())).append('\n');
        }
        try (CSVPrinter printer = new CSVPrinter(b, FORMAT)) {
            printer.printRecord(PerfResult.COLUMNS);
            for (PerfResult r : report.results()) {
                printer.printRecord(r.csvCells());
            }
        }
        writeFile(path, b.toString());
    }

    /**
     * Writes the JSON ({@link ResultJson}), creating parent directories; an existing file is replaced.
     *
     * @param path   the file to write
     * @param report the run whose results are written
     * @throws IOException if a directory or the file cannot be written
     */
    public static void writeJson(Path path, PerfReport report) throws IOException {
        writeFile(path, ResultJson.text(report));
    }

    /**
     * The name/value pairs of the CSV's comment header and of the JSON's {@code machine} object:
     * the ar4j version and commit first, then the machine's fields.
     */
    static Map<String, String> metadata(PerfReport report) {
        Map<String, String> m = new LinkedHashMap<>();
        Ar4jVersion version = Ar4jVersion.current();
        m.put("ar4j_version", version.version());
        m.put("ar4j_commit", version.commit());
        MachineInfo machine = report.machine();
        if (machine != null) {
            m.putAll(machine.fields());
        }
        return m;
    }

    /** One result row as a CSV record line (no line end), as {@link PerfReport} appends while a run goes. */
    static String csvLine(List<String> cells) {
        return FORMAT.format(cells.toArray());
    }

    /**
     * Reads the table of a CSV written by {@link #writeCsv} (or by an older ar4j-perf).
     *
     * @param path the CSV file
     * @return one map per row, column name to cell
     * @throws IOException               if the file cannot be read
     * @throws NoSuchFileException       if there is no such file
     * @throws IllegalArgumentException  if the file has no header, is not well-formed CSV, or a row
     *                                   has the wrong number of cells
     */
    public static List<Map<String, String>> readCsv(Path path) throws IOException {
        return readCsvFile(path).rows();
    }

    /**
     * Reads a CSV with its comment header (metadata, GPUs, skipped columns).
     *
     * @param path the CSV file, UTF-8
     * @return the header's metadata, GPUs and skipped columns, and the rows
     * @throws IOException              if the file cannot be read ({@link NoSuchFileException} if absent)
     * @throws IllegalArgumentException as {@link #readCsv}
     */
    public static ResultCsv readCsvFile(Path path) throws IOException {
        return parse(Files.readString(path, StandardCharsets.UTF_8), path.toString());
    }

    /** Parses CSV text; {@code name} is used in messages. */
    static ResultCsv parse(String text, String name) {
        Map<String, String> metadata = new LinkedHashMap<>();
        List<String> gpus = new ArrayList<>();
        Map<String, String> skipped = new LinkedHashMap<>();
        int start = 0;
        while (start < text.length()) {
            int end = text.indexOf('\n', start);
            String line = text.substring(start, end < 0 ? text.length() : end);
            if (line.endsWith("\r")) {
                line = line.substring(0, line.length() - 1);
            }
            if (!line.isBlank() && !line.startsWith("#")) {
                break;
            }
            if (line.startsWith("#")) {
                comment(line.substring(1).stripLeading(), metadata, gpus, skipped);
            }
            start = end < 0 ? text.length() : end + 1;
        }
        CSVFormat format = FORMAT.builder().setHeader().setSkipHeaderRecord(true).get();
        List<Map<String, String>> rows = new ArrayList<>();
        try (CSVParser parser = CSVParser.parse(new StringReader(text.substring(start)), format)) {
            List<String> header = parser.getHeaderNames();
            if (header.isEmpty()) {
                throw new IllegalArgumentException(name + " has no header line (is it an ar4j-perf CSV?)");
            }
            for (CSVRecord record : parser) {
                if (record.size() != header.size()) {
                    throw new IllegalArgumentException(name + " row " + record.getRecordNumber() + " has "
                            + record.size() + " cells; the header has " + header.size());
                }
                Map<String, String> row = new LinkedHashMap<>();
                for (int i = 0; i < header.size(); i++) {
                    row.put(header.get(i), record.get(i));
                }
                rows.add(row);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e); // a StringReader does not fail
        } catch (UncheckedIOException | IllegalStateException e) {
            throw new IllegalArgumentException(name + " is not a well-formed CSV: " + e.getMessage(), e);
        }
        return new ResultCsv(metadata, gpus, skipped, rows);
    }

    private static void comment(String body, Map<String, String> metadata, List<String> gpus,
                                Map<String, String> skipped) {
        int colon = body.indexOf(": ");
        if (colon < 0) {
            return;
        }
        String key = body.substring(0, colon);
        String value = unescape(body.substring(colon + 2));
        if (key.matches("GPU \\d+")) {
            gpus.add(key + ": " + value);
        } else if (key.startsWith("skipped ")) {
            skipped.put(key.substring("skipped ".length()), value);
        } else {
            metadata.put(key, value);
        }
    }

    /** A comment value on one line: backslash, CR and LF escaped. */
    static String escape(String value) {
        return value.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r");
    }

    /** The inverse of {@link #escape}; any other backslash is kept as it is (files from older versions). */
    static String unescape(String value) {
        if (value.indexOf('\\') < 0) {
            return value;
        }
        StringBuilder b = new StringBuilder(value.length());
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            char next = i + 1 < value.length() ? value.charAt(i + 1) : 0;
            if (c == '\\' && (next == '\\' || next == 'n' || next == 'r')) {
                b.append(next == 'n' ? '\n' : next == 'r' ? '\r' : '\\');
                i++;
            } else {
                b.append(c);
            }
        }
        return b.toString();
    }

    static void writeFile(Path path, String text) throws IOException {
        Path parent = path.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        Files.writeString(path, text, StandardCharsets.UTF_8);
    }
}
