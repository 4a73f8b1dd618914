package dev.ar4j.dispatch;

/**
 * Where the automatic policy switches algorithms, on NVLink (or with the PCIe gate lifted), once
 * the call is a multiple of 16 bytes with 16-byte aligned pointers:
 * <ol>
 *   <li>bytes &lt;= {@code pushUpToBytes} → push, registered or not (it needs no staging
 *       copy);</li>
 *   <li>otherwise, with world size 2, one-stage;</li>
 *   <li>otherwise one-stage when world size &lt;= 4 and bytes &lt; {@code upTo4RanksBytes}, or when
 *       world size &lt;= 8 and bytes &lt; {@code upTo8RanksBytes}; two-stage above.</li>
 * </ol>
 * The defaults follow the measurements on H200s (the figures: benchmarks/RESULTS.md): each
 * threshold is the size where the next algorithm becomes the faster one in a CUDA graph.
 *
 * @param pushUpToBytes   the push kernel runs up to and including this size; 0 keeps the automatic
 *                        policy from choosing it; at most {@link Algorithm#PUSH_MAX_BYTES}
 * @param upTo4RanksBytes one-stage runs strictly below this size for world sizes up to 4
 * @param upTo8RanksBytes one-stage runs strictly below this size for world sizes up to 8
 */
public record AlgorithmThresholds(long pushUpToBytes, long upTo4RanksBytes, long upTo8RanksBytes) {

    /** The default {@link #pushUpToBytes}: 256 KiB. */
    public static final long DEFAULT_PUSH_UP_TO_BYTES = 256 * 1024;

    /** Push up to 256 KiB; one-stage below 512 KiB for up to 4 ranks, below 256 KiB for up to 8 ranks. */
    public static final AlgorithmThresholds DEFAULTS =
            new AlgorithmThresholds(DEFAULT_PUSH_UP_TO_BYTES, 512 * 1024, 256 * 1024);

    /**
     * The defaults for a world size. With two ranks the push kernel runs up to its 512 KiB limit,
     * since there it beats the one-stage kernel up to that limit, in a CUDA graph and (needing no
     * staging copy) in eager calls (benchmarks/RESULTS.md). With more ranks, where push sends n-1
     * copies of the input and was not measured, {@link #DEFAULTS} apply.
     *
     * @param worldSize the number of ranks in the group
     * @return {@link #DEFAULTS} with the push threshold at {@link Algorithm#PUSH_MAX_BYTES} for 2 ranks,
     *     {@link #DEFAULTS} otherwise
     */
    public static AlgorithmThresholds forWorldSize(int worldSize) {
        return worldSize == 2 ? DEFAULTS.withPushUpToBytes(Algorithm.PUSH_MAX_BYTES) : DEFAULTS;
    }

    /**
     * Creates thresholds, checking their ranges.
     *
     * @throws IllegalArgumentException if {@code pushUpToBytes} is negative or above
     *                                  {@link Algorithm#PUSH_MAX_BYTES}, or a one-stage threshold
     *                                  is not positive
     */
    public AlgorithmThresholds {
        if (pushUpToBytes < 0 || pushUpToBytes > Algorithm.PUSH_MAX_BYTES) {
            throw new IllegalArgumentException("the push threshold must be between 0 (never push automatically) and "
                    + Algorithm.PUSH_MAX_BYTES + " bytes (the push kernel's 512 KiB limit), got " + pushUpToBytes);
        }
        if (upTo4RanksBytes <= 0 || upTo8RanksBytes <= 0) {
            throw new IllegalArgumentException("one-stage thresholds must be positive byte counts, got "
                    + upTo4RanksBytes + " (up to 4 ranks) and " + upTo8RanksBytes + " (up to 8 ranks)");
        }
    }

    /**
     * The given one-stage thresholds with the default push threshold ({@value #DEFAULT_PUSH_UP_TO_BYTES}
     * bytes).
     *
     * @param upTo4RanksBytes one-stage runs strictly below this size for world sizes up to 4; positive
     * @param upTo8RanksBytes one-stage runs strictly below this size for world sizes up to 8; positive
     * @return the thresholds
     * @throws IllegalArgumentException if a threshold is not positive
     */
    public static AlgorithmThresholds oneStage(long upTo4RanksBytes, long upTo8RanksBytes) {
        return new AlgorithmThresholds(DEFAULT_PUSH_UP_TO_BYTES, upTo4RanksBytes, upTo8RanksBytes);
    }

    /**
     * These thresholds with another push threshold.
     *
     * @param newPushUpToBytes the new push threshold in bytes, 0 (never push automatically) to
     *     {@link Algorithm#PUSH_MAX_BYTES}
     * @return a copy with that push threshold and these one-stage thresholds
     * @throws IllegalArgumentException if it is negative or above {@link Algorithm#PUSH_MAX_BYTES}
     */
    public AlgorithmThresholds withPushUpToBytes(long newPushUpToBytes) {
        return new AlgorithmThresholds(newPushUpToBytes, upTo4RanksBytes, upTo8RanksBytes);
    }

    /**
     * The size below which the automatic policy picks one-stage (if it does not push) for the
     * given world size: {@link Long#MAX_VALUE} for 2 ranks, 0 beyond 8 ranks.
     *
     * @param worldSize the number of ranks in the group
     * @return the exclusive upper bound in bytes for one-stage: the larger of the thresholds that apply to
     *     the world size
     */
    public long oneStageBelowBytes(int worldSize) {
        if (worldSize <= 2) {
            return Long.MAX_VALUE;
        }
        long below = 0;
        if (worldSize <= 4) {
            below = Math.max(below, upTo4RanksBytes);
        }
        if (worldSize <= 8) {
            below = Math.max(below, upTo8RanksBytes);
        }
        return below;
    }
}
