package dev.ar4j.internal.engine;

/** Closes resources in order, collecting every failure on one throwable instead of stopping at the first. */
final class Closing {

    private Closing() {
    }

    /** Closes each non-null resource; a failure is added to {@code collector} as suppressed. */
    static void quietly(Throwable collector, AutoCloseable... resources) {
        for (AutoCloseable r : resources) {
            if (r == null) {
                continue;
            }
            try {
                r.close();
            } catch (Exception e) {
                collector.addSuppressed(e);
            }
        }
    }
}
