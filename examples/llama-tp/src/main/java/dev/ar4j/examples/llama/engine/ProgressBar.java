package dev.ar4j.examples.llama.engine;

import java.io.PrintStream;
import java.util.Locale;

/**
 * A one-line progress bar on a terminal stream ({@code \r}-rewritten, at most every 1%), for
 * loading or making weights that can be tens of GB. A {@code null} stream prints nothing.
 */
final class ProgressBar {

    private static final int WIDTH = 40;

    private final PrintStream out;
    private final String label;
    private final long total;
    private long done;
    private int shownPercent = -1;
    private final long startNanos = System.nanoTime();

    ProgressBar(PrintStream out, String label, long total) {
        this.out = out;
        this.label = label;
        this.total = Math.max(1, total);
    }

    void advance(long bytes) {
        done = Math.min(total, done + bytes);
        int percent = (int) (100 * done / total);
        if (out != null && percent != shownPercent) {
            shownPercent = percent;
            int filled = percent * WIDTH / 100;
            double seconds = (System.nanoTime() - startNanos) / 1e9;
            out.printf(Locale.ROOT, "\r%s [%s%s] %3d%% %.2f/%.2f GiB %.1f s", label, "#".repeat(filled),
                    ".".repeat(WIDTH - filled), percent, done / (double) (1L << 30), total / (double) (1L << 30), seconds);
            if (done == total) {
                out.println();
            }
            out.flush();
        }
    }

    void finish() {
        advance(total - done);
    }
}
