package dev.ar4j.benchmarks.jmh;

import dev.ar4j.benchmarks.perf.Ar4jVersion;
import dev.ar4j.benchmarks.perf.ExitCodes;
import org.junit.jupiter.api.Test;
import org.openjdk.jmh.runner.options.CommandLineOptions;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code java -jar benchmarks.jar}: a failed benchmark is a non-zero exit, not JMH's 0. */
class JmhMainTest {
    private static final String[] TINY = {"-wi", "0", "-i", "1", "-r", "100ms", "-p", "bytes=1024"};

    private static String[] with(String... args) {
        String[] all = new String[args.length + TINY.length];
        System.arraycopy(args, 0, all, 0, args.length);
        System.arraycopy(TINY, 0, all, args.length, TINY.length);
        return all;
    }

    @Test
    void aBenchmarkThatRunsExitsZero() {
        assertEquals(ExitCodes.OK, JmhMain.run(with(DispatchBenchmark.class.getName(), "-f", "0", "-v", "SILENT")));
    }

    @Test
    void aBenchmarkWhoseForkFailsExitsWithFailed() {
        assertEquals(ExitCodes.FAILED, JmhMain.run(with(DispatchBenchmark.class.getName(), "-f", "1",
                "-jvmArgsAppend", "-XX:+ThisJvmOptionDoesNotExist")));
    }

    @Test
    void theForkedJvmsGetTheVersionAfterTheUsersArguments() throws Exception {
        var options = JmhMain.withProvenance(new CommandLineOptions("-jvmArgsAppend", "-Xmx1g", "X"));
        List<String> append = List.copyOf(options.getJvmArgsAppend().get());
        assertEquals("-Xmx1g", append.getFirst());
        assertTrue(append.contains("-Dar4j.version=" + Ar4jVersion.current().version()), append.toString());
        assertTrue(append.contains("-Dar4j.commit=" + Ar4jVersion.current().commit()), append.toString());
        assertEquals(List.of("X"), options.getIncludes());
    }

    @Test
    void aPatternMatchingNothingOrABadOptionIsAUsageError() {
        assertEquals(ExitCodes.USAGE, JmhMain.run("NoSuchBenchmarkAnywhere"));
        assertEquals(ExitCodes.USAGE, JmhMain.run("-i", "not-a-number"));
    }
}
