package dev.ar4j.cuda;

import dev.ar4j.internal.platform.Lifetime;

import dev.ar4j.bindings.cudart.cuda_runtime_api_h;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Objects;

/** A CUDA event, destroyed exactly once by {@link #close()}. Use after close throws {@link IllegalStateException}. */
public final class CudaEvent implements AutoCloseable {
    private final MemorySegment handle;
    private final boolean timing;
    private final Lifetime lifetime = new Lifetime(null);

    private CudaEvent(MemorySegment handle, boolean timing) {
        this.handle = handle;
        this.timing = timing;
    }

    /**
     * Creates an event that records timing, on the current device.
     *
     * @return a new timing event without blocking synchronisation, owned by the caller
     * @throws CudaException if {@code cudaEventCreateWithFlags} fails
     */
    public static CudaEvent create() {
        return create(true, false);
    }

    /**
     * Creates an event on the current device.
     *
     * @param timing       record timestamps (without, {@code cudaEventDisableTiming}: cheaper, for ordering only)
     * @param blockingSync {@link #synchronize()} blocks the thread instead of spinning ({@code cudaEventBlockingSync})
     * @return a new event, owned by the caller
     * @throws CudaException if {@code cudaEventCreateWithFlags} fails
     */
    public static CudaEvent create(boolean timing, boolean blockingSync) {
        Cuda.ensureLoaded();
        int flags = cuda_runtime_api_h.cudaEventDefault();
        if (!timing) {
            flags |= cuda_runtime_api_h.cudaEventDisableTiming();
        }
        if (blockingSync) {
            flags |= cuda_runtime_api_h.cudaEventBlockingSync();
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            int status = cuda_runtime_api_h.cudaEventCreateWithFlags(out, flags);
            if (status != 0) {
                throw CudaChecks.exception(status, "cudaEventCreateWithFlags(" + flags + ")");
            }
            return new CudaEvent(out.get(ValueLayout.ADDRESS, 0), timing);
        }
    }

    /**
     * The {@code cudaEvent_t} as a zero-length segment.
     *
     * @return the handle, valid until {@link #close()}
     * @throws IllegalStateException if the event is closed
     */
    public MemorySegment segment() {
        ensureOpen();
        return handle;
    }

    /**
     * The {@code cudaEvent_t} as an address.
     *
     * @return the handle's address, valid until {@link #close()}
     * @throws IllegalStateException if the event is closed
     */
    public long handle() {
        ensureOpen();
        return handle.address();
    }

    /**
     * Whether the event records timing.
     *
     * @return {@code true} if created with timing, so that {@link #elapsedMillisSince} accepts it
     */
    public boolean isTiming() {
        return timing;
    }

    /**
     * False once closed.
     *
     * @return {@code true} until {@link #close()} was called
     */
    public boolean isOpen() {
        return lifetime.isAlive();
    }

    /**
     * Records the event on {@code stream}: it completes when the work queued before it has.
     *
     * @param stream the stream to record on, of the event's device
     * @throws IllegalStateException if the event is closed
     * @throws CudaException if {@code cudaEventRecord} fails
     */
    public void record(CudaStream stream) {
        ensureOpen();
        Objects.requireNonNull(stream, "stream");
        CudaChecks.check(cuda_runtime_api_h.cudaEventRecord(handle, stream.segment()), "cudaEventRecord");
    }

    /**
     * Waits until the event has completed.
     *
     * @throws IllegalStateException if the event is closed
     * @throws CudaException if {@code cudaEventSynchronize} fails (including an earlier asynchronous error)
     */
    public void synchronize() {
        ensureOpen();
        CudaChecks.check(cuda_runtime_api_h.cudaEventSynchronize(handle), "cudaEventSynchronize");
    }

    /**
     * True if the event has completed ({@code cudaEventQuery}).
     *
     * @return {@code true} if the work before the record has completed (or the event was never recorded),
     *     {@code false} if not yet
     * @throws IllegalStateException if the event is closed
     * @throws CudaException if {@code cudaEventQuery} reports an error other than {@code cudaErrorNotReady}
     */
    public boolean isComplete() {
        ensureOpen();
        int status = cuda_runtime_api_h.cudaEventQuery(handle);
        if (status == 0) {
            return true;
        }
        if (status == cuda_runtime_api_h.cudaErrorNotReady()) {
            return false;
        }
        throw CudaChecks.exception(status, "cudaEventQuery");
    }

    /**
     * Milliseconds between {@code start} and this event, both recorded and completed, both timing
     * events ({@code cudaEventElapsedTime}; resolution about 0.5 microseconds).
     *
     * @param start the earlier event, recorded and completed, created with timing
     * @return the elapsed time in milliseconds
     * @throws IllegalStateException if either event was created without timing or this event is closed
     * @throws CudaException if {@code cudaEventElapsedTime} fails (for example an event not yet recorded or
     *     completed)
     */
    public float elapsedMillisSince(CudaEvent start) {
        ensureOpen();
        Objects.requireNonNull(start, "start");
        if (!timing || !start.timing) {
            throw new IllegalStateException("elapsed time needs two timing events; created without timing: "
                    + (timing ? "start" : start.timing ? "this event" : "both"));
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.JAVA_FLOAT);
            CudaChecks.check(cuda_runtime_api_h.cudaEventElapsedTime(out, start.segment(), handle), "cudaEventElapsedTime");
            return out.get(ValueLayout.JAVA_FLOAT, 0);
        }
    }

    private void ensureOpen() {
        if (!lifetime.isAlive()) {
            throw new IllegalStateException("CudaEvent[0x" + Long.toHexString(handle.address()) + "] is closed");
        }
    }

    /** Destroys the event (once). */
    @Override
    public void close() {
        if (lifetime.end()) {
            CudaChecks.check(cuda_runtime_api_h.cudaEventDestroy(handle), "cudaEventDestroy");
        }
    }
}
