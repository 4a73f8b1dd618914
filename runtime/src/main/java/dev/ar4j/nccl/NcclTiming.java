package dev.ar4j.nccl;

import java.time.Duration;
import java.util.Locale;
import java.util.Objects;

/** Timeouts of NCCL waits: checks, conversions, how a message writes them. */
final class NcclTiming {
    /** Internal results of a wait, beside the {@code ncclResult_t} codes (which are >= 0); never leave the package. */
    static final int WAIT_TIMED_OUT = -1000;
    static final int WAIT_STOPPED = -1001;

    /** Waits longer than this are treated as this long. */
    private static final Duration LONGEST = Duration.ofDays(365L * 100);

    private NcclTiming() {
    }

    static Duration requirePositive(Duration timeout, String what) {
        Objects.requireNonNull(timeout, () -> what + " must not be null");
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException(what + " must be positive, got " + format(timeout));
        }
        return timeout;
    }

    static long toNanos(Duration d) {
        return d.compareTo(LONGEST) > 0 ? LONGEST.toNanos() : d.toNanos();
    }

    /** {@code 250 ms}, {@code 1.5 s}, {@code 120 s}. */
    static String format(Duration d) {
        return formatNanos(toNanos(d));
    }

    static String formatNanos(long nanos) {
        long millis = nanos / 1_000_000;
        if (Math.abs(millis) < 1000) {
            return millis + " ms";
        }
        if (millis % 1000 == 0) {
            return (millis / 1000) + " s";
        }
        return String.format(Locale.ROOT, "%.3f", millis / 1000.0).replaceAll("0+$", "") + " s";
    }
}
