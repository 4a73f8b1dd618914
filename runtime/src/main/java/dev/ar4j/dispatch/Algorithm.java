package dev.ar4j.dispatch;

/**
 * An all-reduce algorithm that ar4j can launch: one of the custom CUDA kernels of
 * {@code libar4j_custom_ar}, or NCCL.
 *
 * <p>Code that acts on an algorithm switches over it exhaustively, without a default branch, so
 * that adding a constant makes the compiler flag every place that has to learn about it.
 */
public enum Algorithm {
    /** Every rank reads every peer's input and reduces all of it ({@code AR4J_ALGO_ONE_STAGE}). */
    ONE_STAGE,
    /** Reduce-scatter into the signal scratch, then all-gather ({@code AR4J_ALGO_TWO_STAGE}). */
    TWO_STAGE,
    /**
     * Lamport-style push ({@code AR4J_ALGO_ONE_SHOT_PUSH} in the C ABI): each rank stores its input
     * into every peer's push buffer and the readers poll for it. Any device input of the rank's
     * device works as it is (no registration, no staging copy, eager or graph), up to
     * {@link #PUSH_MAX_BYTES} per call.
     */
    PUSH,
    /** NCCL's {@code ncclAllReduce}; the fallback for everything the custom kernels do not cover. */
    NCCL;

    /**
     * The largest all-reduce, in bytes, that the {@link #PUSH} kernel takes in one call: the C
     * ABI's {@code AR4J_PUSH_MAX_BYTES} (512 KiB).
     */
    public static final long PUSH_MAX_BYTES = 524288;

    /**
     * The {@code ar4j_algorithm} value that the C ABI's {@code ar4j_all_reduce} takes.
     *
     * @return 1 for {@link #ONE_STAGE}, 2 for {@link #TWO_STAGE}, 3 for {@link #PUSH}
     * @throws IllegalStateException for {@link #NCCL}, which is not a custom kernel
     */
    public int kernelCode() {
        return switch (this) {
            case ONE_STAGE -> 1;
            case TWO_STAGE -> 2;
            case PUSH -> 3;
            case NCCL -> throw new IllegalStateException(
                    "NCCL is not a custom kernel and has no ar4j_algorithm code; call ncclAllReduce instead");
        };
    }

    /**
     * Whether this algorithm is one of ar4j's custom kernels (as opposed to NCCL).
     *
     * @return {@code true} for {@link #ONE_STAGE}, {@link #TWO_STAGE} and {@link #PUSH}, {@code false} for
     *     {@link #NCCL}
     */
    public boolean isCustomKernel() {
        return switch (this) {
            case ONE_STAGE, TWO_STAGE, PUSH -> true;
            case NCCL -> false;
        };
    }

    /**
     * The name used in decision reasons and {@code explain()}: "one-stage", "two-stage",
     * "push", "NCCL".
     *
     * @return the display name, lower case except for "NCCL"
     */
    public String displayName() {
        return switch (this) {
            case ONE_STAGE -> "one-stage";
            case TWO_STAGE -> "two-stage";
            case PUSH -> "push";
            case NCCL -> "NCCL";
        };
    }
}
