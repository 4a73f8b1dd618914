package dev.ar4j.benchmarks.perf;

import java.util.Optional;

/**
 * The rows of {@code --scenario verify-fused}: for each all-reduce column ({@code -a}, default
 * {@code push}, plus the NCCL baselines) the all-reduce followed by the separate residual add +
 * RMSNorm kernel ({@code ResidualRmsNorm.launch}), labelled e.g. {@code push+norm} and
 * {@code nccl+norm}; and {@value #FUSED}, the runtime's fused all-reduce + residual + RMSNorm entry
 * point, one more row when the runtime has one.
 */
final class FusedVariant {
    /** The label of the fused entry point's row. */
    static final String FUSED = "fused";
    /** The suffix of an unfused row's label. */
    static final String NORM_SUFFIX = "+norm";

    private FusedVariant() {
    }

    /** "push+norm", "nccl+norm", "nccl-symm+norm". */
    static String label(PerfAlgorithm allReduce) {
        return allReduce.label() + NORM_SUFFIX;
    }

    /**
     * Why the fused entry point is not measured, or empty when it is. The runtime on main
     * (2026-12-01) has no fused all-reduce + RMSNorm call (issue 12, item 3 is open); when it gets
     * one, this returns empty and {@code FusedPasses} enqueues it.
     */
    static Optional<String> fusedUnavailable() {
        return Optional.of("not available: the runtime has no fused all-reduce + residual + RMSNorm entry point yet "
                + "(issue 12, item 3); measured as one more row once it has");
    }
}
