package dev.ar4j.benchmarks.perf;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/** The command tests' capture of {@code System.out} and {@code System.err} around each test. */
abstract class CapturedOutput {
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();
    private PrintStream savedOut;
    private PrintStream savedErr;

    @BeforeEach
    void capture() {
        savedOut = System.out;
        savedErr = System.err;
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    @AfterEach
    void restore() {
        System.setOut(savedOut);
        System.setErr(savedErr);
    }

    /** What the test printed to standard output so far. */
    String out() {
        return out.toString(StandardCharsets.UTF_8);
    }

    /** Forgets what was printed to standard output so far. */
    void resetOut() {
        out.reset();
    }

    /** What the test printed to standard error so far. */
    String err() {
        return err.toString(StandardCharsets.UTF_8);
    }
}
