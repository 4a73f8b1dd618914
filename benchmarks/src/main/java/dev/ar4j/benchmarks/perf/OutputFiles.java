package dev.ar4j.benchmarks.perf;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.Objects;

/**
 * Where rank 0 writes the results, and the writing itself: the table to stdout, then CSV, JSON
 * and the PNG chart. The PNG is best effort: a Java runtime without {@code java.desktop} or fonts
 * (a small jlink'd one) cannot draw it, and the run then says how to draw it from the CSV later.
 *
 * @param csv  the CSV path
 * @param json the JSON path
 * @param png  the PNG path, or null for none
 */
public record OutputFiles(Path csv, Path json, Path png) {

    /** Checks the paths. */
    public OutputFiles {
        Objects.requireNonNull(csv, "csv");
        Objects.requireNonNull(json, "json");
    }

    /**
     * Prints the table to {@code out}, writes the files and reports each to {@code err}.
     *
     * @return false if a file could not be written (the PNG does not count)
     */
    boolean write(PerfReport report, PrintStream out, PrintStream err) {
        ResultTable.print(out, report);
        boolean ok = true;
        try {
            ResultFiles.writeCsv(csv, report);
            err.println("[ar4j-perf] wrote " + csv);
        } catch (IOException e) {
            err.println("[ar4j-perf] could not write " + csv + ": " + e);
            ok = false;
        }
        try {
            ResultFiles.writeJson(json, report);
            err.println("[ar4j-perf] wrote " + json);
        } catch (IOException e) {
            err.println("[ar4j-perf] could not write " + json + ": " + e);
            ok = false;
        }
        if (png != null && ok) {
            drawPng(err);
        }
        err.flush();
        return ok;
    }

    private void drawPng(PrintStream err) {
        String later = "draw it where Java has java.desktop with: ar4j-perf plot " + csv + " " + png;
        String missing = chartUnavailable();
        if (missing != null) {
            err.println("[ar4j-perf] no PNG drawn here: " + missing + "; " + later);
            return;
        }
        try {
            int series = LatencyChart.draw(ResultFiles.readCsvFile(csv), png, null);
            err.println("[ar4j-perf] wrote " + png + " (" + series + " series)");
        } catch (IOException | RuntimeException | LinkageError e) {
            err.println("[ar4j-perf] no PNG drawn here (" + e.getClass().getName() + ": " + e.getMessage() + "); " + later);
        } catch (Error e) {
            if (e instanceof VirtualMachineError) {
                throw e;
            }
            // AWT reports a missing display or font configuration as java.awt.AWTError.
            err.println("[ar4j-perf] no PNG drawn here (" + e.getClass().getName() + ": " + e.getMessage() + "); " + later);
        }
    }

    /**
     * Why this Java runtime cannot draw the chart (it lacks the {@code java.desktop} module, as a
     * small jlink'd runtime does), or null if it can.
     */
    static String chartUnavailable() {
        if (ModuleLayer.boot().findModule("java.desktop").isEmpty()) {
            return "this Java runtime (" + System.getProperty("java.home") + ") has no java.desktop module, which "
                    + "JFreeChart needs";
        }
        return null;
    }
}
