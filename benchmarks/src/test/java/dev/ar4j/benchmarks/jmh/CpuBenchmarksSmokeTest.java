package dev.ar4j.benchmarks.jmh;

import dev.ar4j.NativeLibraryException;
import dev.ar4j.Ar4j;
import org.junit.jupiter.api.Test;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;
import org.openjdk.jmh.runner.options.VerboseMode;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Runs the CPU benchmarks through JMH with tiny settings (no fork, one 100 ms warm-up and two
 * 100 ms measurement iterations): a smoke run that the benchmarks still work, with their scores
 * printed. Not a measurement.
 */
class CpuBenchmarksSmokeTest {

    private static Collection<RunResult> run(Class<?> benchmark) throws RunnerException {
        Options options = new OptionsBuilder()
                .include(benchmark.getName() + "\\.")
                .forks(0)
                .warmupIterations(1)
                .warmupTime(TimeValue.milliseconds(100))
                .measurementIterations(2)
                .measurementTime(TimeValue.milliseconds(100))
                .shouldFailOnError(true)
                .verbosity(VerboseMode.SILENT) // the scores are checked; JMH's console report is not needed
                .build();
        return new Runner(options).run();
    }

    private static List<String> checkScores(Collection<RunResult> results) {
        List<String> lines = new ArrayList<>();
        for (RunResult r : results) {
            double score = r.getPrimaryResult().getScore();
            String line = r.getParams().getBenchmark() + " " + r.getParams().getParamsKeys().stream()
                    .map(k -> k + "=" + r.getParams().getParam(k)).toList() + ": " + String.format("%.2f", score) + " "
                    + r.getPrimaryResult().getScoreUnit();
            lines.add(line);
            assertTrue(score > 0 && Double.isFinite(score), line);
        }
        lines.forEach(System.out::println);
        return lines;
    }

    @Test
    void dispatchBenchmarkRuns() throws RunnerException {
        List<String> lines = checkScores(run(DispatchBenchmark.class));
        assertEquals(4, lines.size(), "one result per size: " + lines);
    }

    @Test
    void downcallBenchmarkRuns() throws RunnerException {
        try {
            Ar4j.kernelsAbiVersion(); // loads the kernels library on first use
        } catch (NativeLibraryException e) {
            assumeTrue(false, "the kernels library is not available (built with -Dar4j.native.skip=true?): "
                    + e.getMessage());
        }
        List<String> lines = checkScores(run(DowncallBenchmark.class));
        assertEquals(4, lines.size(), "binding, plain handle, critical handle, status name: " + lines);
    }
}
