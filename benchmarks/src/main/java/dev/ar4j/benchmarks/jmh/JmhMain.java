package dev.ar4j.benchmarks.jmh;

import dev.ar4j.benchmarks.perf.Ar4jVersion;
import dev.ar4j.benchmarks.perf.ExitCodes;
import org.openjdk.jmh.runner.NoBenchmarksException;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.CommandLineOptionException;
import org.openjdk.jmh.runner.options.CommandLineOptions;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * The main class of {@code java -jar benchmarks.jar}: JMH's command line, with the exit codes of
 * {@link ExitCodes}. JMH's own main exits 0 when a benchmark throws; this one runs with
 * {@code -foe true} (fail on error) unless {@code -foe} is given, and exits
 * {@link ExitCodes#FAILED} when a benchmark or its forked JVM fails, {@link ExitCodes#USAGE} for
 * a bad command line or a pattern that matches no benchmark. The forked JVMs get the ar4j
 * version and commit as system properties, which JMH records in its result file.
 */
public final class JmhMain {
    private JmhMain() {
    }

    /**
     * Runs JMH and exits the JVM with the code of {@link #run}.
     *
     * @param args JMH's command line (as {@code java -jar benchmarks.jar -h} lists it)
     */
    public static void main(String[] args) {
        System.exit(run(args));
    }

    /**
     * Runs JMH without exiting the JVM (for tests), with {@code -foe true} added unless {@code -foe}
     * is given; errors are reported on stderr, not thrown.
     *
     * @param args JMH's command line
     * @return {@link ExitCodes#OK} on success (help and lists included), {@link ExitCodes#USAGE} for a
     *         bad command line or a pattern that matches no benchmark, {@link ExitCodes#FAILED} when a
     *         benchmark fails, produces no result or a file cannot be written
     */
    public static int run(String... args) {
        List<String> argv = new ArrayList<>(List.of(args));
        if (!argv.contains("-foe")) {
            argv.addAll(0, List.of("-foe", "true"));
        }
        CommandLineOptions options;
        try {
            options = new CommandLineOptions(argv.toArray(String[]::new));
        } catch (CommandLineOptionException e) {
            System.err.println("jmh: bad command line: " + e.getMessage() + " (-h lists JMH's options)");
            return ExitCodes.USAGE;
        }
        Runner runner = new Runner(withProvenance(options));
        try {
            if (options.shouldHelp()) {
                options.showHelp();
                return ExitCodes.OK;
            }
            if (options.shouldList()) {
                runner.list();
                return ExitCodes.OK;
            }
            if (options.shouldListWithParams()) {
                runner.listWithParams(options);
                return ExitCodes.OK;
            }
            if (options.shouldListProfilers()) {
                options.listProfilers();
                return ExitCodes.OK;
            }
            if (options.shouldListResultFormats()) {
                options.listResultFormats();
                return ExitCodes.OK;
            }
            var results = runner.run();
            if (results.isEmpty()) {
                System.err.println("jmh: no benchmark produced a result");
                return ExitCodes.FAILED;
            }
            return ExitCodes.OK;
        } catch (NoBenchmarksException e) {
            System.err.println("jmh: no benchmark matches " + options.getIncludes() + " (-l lists them)");
            return ExitCodes.USAGE;
        } catch (RunnerException e) {
            System.err.println("jmh: a benchmark failed: " + describe(e) + " (its output above says which and why)");
            return ExitCodes.FAILED;
        } catch (IOException e) {
            System.err.println("jmh: " + e.getMessage());
            return ExitCodes.FAILED;
        }
    }

    /**
     * The options with {@code -Dar4j.version=...} and {@code -Dar4j.commit=...} appended to the
     * forked JVMs' arguments, after any {@code -jvmArgsAppend} given: JMH writes them into every
     * result's {@code jvmArgs}, so a {@code jmh.json} says which build it measured.
     */
    static Options withProvenance(CommandLineOptions options) {
        Ar4jVersion version = Ar4jVersion.current();
        List<String> append = new ArrayList<>(options.getJvmArgsAppend().orElse(List.of()));
        append.add("-Dar4j.version=" + version.version());
        append.add("-Dar4j.commit=" + version.commit());
        return new OptionsBuilder().parent(options).jvmArgsAppend(append.toArray(String[]::new)).build();
    }

    private static String describe(Throwable e) {
        StringBuilder b = new StringBuilder(String.valueOf(e.getMessage()));
        for (Throwable c = e.getCause(); c != null && c != c.getCause(); c = c.getCause()) {
            b.append("; caused by ").append(c.getClass().getSimpleName()).append(": ").append(c.getMessage());
        }
        return b.toString();
    }
}
