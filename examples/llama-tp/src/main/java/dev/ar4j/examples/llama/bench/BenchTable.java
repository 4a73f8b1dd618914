package dev.ar4j.examples.llama.bench;

import dev.ar4j.examples.llama.engine.StepTiming.Figures;

import java.io.PrintStream;
import java.util.Locale;

/**
 * Prints bench results in the manner of nccl-tests: a commented header, one row per step kind and
 * communication mode, fixed-width columns.
 */
public final class BenchTable {

    private final PrintStream out;

    /**
     * A table on a stream; prints the header.
     *
     * @param out    where to print
     * @param header the run's description (model, TP, devices), printed as a comment
     */
    public BenchTable(PrintStream out, String header) {
        this.out = out;
        out.println("# " + header);
        out.printf(Locale.ROOT, "# %-10s %-8s %7s %12s %12s %10s %16s%n", "comm", "step", "tokens", "median_ms",
                "tokens/s", "comm_%", "alloc_B/steps");
    }

    /**
     * One row.
     *
     * @param comm the communication mode
     * @param f    the figures
     */
    public void row(String comm, Figures f) {
        String share = Double.isNaN(f.commShare()) ? "n/a" : String.format(Locale.ROOT, "%.1f", 100 * f.commShare());
        String alloc = f.allocatedBytes() < 0 ? "n/a" : f.allocatedBytes() + "/" + f.loopSteps();
        out.printf(Locale.ROOT, "  %-10s %-8s %7d %12.4f %12.1f %10s %16s%n", comm,
                f.kind().name().toLowerCase(Locale.ROOT), f.tokens(), f.medianMillis(), f.tokensPerSecond(), share,
                alloc);
    }

    /**
     * A row for a mode that was not run, with the reason.
     *
     * @param comm   the communication mode
     * @param reason why it was not run
     */
    public void skipped(String comm, String reason) {
        out.printf(Locale.ROOT, "  %-10s not run: %s%n", comm, reason);
    }
}
