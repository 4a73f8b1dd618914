package dev.ar4j.benchmarks.perf;

import java.util.Locale;

/** What an ar4j-perf run measures. */
public enum Scenario {
    /** The size sweep of nccl-tests' all_reduce_perf: one all-reduce per timed step. */
    SWEEP("sweep"),
    /**
     * The verify pass of a speculative-decoding step: {@value #VERIFY_ALL_REDUCES} all-reduces of
     * {@value #VERIFY_BYTES} bytes (3 tokens x 7168 hidden x bf16), captured in one CUDA graph.
     */
    VERIFY("verify");

    /** All-reduces in one verify pass. */
    public static final int VERIFY_ALL_REDUCES = 122;
    /** Bytes of each all-reduce of the verify pass. */
    public static final long VERIFY_BYTES = 43008;

    private final String label;

    Scenario(String label) {
        this.label = label;
    }

    /** "sweep" or "verify". */
    public String label() {
        return label;
    }

    /**
     * Parses {@code sweep | verify}, case-insensitive.
     *
     * @throws IllegalArgumentException naming the accepted values
     */
    public static Scenario parse(String text) {
        return switch (text.trim().toLowerCase(Locale.ROOT)) {
            case "sweep" -> SWEEP;
            case "verify" -> VERIFY;
            default -> throw new IllegalArgumentException("--scenario: '" + text + "' is not a scenario; accepted: sweep, verify");
        };
    }
}
