package dev.ar4j.dispatch;

/**
 * Where the automatic policy switches from the one-stage to the two-stage kernel on NVLink (or
 * with the PCIe gate lifted). With world size 2 one-stage always runs; otherwise, one-stage runs
 * when world size &lt;= 4 and bytes &lt; {@code upTo4RanksBytes}, or when world size &lt;= 8 and
 * bytes &lt; {@code upTo8RanksBytes}; two-stage runs otherwise.
 *
 * @param upTo4RanksBytes one-stage runs strictly below this size for world sizes up to 4
 * @param upTo8RanksBytes one-stage runs strictly below this size for world sizes up to 8
 */
public record OneStageThresholds(long upTo4RanksBytes, long upTo8RanksBytes) {

    /** 512 KiB for up to 4 ranks, 256 KiB for up to 8 ranks. */
    public static final OneStageThresholds DEFAULTS = new OneStageThresholds(512 * 1024, 256 * 1024);

    /** @throws IllegalArgumentException if a threshold is not positive */
    public OneStageThresholds {
        if (upTo4RanksBytes <= 0 || upTo8RanksBytes <= 0) {
            throw new IllegalArgumentException("one-stage thresholds must be positive byte counts, got "
                    + upTo4RanksBytes + " (up to 4 ranks) and " + upTo8RanksBytes + " (up to 8 ranks)");
        }
    }

    /**
     * The size below which the automatic policy picks one-stage for the given world size:
     * {@link Long#MAX_VALUE} for 2 ranks, 0 beyond 8 ranks.
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
