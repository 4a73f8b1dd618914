package dev.ar4j.dispatch;

import java.util.Locale;
import java.util.Objects;
import java.util.Optional;

/**
 * What the user asked the dispatcher to do: decide by itself ({@link #AUTO}), or force one
 * algorithm.
 *
 * <p>A forced custom kernel runs whenever it can (the PCIe gate does not block it); when it cannot
 * (world size, hosts, P2P, alignment or size), the dispatcher falls back to NCCL and says so.
 * A forced {@link #NCCL} always runs NCCL.
 */
public enum AlgorithmPolicy {
    /** The dispatcher chooses from topology and size. */
    AUTO("auto"),
    /** Force the one-stage kernel wherever it can run. */
    ONE_STAGE("1stage"),
    /** Force the two-stage kernel wherever it can run. */
    TWO_STAGE("2stage"),
    /** Force the push kernel wherever it can run (up to {@link Algorithm#PUSH_MAX_BYTES}). */
    PUSH("push"),
    /** Always use NCCL. */
    NCCL("nccl");

    /** The values {@link #parse} accepts, as listed in its error messages. */
    public static final String ACCEPTED_VALUES =
            "auto, 1stage, oneshot, force_1stage, 2stage, twoshot, force_2stage, push, lamport, nccl";

    private final String configName;

    AlgorithmPolicy(String configName) {
        this.configName = configName;
    }

    /**
     * The canonical configuration spelling: "auto", "1stage", "2stage", "push" or "nccl".
     *
     * @return the canonical name, which {@link #parse} maps back to this policy
     */
    public String configName() {
        return configName;
    }

    /**
     * The algorithm this policy forces, or empty for {@link #AUTO}.
     *
     * @return the forced algorithm, empty for {@link #AUTO}
     */
    public Optional<Algorithm> forcedAlgorithm() {
        return switch (this) {
            case AUTO -> Optional.empty();
            case ONE_STAGE -> Optional.of(Algorithm.ONE_STAGE);
            case TWO_STAGE -> Optional.of(Algorithm.TWO_STAGE);
            case PUSH -> Optional.of(Algorithm.PUSH);
            case NCCL -> Optional.of(Algorithm.NCCL);
        };
    }

    /**
     * Parses a policy as configuration writes it: {@code auto | 1stage | oneshot | force_1stage |
     * 2stage | twoshot | force_2stage | push | lamport | nccl}, case-insensitive, surrounding
     * whitespace ignored.
     *
     * <p>The names mean one thing each: {@code oneshot} and {@code twoshot} are the one-stage and
     * two-stage kernels, as in SGLang, vLLM and TensorRT-LLM ({@code force_1stage} and
     * {@code force_2stage} are their escape-hatch spellings); the push kernel (Lamport-style
     * flag-in-data, {@link Algorithm#PUSH}) is {@code push} or {@code lamport}, never "one-shot".
     *
     * @param value  the text to parse
     * @param source where the text came from, for the error message (for example
     *               "environment variable AR4J_ALLREDUCE_ALGO")
     * @return the policy the text names
     * @throws IllegalArgumentException naming the source, the value and the accepted values
     * @throws NullPointerException if {@code value} or {@code source} is {@code null}
     */
    public static AlgorithmPolicy parse(String value, String source) {
        Objects.requireNonNull(value, "value");
        Objects.requireNonNull(source, "source");
        return switch (value.trim().toLowerCase(Locale.ROOT)) {
            case "auto" -> AUTO;
            case "1stage", "oneshot", "force_1stage" -> ONE_STAGE;
            case "2stage", "twoshot", "force_2stage" -> TWO_STAGE;
            case "push", "lamport" -> PUSH;
            case "nccl" -> NCCL;
            default -> throw new IllegalArgumentException(source + " has the value '" + value
                    + "', which is not an all-reduce algorithm policy; accepted (case-insensitive): "
                    + ACCEPTED_VALUES);
        };
    }
}
