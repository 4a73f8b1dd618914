package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.*;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The last resort of a server thread whose warning could not be logged (out of file descriptors,
 * out of memory, a logging framework that fails): one line, encoded in advance, written to the
 * standard error descriptor at most once a second. Writing it allocates nothing and opens no file.
 */
final class FailSafeLog {
    private static final FileOutputStream STANDARD_ERROR = new FileOutputStream(FileDescriptor.err);
    private static final long MIN_INTERVAL_NANOS = 1_000_000_000L;
    private static final FailSafeLog RECORD_FAILED = new FailSafeLog("ar4j rendezvous: a log record could not be"
            + " written (out of file descriptors or memory, or a failing log handler); serving goes on");

    private final byte[] line;
    private final AtomicLong lastWritten = new AtomicLong(System.nanoTime() - MIN_INTERVAL_NANOS);
    private final AtomicLong written = new AtomicLong();

    FailSafeLog(String line) {
        this.line = (line + System.lineSeparator()).getBytes(StandardCharsets.UTF_8);
    }

    /** Writes the line unless it was written less than a second ago; never throws. */
    void write() {
        try {
            long now = System.nanoTime();
            long last = lastWritten.get();
            if (now - last >= MIN_INTERVAL_NANOS && lastWritten.compareAndSet(last, now)) {
                STANDARD_ERROR.write(line);
                written.incrementAndGet();
            }
        } catch (Throwable ignored) {
            // Nowhere left to report to; the caller goes on regardless.
        }
    }

    /**
     * Logs {@code message} at {@code level}; if the logger throws anything, writes one fixed line
     * instead (rate-limited). Never throws: logging must not end a server thread or a connection.
     */
    static void log(System.Logger logger, System.Logger.Level level, java.util.function.Supplier<String> message) {
        try {
            logger.log(level, message);
        } catch (Throwable failed) {
            RECORD_FAILED.write();
        }
    }

    /** How many times the line was written (for tests). */
    long timesWritten() {
        return written.get();
    }
}
