package dev.ar4j.benchmarks.perf;

import dev.ar4j.cuda.CudaEvent;
import dev.ar4j.cuda.CudaStream;

import java.time.Duration;
import java.util.Objects;

/**
 * Bounded waits for GPU work. {@code cudaStreamSynchronize} waits forever when a peer never
 * arrives (NCCL has no deadline); these poll an event instead and give up after a timeout.
 */
final class GpuWait {
    private final CudaStream stream;
    private final CudaEvent marker;
    private final Duration timeout;

    /** Waits for work on {@code stream}; {@code marker} is a non-timing event this object owns. */
    GpuWait(CudaStream stream, Duration timeout) {
        this.stream = Objects.requireNonNull(stream, "stream");
        this.timeout = Objects.requireNonNull(timeout, "timeout");
        this.marker = CudaEvent.create(false, false);
    }

    /** Waits until everything enqueued on the stream so far has finished. */
    void stream(String what) {
        marker.record(stream);
        event(marker, what);
    }

    /** Waits until {@code event} has completed (spinning: the host time right after it is precise). */
    void event(CudaEvent event, String what) {
        long deadline = System.nanoTime() + timeout.toNanos();
        int polls = 0;
        while (!event.isComplete()) {
            if ((++polls & 1023) == 0 && System.nanoTime() - deadline > 0) {
                throw new GpuTimeoutException(what, timeout);
            }
            Thread.onSpinWait();
        }
    }

    /** The bound on every wait. */
    Duration timeout() {
        return timeout;
    }

    /** Destroys the marker event. */
    void close() {
        marker.close();
    }
}
