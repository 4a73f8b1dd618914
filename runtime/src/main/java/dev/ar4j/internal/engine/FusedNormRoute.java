package dev.ar4j.internal.engine;

import dev.ar4j.DType;
import dev.ar4j.dispatch.Algorithm;
import dev.ar4j.dispatch.Decision;
import dev.ar4j.internal.kernels.CustomAllReduceKernels;

import java.util.Objects;

/**
 * How {@code Communicator.allReduceResidualRmsNorm} carries out one call: one fused kernel (the push
 * one on the input where it lies, the one-stage one on its registered input or on the staging
 * buffer), or the all-reduce followed by the separate residual add + RMSNorm kernel. A pure
 * function of the dispatcher's algorithm for the call's size and of the call's buffers; every
 * route gives bitwise the same result.
 */
enum FusedNormRoute {
    /** One push kernel on the input where it lies (any input; {@code out} may be {@code in}). */
    PUSH,
    /** One one-stage kernel that reads the registered input in place (no output overlaps it). */
    ONE_STAGE,
    /** The input copied into the staging buffer, then one one-stage kernel on the staging buffer. */
    ONE_STAGE_STAGED,
    /** The all-reduce as {@code Communicator.allReduce} decides, then the residual add + RMSNorm kernel. */
    UNFUSED;

    /**
     * Whether rows of {@code hidden} elements of {@code dtype} suit the fused kernels: a multiple of
     * 16 bytes, at most {@link CustomAllReduceKernels#FUSED_MAX_HIDDEN} elements.
     */
    static boolean fusableRow(int hidden, DType dtype) {
        return hidden >= 1 && hidden <= CustomAllReduceKernels.FUSED_MAX_HIDDEN
                && (long) hidden * dtype.byteSize() % 16 == 0;
    }

    /**
     * The route of one call.
     *
     * @param algorithm           what the dispatcher decided for the call's size, alignment and registration
     * @param hidden              elements per row
     * @param dtype               the element type
     * @param registered          whether the input lies in a registered buffer
     * @param outputOverlapsInput whether {@code out} or {@code residualOut} overlaps the input (the one-stage
     *                            kernel's peers read the input during the whole launch: then it is staged)
     * @param bytes               the input's size
     * @param stagingBytes        the staging buffer's size
     * @return the route; {@link #UNFUSED} for a row the fused kernels do not take, for two-stage and NCCL,
     *     and for a one-stage call that would need staging but does not fit the staging buffer
     */
    static FusedNormRoute of(Algorithm algorithm, int hidden, DType dtype, boolean registered,
                             boolean outputOverlapsInput, long bytes, long stagingBytes) {
        Objects.requireNonNull(algorithm, "algorithm");
        if (!fusableRow(hidden, Objects.requireNonNull(dtype, "dtype"))) {
            return UNFUSED;
        }
        return switch (algorithm) {
            case PUSH -> PUSH;
            case ONE_STAGE -> registered && !outputOverlapsInput ? ONE_STAGE
                    : bytes <= stagingBytes ? ONE_STAGE_STAGED : UNFUSED;
            case TWO_STAGE, NCCL, LOCAL, AUTO -> UNFUSED; // a decision is never AUTO; LOCAL: ResidualNormCalls.solo
        };
    }

    /** Whether [a, a + bytes) and [b, b + bytes) overlap. */
    static boolean overlaps(long a, long b, long bytes) {
        return Long.compareUnsigned(a, b + bytes) < 0 && Long.compareUnsigned(b, a + bytes) < 0;
    }

    /**
     * What this route runs, in one line, for {@code Communicator.explainResidualRmsNorm}.
     *
     * @param decision the all-reduce's decision (its algorithm and reason)
     * @param hidden   elements per row (named when the row rules the fused kernels out)
     * @param dtype    the element type
     */
    String describe(Decision decision, int hidden, DType dtype) {
        String reason = " (" + decision.reason() + ")";
        return switch (this) {
            case PUSH -> "fused: one push kernel all-reduces, adds the residual and normalises" + reason;
            case ONE_STAGE -> "fused: one 1-stage kernel all-reduces the registered input in place, adds the residual "
                    + "and normalises (an output overlapping the input is staged first)" + reason;
            case ONE_STAGE_STAGED -> "fused: one 1-stage kernel all-reduces, adds the residual and normalises, after a "
                    + "copy of the input into the staging buffer" + reason;
            case UNFUSED -> "all-reduce by " + decision.algorithm() + reason + ", then the residual add + RMSNorm kernel"
                    + (!fusableRow(hidden, dtype) && (decision.algorithm() == Algorithm.PUSH
                    || decision.algorithm() == Algorithm.ONE_STAGE) ? " (the fused kernels take rows of a multiple of "
                    + "16 bytes, at most " + CustomAllReduceKernels.FUSED_MAX_HIDDEN + " elements)" : "");
        };
    }
}
