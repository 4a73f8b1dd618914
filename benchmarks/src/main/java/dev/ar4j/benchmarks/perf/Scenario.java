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
    VERIFY("verify"),
    /**
     * The verify pass with each all-reduce followed by its residual add and RMSNorm: {@value
     * #VERIFY_ALL_REDUCES} x (all-reduce of {@value FusedNormCheck#ROWS} x {@value
     * FusedNormCheck#HIDDEN} elements, then {@code ResidualRmsNorm}) in one CUDA graph, per variant
     * ({@link FusedVariant}).
     */
    VERIFY_FUSED("verify-fused");

    /** All-reduces in one verify pass. */
    public static final int VERIFY_ALL_REDUCES = 122;
    /** Bytes of each all-reduce of the verify pass. */
    public static final long VERIFY_BYTES = 43008;

    private final String label;

    Scenario(String label) {
        this.label = label;
    }

    /** {@return whether this is one of the verify passes (a fixed shape, 122 calls in one graph): not {@link #SWEEP}} */
    public boolean isVerify() {
        return this != SWEEP;
    }

    /** {@return the name in {@code --scenario}, the CSV and JSON: "sweep", "verify" or "verify-fused"} */
    public String label() {
        return label;
    }

    /**
     * Parses {@code sweep | verify | verify-fused}, case-insensitive ({@code verify_fused} and
     * {@code fused} also name verify-fused).
     *
     * @param text the value of {@code --scenario}; surrounding blanks are ignored
     * @return the scenario named
     * @throws IllegalArgumentException if {@code text} names none, with a message naming the accepted values
     */
    public static Scenario parse(String text) {
        return switch (text.trim().toLowerCase(Locale.ROOT)) {
            case "sweep" -> SWEEP;
            case "verify" -> VERIFY;
            case "verify-fused", "verify_fused", "fused" -> VERIFY_FUSED;
            default -> throw new IllegalArgumentException("--scenario: '" + text + "' is not a scenario; accepted: sweep, "
                    + "verify, verify-fused");
        };
    }
}
