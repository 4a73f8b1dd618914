package dev.ar4j.examples.llama;

import dev.ar4j.examples.llama.engine.EngineMemory;
import dev.ar4j.examples.llama.engine.StepKind;
import dev.ar4j.examples.llama.engine.StepTiming.Figures;
import dev.ar4j.examples.llama.engine.StepTiming.Profile;
import dev.ar4j.examples.llama.engine.StepTiming.ProfileRow;

import java.io.PrintStream;
import java.util.List;
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
     * The device memory of a run: rank 0's buffers by kind, and the most the GPU had in use after any of the
     * steps (every buffer is allocated before the first step, so this is the run's peak).
     *
     * @param comm  the communication mode
     * @param plan  rank 0's buffers
     * @param inUse the most bytes in use on the GPU (cudaMemGetInfo: every process, the CUDA contexts too)
     * @param ranks the ranks in this process
     */
    public void memory(String comm, EngineMemory.Plan plan, long inUse, int ranks) {
        out.printf(Locale.ROOT, "# memory (%s): rank 0's buffers %.2f GiB = weights %.2f + KV cache %.2f + activations "
                + "and workspaces %.2f; the GPU's memory in use after the steps %.2f GiB (%d rank(s) of this process, "
                + "CUDA context included)%n", comm, gib(plan.total()), gib(plan.weights()), gib(plan.kvCache()),
                gib(plan.work()), gib(inUse), ranks);
    }

    /**
     * What ar4j runs for each size of all-reduce the steps make (rank 0's {@code explainResidualRmsNorm}).
     *
     * @param comm      the communication mode
     * @param sizes     the sizes
     * @param explained one line per size, in the same order
     */
    void allReduces(String comm, List<AllReduceSizes.Size> sizes, List<String> explained) {
        out.printf(Locale.ROOT, "# all-reduces (%s): each an all-reduce + residual + RMSNorm of rows x hidden bf16%n",
                comm);
        for (int i = 0; i < sizes.size(); i++) {
            AllReduceSizes.Size z = sizes.get(i);
            out.printf(Locale.ROOT, "#   %s, %d row(s), %d bytes, %d per step: %s%n", z.step(), z.rows(), z.bytes(),
                    z.callsPerStep(), explained.get(i));
        }
    }

    private static double gib(long bytes) {
        return bytes / (double) (1L << 30);
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

    /**
     * A profile of one step: a commented table, one row per kind of kernel.
     *
     * @param comm the communication mode
     * @param p    the profile
     */
    public void profile(String comm, Profile p) {
        double sum = p.rows().stream().mapToDouble(ProfileRow::millis).sum();
        if (p.kind() == StepKind.PREFILL) {
            out.printf(Locale.ROOT, "# profile (%s): the eager chunked prefill of %d tokens, every chunk; CUDA events "
                    + "around each kind of kernel, summed over the chunks (they add their own time: the prefill with "
                    + "them took %.4f ms); MB: the weights and the attention's keys read, TB/s: those bytes over the "
                    + "time (prefill's products are bound by compute, not by those bytes)%n", comm, p.tokens(),
                    p.eagerMillis());
        } else {
            out.printf(Locale.ROOT, "# profile (%s): one eager %s step of %d token(s), %d keys per token; CUDA events "
                    + "around each kind of kernel (they add their own time and stop a kernel from starting early, so "
                    + "the eager step, %.4f ms, is longer than a graph replay)%n", comm,
                    p.kind().name().toLowerCase(Locale.ROOT), p.tokens(), p.contextKeys(), p.eagerMillis());
        }
        out.printf(Locale.ROOT, "# %-34s %6s %10s %7s %10s %8s%n", "kernels", "calls", "ms", "share", "MB", "TB/s");
        for (ProfileRow r : p.rows()) {
            out.printf(Locale.ROOT, "  %-34s %6d %10.4f %6.1f%% %10.2f %8.2f%n", r.section().label(), r.calls(),
                    r.millis(), 100 * r.millis() / p.eagerMillis(), r.bytes() / 1e6, r.terabytesPerSecond());
        }
        out.printf(Locale.ROOT, "  %-34s %6s %10.4f %6.1f%%%n", "between the sections (events, gaps)", "",
                p.eagerMillis() - sum, 100 * (p.eagerMillis() - sum) / p.eagerMillis());
    }
}
