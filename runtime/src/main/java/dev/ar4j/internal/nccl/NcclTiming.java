package dev.ar4j.internal.nccl;

import dev.ar4j.internal.platform.Durations;

import java.time.Duration;

/** Timeouts of NCCL waits: the internal wait results, and the shared {@link Durations} checks. */
final class NcclTiming {
    /** Internal results of a wait, beside the {@code ncclResult_t} codes (which are >= 0); never leave the package. */
    static final int WAIT_TIMED_OUT = -1000;
    static final int WAIT_STOPPED = -1001;

    private NcclTiming() {
    }

    static Duration requirePositive(Duration timeout, String what) {
        return Durations.requirePositive(timeout, what);
    }

    static long toNanos(Duration d) {
        return Durations.toNanos(d);
    }

    /** {@code 250 ms}, {@code 1.5 s}, {@code 120 s}. */
    static String format(Duration d) {
        return Durations.format(d);
    }

    static String formatNanos(long nanos) {
        return Durations.formatNanos(nanos);
    }
}
