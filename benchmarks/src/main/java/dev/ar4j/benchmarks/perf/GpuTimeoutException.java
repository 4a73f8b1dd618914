package dev.ar4j.benchmarks.perf;

import java.time.Duration;

/** GPU work did not finish in time: a peer rank is dead or hung, or a kernel is stuck. */
public final class GpuTimeoutException extends dev.ar4j.Ar4jException {
    private static final long serialVersionUID = 1L;

    GpuTimeoutException(String what, Duration timeout) {
        super(what + " did not finish within " + timeout.toMillis() + " ms; another rank is dead or hung, or the GPU "
                + "is stuck (raise --timeout if the work is simply that slow)");
    }
}
