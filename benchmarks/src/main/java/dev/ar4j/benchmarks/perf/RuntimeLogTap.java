package dev.ar4j.benchmarks.perf;

import java.util.ArrayList;
import java.util.List;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * Listens to what the ar4j runtime logs while communicators are built, so that a run can say what
 * the runtime reported (its {@code Communicator} logs, at INFO, e.g. "custom kernels ready (grid
 * 16x512, PDL on)"). It adds a handler to the {@code java.util.logging} logger named {@value #LOGGER}
 * (the backend of {@code System.Logger} when {@code java.logging} is present) and removes it on
 * {@link #close}. Where logging goes elsewhere or INFO is off, it hears nothing, and the run says the
 * runtime did not report.
 */
final class RuntimeLogTap implements AutoCloseable {
    /** The logger of {@code dev.ar4j.Communicator}. */
    static final String LOGGER = "dev.ar4j.Communicator";

    private final Logger logger;
    private final List<String> lines = new ArrayList<>();
    private final Handler handler = new Handler() {
        @Override
        public void publish(LogRecord record) {
            String message = record.getMessage();
            if (message != null) {
                synchronized (lines) {
                    lines.add(message);
                }
            }
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }
    };

    private RuntimeLogTap(Logger logger) {
        this.logger = logger;
        logger.addHandler(handler);
    }

    /** Starts listening. */
    static RuntimeLogTap open() {
        return new RuntimeLogTap(Logger.getLogger(LOGGER));
    }

    /** What was logged so far, one message a line. */
    String text() {
        synchronized (lines) {
            return String.join("\n", lines);
        }
    }

    @Override
    public void close() {
        logger.removeHandler(handler);
    }
}
