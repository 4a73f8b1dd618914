package dev.ar4j.benchmarks.perf;

import java.util.List;

/**
 * One measured cell: one size, algorithm, timing mode and placement, aggregated over the ranks.
 * Times are microseconds per all-reduce; NaN where a figure does not apply (host times in graph
 * mode).
 *
 * @param scenario          "sweep" or "verify"
 * @param mode              "graph" or "eager"
 * @param placement         "out-of-place" or "in-place"
 * @param registered        the ar4j input lay in a registered buffer
 * @param worldSize         ranks
 * @param bytes             bytes per all-reduce
 * @param count             elements per all-reduce
 * @param dtype             "bf16", "fp16" or "fp32"
 * @param algorithm         the column: "auto", "1stage", "2stage", "push", "nccl", "nccl-symm"
 * @param ran               what actually ran: "push", "1stage", "2stage", "nccl", "nccl-symm",
 *                          or e.g. "2stage→nccl" when a forced kernel fell back
 * @param fellBack          a forced kernel fell back to NCCL
 * @param reason            the dispatcher's reason (empty for the NCCL baselines)
 * @param timeUs            GPU time per all-reduce, mean over ranks of each rank's median
 * @param timeUsMax         the slowest rank's median
 * @param wrong             wrong elements in the check, summed over ranks
 * @param hostUs            eager: host wall time per all-reduce from the first Java call to the
 *                          last one's completion (mean over ranks); NaN in graph mode
 * @param callUs            eager: host time inside the Java call per all-reduce (mean over ranks)
 * @param allReducesPerPass all-reduces per pass (1 for the sweep, 122 for verify)
 * @param iterations        the {@code -n} setting
 * @param repetitions       the {@code -r} setting
 * @param warmup            the {@code -w} setting
 * @param operation         the collective: "allreduce" (verify-fused too: its all-reduces),
 *                          "allgather", "reducescatter" or "broadcast"; {@code bytes} is its whole
 *                          buffer, as in nccl-tests ({@link Operation})
 * @param pdl               the PDL setting the communicators were built with: "on", "off" or "default"
 */
