package dev.ar4j.internal.platform;

import java.time.Duration;
import java.util.Objects;

/**
 * Timeout checks, conversions and their wording in messages, shared by the rendezvous and the
 * NCCL classes (not exported).
 */
public final class Durations {
    /** Waits longer than this are treated as this long; no rendezvous legitimately waits a century. */
    private static final Duration LONGEST = Duration.ofDays(365L * 100);

    private Durations() {
    }

    /** Returns {@code timeout} if it is positive, else throws naming {@code what}. */
    public static Duration requirePositive(Duration timeout, String what) {
        Objects.requireNonNull(timeout, () -> what + " must not be null");
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException(what + " must be positive, got " + format(timeout));
        }
        return timeout;
    }

    public static long toNanos(Duration d) {
        return d.compareTo(LONGEST) > 0 ? LONGEST.toNanos() : d.toNanos();
    }

    public static long toMillis(Duration d) {
        return d.compareTo(LONGEST) > 0 ? LONGEST.toMillis() : d.toMillis();
    }

    /** {@code 250 ms}, {@code 1.5 s}, {@code 120 s}: easier to read in a message than {@code PT1.5S}. */
    public static String format(Duration d) {
        long millis = toMillis(d);
        if (Math.abs(millis) < 1000) {
            return millis + " ms";
        }
        if (millis % 1000 == 0) {
            return (millis / 1000) + " s";
        }
        return String.format(java.util.Locale.ROOT, "%.3f", millis / 1000.0).replaceAll("0+$", "") + " s";
    }

    /** {@link #format} of a duration given in nanoseconds. */
    public static String formatNanos(long nanos) {
        return format(Duration.ofNanos(nanos));
    }
}
