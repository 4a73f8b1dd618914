package dev.ar4j.examples.llama.engine;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * What the ranks' threads are doing when a group's work has run longer than expected: each unfinished rank's
 * thread, its state and its innermost frames. {@link RankGroup#onEveryRank} prints it once when the system
 * property {@link #PROPERTY} (seconds) has passed and some rank is still busy. Meant for diagnosing a rank that
 * never reaches a collective -- its peers' kernels then wait for it until their timeout -- where the stack at the
 * failure no longer shows where the rank was held. Beside the ranks it names every other thread whose innermost
 * frames are in ar4j's or the example's code ({@value #OWN_CODE}): a rank held in a CUDA call can be waiting on
 * a driver lock that another thread (one freeing memory, say) holds while it waits for the device.
 */
final class StallReport {

    /** The system property: seconds after which a still-running {@code onEveryRank} prints the report; 0 or absent: never. */
    static final String PROPERTY = "ar4j.llama.stallReport";

    /** Frames printed per thread, innermost first. */
    static final int FRAMES = 16;

    /** The package prefix of the code whose threads are named beside the ranks. */
    static final String OWN_CODE = "dev.ar4j.";

    /**
     * A busy rank and its thread.
     *
     * @param rank   the rank
     * @param thread the thread running its work
     */
    record Busy(int rank, Thread thread) { }

    private StallReport() {
    }

    /**
     * The delay of this JVM's {@link #PROPERTY}.
     *
     * @return the delay, {@link Duration#ZERO} when the report is off
     * @throws IllegalArgumentException when the value is not a whole number of seconds >= 0, saying what is accepted
     */
    static Duration delay() {
        return delay(System.getProperty(PROPERTY));
    }

    /**
     * The delay a value of {@link #PROPERTY} names.
     *
     * @param value the value, {@code null} for absent
     * @return the delay, {@link Duration#ZERO} when the report is off
     * @throws IllegalArgumentException when the value is not a whole number of seconds >= 0, saying what is accepted
     */
    static Duration delay(String value) {
        if (value == null || value.isBlank()) {
            return Duration.ZERO;
        }
        try {
            long s = Long.parseLong(value.strip());
            if (s >= 0) {
                return Duration.ofSeconds(s);
            }
        } catch (NumberFormatException e) {
            // named below
        }
        throw new IllegalArgumentException("-D" + PROPERTY + "=" + value + ": expected whole seconds >= 0 after which "
                + "a group's still-running work prints its ranks' stacks (0: never)");
    }

    /**
     * The report.
     *
     * @param what  the work, as {@link RankGroup#onEveryRank} names it
     * @param after how long it has run
     * @param busy  the ranks still running it
     * @return the text, one block per rank
     */
    static String describe(String what, Duration after, List<Busy> busy) {
        Set<Thread> ranks = busy.stream().map(Busy::thread).collect(Collectors.toSet());
        return describe(what, after, busy, Thread.getAllStackTraces().entrySet().stream()
                .filter(e -> !ranks.contains(e.getKey()) && e.getKey() != Thread.currentThread()
                        && inOwnCode(e.getValue()))
                .collect(Collectors.toMap(Map.Entry::getKey, Map.Entry::getValue)));
    }

    /**
     * The report with the other threads given.
     *
     * @param what   the work, as {@link RankGroup#onEveryRank} names it
     * @param after  how long it has run
     * @param busy   the ranks still running it
     * @param others threads besides the ranks to name, with their stacks
     * @return the text, one block per rank, then one per other thread
     */
    static String describe(String what, Duration after, List<Busy> busy, Map<Thread, StackTraceElement[]> others) {
        StringBuilder b = new StringBuilder("ar4j-llama: ").append(what).append(" still running after ")
                .append(after.toSeconds()).append(" s on ").append(busy.size()).append(busy.size() == 1 ? " rank" : " ranks");
        for (Busy r : busy) {
            Thread t = r.thread();
            b.append("\n  rank ").append(r.rank()).append(" (thread ").append(t.getName()).append(", ")
                    .append(t.getState()).append(')');
            frames(b, t.getStackTrace());
        }
        for (Map.Entry<Thread, StackTraceElement[]> e : others.entrySet()) {
            Thread t = e.getKey();
            b.append("\n  other thread in ").append(OWN_CODE).append("* code: ").append(t.getName()).append(" (")
                    .append(t.getState()).append(')');
            frames(b, e.getValue());
        }
        return b.toString();
    }

    /**
     * Whether a stack's innermost {@link #FRAMES} frames include one of {@link #OWN_CODE}.
     *
     * @param frames the stack, innermost first
     * @return true when one of them is
     */
    static boolean inOwnCode(StackTraceElement[] frames) {
        for (int i = 0; i < Math.min(FRAMES, frames.length); i++) {
            if (frames[i].getClassName().startsWith(OWN_CODE)) {
                return true;
            }
        }
        return false;
    }

    private static void frames(StringBuilder b, StackTraceElement[] frames) {
        for (int i = 0; i < Math.min(FRAMES, frames.length); i++) {
            b.append("\n    at ").append(frames[i]);
        }
        if (frames.length > FRAMES) {
            b.append("\n    ... ").append(frames.length - FRAMES).append(" more");
        }
    }
}