public record PerfResult(String scenario, String mode, String placement, boolean registered, int worldSize,
                         long bytes, long count, String dtype, String algorithm, String ran, boolean fellBack,
                         String reason, double timeUs, double timeUsMax, long wrong, double hostUs, double callUs,
                         int allReducesPerPass, int iterations, int repetitions, int warmup, String operation,
                         String pdl) {

    /**
     * An all-reduce row with the runtime's PDL default: {@code operation} is "allreduce" and
     * {@code pdl} "default"; the other components are as in the canonical constructor.
     *
     * @param scenario          "sweep" or "verify"
     * @param mode              "graph" or "eager"
     * @param placement         "out-of-place" or "in-place"
     * @param registered        the ar4j input lay in a registered buffer
     * @param worldSize         ranks
     * @param bytes             bytes per all-reduce
     * @param count             elements per all-reduce
     * @param dtype             "bf16", "fp16" or "fp32"
     * @param algorithm         the column: "auto", "1stage", "2stage", "push", "nccl", "nccl-symm"
     * @param ran               what actually ran, e.g. "2stage→nccl" when a forced kernel fell back
     * @param fellBack          a forced kernel fell back to NCCL
     * @param reason            the dispatcher's reason (empty for the NCCL baselines)
     * @param timeUs            GPU time per all-reduce, mean over ranks of each rank's median
     * @param timeUsMax         the slowest rank's median
     * @param wrong             wrong elements in the check, summed over ranks
     * @param hostUs            eager: host wall time per all-reduce (mean over ranks); NaN in graph mode
     * @param callUs            eager: host time inside the Java call per all-reduce (mean over ranks)
     * @param allReducesPerPass all-reduces per pass (1 for the sweep, 122 for verify)
     * @param iterations        the {@code -n} setting
     * @param repetitions       the {@code -r} setting
     * @param warmup            the {@code -w} setting
     */
    public PerfResult(String scenario, String mode, String placement, boolean registered, int worldSize,
                      long bytes, long count, String dtype, String algorithm, String ran, boolean fellBack,
                      String reason, double timeUs, double timeUsMax, long wrong, double hostUs, double callUs,
                      int allReducesPerPass, int iterations, int repetitions, int warmup) {
        this(scenario, mode, placement, registered, worldSize, bytes, count, dtype, algorithm, ran, fellBack, reason,
                timeUs, timeUsMax, wrong, hostUs, callUs, allReducesPerPass, iterations, repetitions, warmup,
                Operation.ALL_REDUCE.label(), PdlSetting.DEFAULT.label());
    }

    /** Checks the operation's name. */
    public PerfResult {
        Operation.parse(operation);
        java.util.Objects.requireNonNull(pdl, "pdl");
    }

    /** The CSV columns, in order. */
    public static final List<String> COLUMNS = List.of("scenario", "operation", "pdl", "mode", "placement", "registered", "world_size",
            "bytes", "count", "dtype", "algorithm", "ran", "fell_back", "time_us", "time_us_max", "algbw_gbps",
            "busbw_gbps", "wrong", "host_us", "call_us", "allreduces_per_pass", "pass_us", "iterations",
            "repetitions", "warmup", "reason");

    /**
     * Algorithm bandwidth: bytes per all-reduce over its time.
     *
     * @return GB/s (10^9 bytes per second); NaN if {@code timeUs} is NaN, infinite if it is 0
     */
    public double algbwGBps() {
        return bytes / timeUs / 1e3;
    }

    /**
     * Bus bandwidth as nccl-tests defines it: algbw x 2(n-1)/n for all-reduce, x (n-1)/n for
     * all-gather and reduce-scatter, x 1 for broadcast ({@link Operation#busFactor}).
     *
     * @return GB/s (10^9 bytes per second); equal to {@link #algbwGBps} on one rank
     */
    public double busbwGBps() {
        return algbwGBps() * Operation.parse(operation).busFactor(Math.max(1, worldSize));
    }

    /**
     * Time of one pass ({@link #allReducesPerPass} all-reduces).
     *
     * @return microseconds; NaN if {@code timeUs} is NaN
     */
    public double passUs() {
        return timeUs * allReducesPerPass;
    }

    /**
     * Whether this cell ran one of ar4j's kernels (not NCCL), alone or followed by the norm ("push+norm").
     *
     * @return true if {@code ran}, less any norm suffix, is "1stage", "2stage", "push" or "fused";
     *         false for NCCL and for fallbacks ("2stage→nccl")
     */
    public boolean ranCustomKernel() {
        String kernel = ran.endsWith(FusedVariant.NORM_SUFFIX)
                ? ran.substring(0, ran.length() - FusedVariant.NORM_SUFFIX.length()) : ran;
        return kernel.equals("1stage") || kernel.equals("2stage") || kernel.equals("push") || kernel.equals("fused");
    }

    /**
     * The row's values as CSV cells, in {@link #COLUMNS} order (NaN as an empty cell).
     *
     * @return an unmodifiable list of {@code COLUMNS.size()} cells, the derived figures included
     */
    public List<String> csvCells() {
        return List.of(scenario, operation, pdl, mode, placement, Boolean.toString(registered), Integer.toString(worldSize),
                Long.toString(bytes), Long.toString(count), dtype, algorithm, ran, Boolean.toString(fellBack),
                number(timeUs), number(timeUsMax), number(algbwGBps()), number(busbwGBps()), Long.toString(wrong),
                number(hostUs), number(callUs), Integer.toString(allReducesPerPass), number(passUs()),
                Integer.toString(iterations), Integer.toString(repetitions), Integer.toString(warmup), reason);
    }

    /** A number with enough digits, or "" for NaN. */
    static String number(double value) {
        if (Double.isNaN(value)) {
            return "";
        }
        if (Double.isInfinite(value)) {
            return value > 0 ? "inf" : "-inf";
        }
        return String.format(java.util.Locale.ROOT, "%.4f", value);
    }
}
