package dev.ar4j.benchmarks.perf;

/**
 * The rows of {@code --scenario verify-fused}: for each all-reduce column ({@code -a}, default
 * {@code push}, plus the NCCL baselines) the all-reduce followed by the separate residual add +
 * RMSNorm kernel ({@code ResidualRmsNorm.launch}), labelled e.g. {@code push+norm} and
 * {@code nccl+norm}; and {@value #FUSED}, the runtime's {@code Communicator.allReduceResidualRmsNorm},
 * whose {@code ran} is {@value #FUSED} when the fused kernel ran and e.g. {@code push+norm} when the
 * runtime ran the all-reduce and then the separate kernel instead.
 */
final class FusedVariant {
    /** The label of the fused entry point's row, and its {@code ran} when the fused kernel ran. */
    static final String FUSED = "fused";
    /** The suffix of an unfused row's label. */
    static final String NORM_SUFFIX = "+norm";

    private FusedVariant() {
    }

    /** "push+norm", "nccl+norm", "nccl-symm+norm". */
    static String label(PerfAlgorithm allReduce) {
        return allReduce.label() + NORM_SUFFIX;
    }
}
