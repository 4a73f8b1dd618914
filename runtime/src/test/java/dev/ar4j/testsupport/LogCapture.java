package dev.ar4j.testsupport;

import org.junit.jupiter.api.extension.AfterTestExecutionCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import java.util.ArrayList;
import java.util.List;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.logging.SimpleFormatter;

/**
 * Captures what the code under test logs (through {@code System.Logger}, which goes to
 * {@code java.util.logging}) instead of printing it: many tests make things fail on purpose
 * (a lost rank, a bad frame, a listener that throws), and the warnings and stack traces ar4j logs
 * for them are expected, not news. The records of each test are kept while it runs; when the test
 * fails they are printed to standard error under its name, so a failure still shows its log.
 *
 * <p>Registered for every test of the module through JUnit's extension auto-detection
 * ({@code junit-platform.properties}, {@code META-INF/services}). A test that asserts on what was
 * logged reads {@link #records()}.
 */
public final class LogCapture implements BeforeAllCallback, BeforeEachCallback, AfterTestExecutionCallback {
    private static final Buffer BUFFER = new Buffer();

    /** Replaces the root logger's handlers (the console) with the capture, once per JVM. */
    @Override
    public void beforeAll(ExtensionContext context) {
        install();
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        install();
        BUFFER.clear();
    }

    @Override
    public void afterTestExecution(ExtensionContext context) {
        List<LogRecord> records = BUFFER.drain();
        if (context.getExecutionException().isPresent() && !records.isEmpty()) {
            SimpleFormatter format = new SimpleFormatter();
            StringBuilder b = new StringBuilder("---- log of the failed test " + context.getDisplayName() + " ("
                    + context.getRequiredTestClass().getName() + "), " + records.size() + " records ----\n");
            for (LogRecord r : records) {
                b.append(format.format(r));
            }
            System.err.print(b);
            System.err.flush();
        }
    }

    /**
     * What the current test has logged so far, at the level the loggers let through (INFO and up by default).
     *
     * @return a copy, in the order logged
     */
    public static List<LogRecord> records() {
        return BUFFER.snapshot();
    }

    private static synchronized void install() {
        Logger root = Logger.getLogger("");
        for (Handler h : root.getHandlers()) {
            if (h != BUFFER) {
                root.removeHandler(h);
            }
        }
        if (List.of(root.getHandlers()).isEmpty()) {
            root.addHandler(BUFFER);
        }
    }

    /** The handler: keeps the records (bounded) for the test that runs. */
    private static final class Buffer extends Handler {
        private static final int MAX_RECORDS = 10_000;
        private final List<LogRecord> records = new ArrayList<>();

        @Override
        public synchronized void publish(LogRecord record) {
            if (record != null && isLoggable(record) && records.size() < MAX_RECORDS) {
                record.getSourceClassName(); // infer the caller now, on the logging thread
                records.add(record);
            }
        }

        synchronized void clear() {
            records.clear();
        }

        synchronized List<LogRecord> drain() {
            List<LogRecord> copy = List.copyOf(records);
            records.clear();
            return copy;
        }

        synchronized List<LogRecord> snapshot() {
            return List.copyOf(records);
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }
    }
}
