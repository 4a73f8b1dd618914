package dev.ar4j.benchmarks.perf;

import java.util.List;

/**
 * The exit codes of every entry point of the benchmarks jar: {@code ar4j-perf}, its {@code plot}
 * subcommand and the JMH main ({@code java -jar benchmarks.jar}). One table, so that the help
 * text, the code and the documentation cannot drift apart.
 */
public final class ExitCodes {
    /** Everything asked for was done. */
    public static final int OK = 0;
    /** The run failed: a worker or a benchmark failed, or a result file could not be written. */
    public static final int FAILED = 1;
    /** Bad arguments, an input file that is missing or unreadable, or no usable GPU. */
    public static final int USAGE = 2;
    /** Some all-reduce results were wrong (the {@code #wrong} column). */
    public static final int WRONG_RESULTS = 3;
    /** The run passed {@code --time-limit}; its workers were stopped. */
    public static final int TIME_LIMIT = 124;

    private ExitCodes() {
    }

    /** {@return one "code:meaning" line per exit code, in the form picocli's {@code exitCodeList} takes} */
    public static List<String> helpLines() {
        return List.of(
                OK + ":done",
                FAILED + ":a worker or benchmark failed, or a result file could not be written",
                USAGE + ":bad arguments, an input file missing or unreadable, or no usable GPU",
                WRONG_RESULTS + ":some results were wrong (#wrong > 0)",
                TIME_LIMIT + ":past --time-limit (the workers were stopped)");
    }
}
