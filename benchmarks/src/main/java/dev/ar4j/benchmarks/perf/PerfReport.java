package dev.ar4j.benchmarks.perf;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * What rank 0 collects during a run: the aggregated results, the columns that were skipped and
 * why, notes, and the machine it ran on. Progress lines go to {@code progress} (stderr) as
 * results arrive.
 */
public final class PerfReport {
    private final PerfSettings settings;
    private final int worldSize;
    private final String commandLine;
    private final String processModel;
    private final PrintStream progress;
    private final List<PerfResult> results = new ArrayList<>();
    private final Map<String, String> skipped = new LinkedHashMap<>();
    private final List<String> notes = new ArrayList<>();
    private MachineInfo machine;
    private Path partialCsv;

    /**
     * Starts an empty report.
     *
     * @param settings     the settings of the run
     * @param worldSize    the number of ranks in the run
     * @param commandLine  how the run was started, as typed, for the report's header
     * @param processModel "one JVM per GPU" or "one JVM, one thread per GPU"
     * @param progress     where progress lines go (null: nowhere)
     * @throws NullPointerException if {@code settings}, {@code commandLine} or {@code processModel} is null
     */
    public PerfReport(PerfSettings settings, int worldSize, String commandLine, String processModel,
                      PrintStream progress) {
        this.settings = Objects.requireNonNull(settings, "settings");
        this.worldSize = worldSize;
        this.commandLine = Objects.requireNonNull(commandLine, "commandLine");
        this.processModel = Objects.requireNonNull(processModel, "processModel");
        this.progress = progress;
    }

    /** {@return the settings of the run} */
    public PerfSettings settings() {
        return settings;
    }

    /** {@return the number of ranks in the run} */
    public int worldSize() {
        return worldSize;
    }

    /** {@return how the run was started, as typed} */
    public String commandLine() {
        return commandLine;
    }

    /** {@return the process model: "one JVM per GPU" or "one JVM, one thread per GPU"} */
    public String processModel() {
        return processModel;
    }

    /**
     * Writes the CSV header now and appends every result to {@code csv} as it arrives, so that a
     * run stopped early (time limit, a failed rank) leaves what it measured. The final write
     * replaces the file. If the header cannot be written, a progress line says so and the results
     * are written only at the end; no exception is thrown.
     *
     * @param csv the CSV file to create or replace
     */
    public synchronized void streamTo(Path csv) {
        try {
            ResultFiles.writeCsv(csv, this);
            partialCsv = csv;
        } catch (IOException e) {
            progress("cannot write " + csv + " (" + e + "); results will only be written at the end");
        }
    }

    /**
     * Records a result, appends it to the streamed CSV if there is one ({@link #streamTo}), and
     * prints its progress line. A failed append stops the streaming, with a progress line.
     *
     * @param r the aggregated result of one cell
     */
    public synchronized void add(PerfResult r) {
        results.add(r);
        if (partialCsv != null) {
            try {
                Files.writeString(partialCsv, ResultFiles.csvLine(r.csvCells()) + "\n", StandardCharsets.UTF_8,
                        StandardOpenOption.APPEND);
            } catch (IOException e) {
                progress("cannot append to " + partialCsv + " (" + e + "); results will only be written at the end");
                partialCsv = null;
            }
        }
        progress(String.format(Locale.ROOT, "%s%-5s %-12s %10d B  %-9s %-12s %10.2f us  busbw %8.2f GB/s  #wrong %d%s",
                (r.operation().equals(Operation.ALL_REDUCE.label()) ? "" : r.operation() + " ")
                        + (r.pdl().equals(PdlSetting.DEFAULT.label()) ? "" : "pdl " + r.pdl() + " "),
                r.mode(), r.placement(), r.bytes(), r.algorithm(), "ran " + r.ran(), r.timeUs(), r.busbwGBps(),
                r.wrong(), Double.isNaN(r.hostUs()) ? ""
                        : String.format(Locale.ROOT, "  host %.2f us/call (in call %.2f)", r.hostUs(), r.callUs())));
    }

    /**
     * Records that a column was not measured, and why; the first reason per column stays.
     *
     * @param algorithm the column not measured
     * @param reason    why, for the report and the progress line
     */
    public synchronized void skip(PerfAlgorithm algorithm, String reason) {
        skip(algorithm.label(), reason);
    }

    /**
     * Records that a column or row ({@code fused}) was not measured, and why; the first reason per
     * label stays, and only it is printed.
     *
     * @param label  the column's or row's label, as in the table
     * @param reason why, for the report and the progress line
     */
    public synchronized void skip(String label, String reason) {
        if (skipped.putIfAbsent(label, reason) == null) {
            progress("skipping " + label + ": " + reason);
        }
    }

    /**
     * Records (and prints) that one cell was not run because the communicators would refuse it,
     * and why; the sweep goes on with the next cell.
     *
     * @param cell   the cell: mode, placement, operation, size, column and PDL setting
     * @param reason why it cannot run
     */
    public synchronized void notRunnable(String cell, String reason) {
        note("not runnable: " + cell + ": " + reason);
    }

    /**
     * Records a note for the report (and prints it).
     *
     * @param note one line of text
     */
    public synchronized void note(String note) {
        notes.add(note);
        progress(note);
    }

    /**
     * Records (and prints) a note unless an equal note was recorded already.
     *
     * @param note one line of text
     */
    public synchronized void noteOnce(String note) {
        if (!notes.contains(note)) {
            note(note);
        }
    }

    /**
     * Prints one progress line, prefixed {@code [ar4j-perf]}, to the report's progress stream
     * (stderr in ar4j-perf); does nothing if the report has none.
     *
     * @param line the text of the line
     */
    public void progress(String line) {
        if (progress != null) {
            progress.println("[ar4j-perf] " + line);
            progress.flush();
        }
    }

    /**
     * Sets the machine description, replacing any earlier one.
     *
     * @param info the machine the run ran on; null clears it
     */
    public synchronized void machine(MachineInfo info) {
        this.machine = info;
    }

    /** {@return the machine description, or null if none was collected} */
    public synchronized MachineInfo machine() {
        return machine;
    }

    /** {@return an unmodifiable copy of the results so far, in the order measured} */
    public synchronized List<PerfResult> results() {
        return List.copyOf(results);
    }

    /** {@return an unmodifiable copy of the skipped labels and their reasons, in no order} */
    public synchronized Map<String, String> skipped() {
        return Map.copyOf(skipped);
    }

    /** {@return an unmodifiable copy of the skipped labels and their reasons, in the order they were skipped} */
    public synchronized List<Map.Entry<String, String>> skippedInOrder() {
        return List.copyOf(skipped.entrySet());
    }

    /** {@return an unmodifiable copy of the notes, in the order recorded} */
    public synchronized List<String> notes() {
        return List.copyOf(notes);
    }

    /** {@return the wrong elements summed over every result, at least 0} */
    public synchronized long totalWrong() {
        return results.stream().mapToLong(PerfResult::wrong).sum();
    }
}
