package dev.ar4j.dispatch;

import java.util.Locale;
import java.util.Objects;

/**
 * The all-reduce algorithm: what a user asks for (configuration, the builder, a per-call
 * override) and what the dispatcher decides ({@link Decision#algorithm()}). {@link #AUTO} asks the
 * dispatcher to choose from topology and size; every other constant is an algorithm ar4j can
 * launch: one of the custom CUDA kernels of {@code libar4j_custom_ar}, or NCCL. A decision is never
 * {@link #AUTO}.
 *
 * <p>A forced custom kernel runs whenever it can (the PCIe gate does not block it); when it cannot
 * (world size, hosts, P2P, alignment or size), the dispatcher falls back to NCCL and says so.
 * A forced {@link #NCCL} always runs NCCL.
 *
 * <p>Code that acts on an algorithm switches over it exhaustively, without a default branch, so
 * that adding a constant makes the compiler flag every place that has to learn about it.
 */
public enum Algorithm {
    /** Not an algorithm but the request to choose one: the dispatcher decides from topology and size. */
    AUTO("auto"),
    /** Every rank reads every peer's input and reduces all of it ({@code AR4J_ALGO_ONE_STAGE}). */
    ONE_STAGE("1stage"),
    /** Reduce-scatter into the signal scratch, then all-gather ({@code AR4J_ALGO_TWO_STAGE}). */
    TWO_STAGE("2stage"),
    /**
     * Lamport-style push ({@code AR4J_ALGO_PUSH} in the C ABI): each rank stores its input
     * into every peer's push buffer and the readers poll for it. Any device input of the rank's
     * device works as it is (no registration, no staging copy, eager or graph), up to
     * {@link #PUSH_MAX_BYTES} per call.
     */
    PUSH("push"),
    /** NCCL's {@code ncclAllReduce}; the fallback for everything the custom kernels do not cover. */
    NCCL("nccl"),
    /**
     * No communication: the group has one rank, whose all-reduce is its own input. Out of place it is
     * one device-to-device copy on the stream ({@code cudaMemcpyAsync}), in place nothing at all. Never a
     * policy ({@link #parse} does not accept it, {@link #isPolicy()} is false): the dispatcher of a
     * world size of 1 decides it whatever the policy.
     */
    LOCAL("local");

    /**
     * The largest all-reduce, in bytes, that the {@link #PUSH} kernel takes in one call: the C
     * ABI's {@code AR4J_PUSH_MAX_BYTES} (512 KiB).
     */
    public static final long PUSH_MAX_BYTES = 524288;

    /** The values {@link #parse} accepts, as listed in its error messages. */
    public static final String ACCEPTED_VALUES =
            "auto, 1stage, oneshot, force_1stage, 2stage, twoshot, force_2stage, push, lamport, nccl";

    private final String configName;

    Algorithm(String configName) {
        this.configName = configName;
    }

    /**
     * Parses an algorithm as configuration writes it: {@code auto | 1stage | oneshot | force_1stage |
     * 2stage | twoshot | force_2stage | push | lamport | nccl}, case-insensitive, surrounding
     * whitespace ignored.
     *
     * <p>The names mean one thing each: {@code oneshot} and {@code twoshot} are the one-stage and
     * two-stage kernels, as in SGLang, vLLM and TensorRT-LLM ({@code force_1stage} and
     * {@code force_2stage} are their escape-hatch spellings); the push kernel (Lamport-style
     * flag-in-data, {@link #PUSH}) is {@code push} or {@code lamport}, never "one-shot".
     *
     * @param value  the text to parse
     * @param source where the text came from, for the error message (for example
     *               "environment variable AR4J_ALLREDUCE_ALGO")
     * @return the algorithm the text names
     * @throws IllegalArgumentException naming the source, the value and the accepted values
     * @throws NullPointerException if {@code value} or {@code source} is {@code null}
     */
    public static Algorithm parse(String value, String source) {
        Objects.requireNonNull(value, "value");
        Objects.requireNonNull(source, "source");
        return switch (value.trim().toLowerCase(Locale.ROOT)) {
            case "auto" -> AUTO;
            case "1stage", "oneshot", "force_1stage" -> ONE_STAGE;
            case "2stage", "twoshot", "force_2stage" -> TWO_STAGE;
            case "push", "lamport" -> PUSH;
            case "nccl" -> NCCL;
            default -> throw new IllegalArgumentException(source + " has the value '" + value
                    + "', which is not an all-reduce algorithm; accepted (case-insensitive): " + ACCEPTED_VALUES);
        };
    }

    /**
     * The canonical configuration spelling: "auto", "1stage", "2stage", "push" or "nccl" ("local"
     * for {@link #LOCAL}, which is never configured).
     *
     * @return the canonical name, which {@link #parse} maps back to this constant if it {@link #isPolicy() is a policy}
     */
    public String configName() {
        return configName;
    }

    /**
     * The {@code ar4j_algorithm} value that the C ABI's {@code ar4j_all_reduce} takes.
     *
     * @return 1 for {@link #ONE_STAGE}, 2 for {@link #TWO_STAGE}, 3 for {@link #PUSH}
     * @throws IllegalStateException for {@link #NCCL}, which is not a custom kernel, for
     *     {@link #AUTO}, which is decided, never launched, and for {@link #LOCAL}, a copy or nothing
     */
    public int kernelCode() {
        return switch (this) {
            case ONE_STAGE -> 1;
            case TWO_STAGE -> 2;
            case PUSH -> 3;
            case NCCL -> throw new IllegalStateException(
                    "NCCL is not a custom kernel and has no ar4j_algorithm code; call ncclAllReduce instead");
            case LOCAL -> throw new IllegalStateException(
                    "LOCAL (world size 1) is a device copy or nothing, not a custom kernel");
            case AUTO -> throw new IllegalStateException("AUTO is decided by the dispatcher, never launched");
        };
    }

    /**
     * Whether this algorithm is one of ar4j's custom kernels (as opposed to NCCL, {@link #LOCAL} or {@link #AUTO}).
     *
     * @return {@code true} for {@link #ONE_STAGE}, {@link #TWO_STAGE} and {@link #PUSH}
     */
    public boolean isCustomKernel() {
        return switch (this) {
            case ONE_STAGE, TWO_STAGE, PUSH -> true;
            case NCCL, AUTO, LOCAL -> false;
        };
    }

    /**
     * Whether this constant can be configured as the algorithm policy (and is accepted by {@link #parse}).
     *
     * @return {@code false} for {@link #LOCAL} only, which the dispatcher of a world size of 1 decides itself
     */
    public boolean isPolicy() {
        return this != LOCAL;
    }

    /**
     * The name used in decision reasons and {@code explain()}: "one-stage", "two-stage",
     * "push", "NCCL", "local copy" (and "auto").
     *
     * @return the display name, lower case except for "NCCL"
     */
    public String displayName() {
        return switch (this) {
            case ONE_STAGE -> "one-stage";
            case TWO_STAGE -> "two-stage";
            case PUSH -> "push";
            case NCCL -> "NCCL";
            case LOCAL -> "local copy";
            case AUTO -> "auto";
        };
    }
}
