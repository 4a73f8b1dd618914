package dev.ar4j.internal.rendezvous;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Rate-limits one kind of warning: at most {@code perWindow} in each window, then one line saying
 * how many were left out. Protocol noise from a scanner or an attacker cannot flood the log.
 */
final class WarningLimiter {
    private final System.Logger log;
    private final long windowNanos;
    private final int perWindow;
    private final AtomicLong windowStart = new AtomicLong(System.nanoTime());
    private final AtomicLong inWindow = new AtomicLong();
    private final AtomicLong suppressed = new AtomicLong();

    WarningLimiter(System.Logger log, long windowMillis, int perWindow) {
        this.log = log;
        this.windowNanos = windowMillis * 1_000_000L;
        this.perWindow = perWindow;
    }

    void warn(String message) {
        long now = System.nanoTime();
        long start = windowStart.get();
        if (now - start > windowNanos && windowStart.compareAndSet(start, now)) {
            inWindow.set(0);
            long left = suppressed.getAndSet(0);
            if (left > 0) {
                log.log(System.Logger.Level.WARNING, left + " similar rendezvous warning(s) left out in the last "
                        + (windowNanos / 1_000_000) + " ms");
            }
        }
        if (inWindow.incrementAndGet() <= perWindow) {
            log.log(System.Logger.Level.WARNING, message);
        } else {
            suppressed.incrementAndGet();
        }
    }

    /** How many warnings were left out in the current window (for tests). */
    long suppressedCount() {
        return suppressed.get();
    }
}
