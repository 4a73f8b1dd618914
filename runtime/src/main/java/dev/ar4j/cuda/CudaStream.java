package dev.ar4j.cuda;

import dev.ar4j.internal.platform.Lifetime;

import dev.ar4j.bindings.cudart.cuda_runtime_api_h;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Objects;

/**
 * A CUDA stream. Streams made by {@link #create} are owned and destroyed exactly once by
 * {@link #close()}; {@link #borrow} wraps a stream made elsewhere (PyTorch's current stream, ...)
 * and never destroys it. Use after close throws {@link IllegalStateException}.
 */
public final class CudaStream implements AutoCloseable {
    private final MemorySegment handle;
    private final int device;
    private final boolean owned;
    private final Lifetime lifetime = new Lifetime(null);

    private CudaStream(MemorySegment handle, int device, boolean owned) {
        this.handle = handle;
        this.device = device;
        this.owned = owned;
    }

    /**
     * Creates a non-blocking stream (no implicit synchronisation with the legacy default stream) on the current device.
     *
     * @return a new owned stream of default priority on the current device
     * @throws CudaException if the stream cannot be created
     */
    public static CudaStream create() {
        return create(true, 0);
    }

    /**
     * Creates a stream on the current device.
     *
     * @param nonBlocking {@code cudaStreamNonBlocking}: no implicit synchronisation with the legacy default stream
     * @param priority    the stream priority; lower numbers are higher priority, 0 is the default
     *                    (CUDA clamps it to the device's range)
     * @return a new owned stream on the current device
     * @throws CudaException if {@code cudaStreamCreateWithPriority} fails
     */
    public static CudaStream create(boolean nonBlocking, int priority) {
        int device = Cuda.currentDevice();
        int flags = nonBlocking ? cuda_runtime_api_h.cudaStreamNonBlocking() : cuda_runtime_api_h.cudaStreamDefault();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            int status = cuda_runtime_api_h.cudaStreamCreateWithPriority(out, flags, priority);
            if (status != 0) {
                throw CudaChecks.exception(status, "cudaStreamCreateWithPriority(flags " + flags + ", priority "
                        + priority + ")");
            }
            return new CudaStream(out.get(ValueLayout.ADDRESS, 0), device, true);
        }
    }

    /**
     * Wraps a {@code cudaStream_t} owned by someone else; closing the wrapper never destroys it.
     *
     * @param handle the {@code cudaStream_t}'s address (0 is the legacy default stream); it must stay valid
     *     while the wrapper is used
     * @param device the ordinal of the device the stream belongs to, 0 or more
     * @return a borrowed wrapper whose {@link #close()} leaves the stream alone
     * @throws IllegalArgumentException if {@code device} is negative
     */
    public static CudaStream borrow(long handle, int device) {
        if (device < 0) {
            throw new IllegalArgumentException("device ordinal must be >= 0, got " + device);
        }
        Cuda.ensureLoaded();
        return new CudaStream(MemorySegment.ofAddress(handle), device, false);
    }

    /**
     * The legacy default stream (handle 0) of the current device, borrowed.
     *
     * @return a borrowed wrapper of handle 0 on the current device
     */
    public static CudaStream legacyDefault() {
        return new CudaStream(MemorySegment.NULL, Cuda.currentDevice(), false);
    }

    /**
     * The per-thread default stream ({@code cudaStreamPerThread}) of the current device, borrowed.
     *
     * @return a borrowed wrapper of {@code cudaStreamPerThread} on the current device
     */
    public static CudaStream perThreadDefault() {
        return new CudaStream(cuda_runtime_api_h.cudaStreamPerThread(), Cuda.currentDevice(), false);
    }

    /**
     * The {@code cudaStream_t} as an address.
     *
     * @return the handle's address (0 for the legacy default stream), valid until {@link #close()}
     * @throws IllegalStateException if the wrapper is closed
     */
    public long handle() {
        ensureOpen();
        return handle.address();
    }

    /**
     * The {@code cudaStream_t} as a zero-length segment, to pass to native functions.
     *
     * @return the handle, valid until {@link #close()}
     * @throws IllegalStateException if the wrapper is closed
     */
    public MemorySegment segment() {
        ensureOpen();
        return handle;
    }

    /**
     * The device the stream was made on (or given to {@link #borrow}).
     *
     * @return the device ordinal
     */
    public int device() {
        return device;
    }

    /**
     * Whether {@link #close()} destroys the stream.
     *
     * @return {@code true} for a stream made by {@link #create}, {@code false} for a borrowed one
     */
    public boolean isOwned() {
        return owned;
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
     * Waits until all work queued on the stream has finished.
     *
     * @throws IllegalStateException if the wrapper is closed
     * @throws CudaException if {@code cudaStreamSynchronize} fails (including an earlier asynchronous error
     *     of the work)
     */
    public void synchronize() {
        ensureOpen();
        CudaChecks.check(cuda_runtime_api_h.cudaStreamSynchronize(handle), "cudaStreamSynchronize");
    }

    /**
     * True if all work queued on the stream has finished ({@code cudaStreamQuery}).
     *
     * @return {@code true} if the stream has no pending work, {@code false} if work is still running
     * @throws IllegalStateException if the wrapper is closed
     * @throws CudaException if {@code cudaStreamQuery} reports an error other than {@code cudaErrorNotReady}
     */
    public boolean isIdle() {
        ensureOpen();
        int status = cuda_runtime_api_h.cudaStreamQuery(handle);
        if (status == 0) {
            return true;
        }
        if (status == cuda_runtime_api_h.cudaErrorNotReady()) {
            return false;
        }
        throw CudaChecks.exception(status, "cudaStreamQuery");
    }

    /**
     * Makes future work on this stream wait for {@code event}.
     *
     * @param event the event to wait for, open; its latest record is waited for
     * @throws IllegalStateException if the wrapper or the event is closed
     * @throws CudaException if {@code cudaStreamWaitEvent} fails
     */
    public void waitFor(CudaEvent event) {
        ensureOpen();
        Objects.requireNonNull(event, "event");
        CudaChecks.check(cuda_runtime_api_h.cudaStreamWaitEvent(handle, event.segment(), 0), "cudaStreamWaitEvent");
    }

    /**
     * Whether the stream is capturing a graph ({@code cudaStreamIsCapturing}).
     *
     * @return the stream's capture status
     * @throws IllegalStateException if the wrapper is closed
     * @throws CudaException if {@code cudaStreamIsCapturing} fails
     */
    public CaptureStatus captureStatus() {
        ensureOpen();
        try (Arena arena = Arena.ofConfined()) {
            return CaptureStatus.ofCode(captureCode(handle, arena.allocate(ValueLayout.JAVA_INT)));
        }
    }

    /**
     * Whether the stream with this raw {@code cudaStream_t} handle is capturing a graph, without
     * allocating: {@code scratch} receives the status (4 bytes, native, reused by the caller).
     * For per-call checks on the all-reduce path.
     *
     * @param streamHandle the {@code cudaStream_t}'s address, 0 for the legacy default stream
     * @param scratch a native segment of at least 4 bytes, overwritten
     * @return {@code true} if the stream's status is {@link CaptureStatus#ACTIVE}
     * @throws CudaException if {@code cudaStreamIsCapturing} fails
     */
    public static boolean isCapturing(long streamHandle, MemorySegment scratch) {
        return captureCode(MemorySegment.ofAddress(streamHandle), scratch)
                == cuda_runtime_api_h.cudaStreamCaptureStatusActive();
    }

    /** {@code cudaStreamIsCapturing}, its status written to and read from {@code scratch}. */
    private static int captureCode(MemorySegment stream, MemorySegment scratch) {
        CudaChecks.check(cuda_runtime_api_h.cudaStreamIsCapturing(stream, scratch), "cudaStreamIsCapturing");
        return scratch.get(ValueLayout.JAVA_INT, 0);
    }

    /**
     * The capture status and the capture's id ({@code cudaStreamGetCaptureInfo}); the id is unique
     * per capture within the process and meaningless when the status is {@link CaptureStatus#NONE}.
     *
     * @return the status and the capture's id
     * @throws IllegalStateException if the wrapper is closed
     * @throws CudaException if {@code cudaStreamGetCaptureInfo} fails
     */
    public CaptureInfo captureInfo() {
        ensureOpen();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment status = arena.allocate(ValueLayout.JAVA_INT);
            MemorySegment id = arena.allocate(ValueLayout.JAVA_LONG);
            CudaChecks.check(cuda_runtime_api_h.cudaStreamGetCaptureInfo(handle, status, id, MemorySegment.NULL,
                    MemorySegment.NULL, MemorySegment.NULL, MemorySegment.NULL), "cudaStreamGetCaptureInfo");
            return new CaptureInfo(CaptureStatus.ofCode(status.get(ValueLayout.JAVA_INT, 0)), id.get(ValueLayout.JAVA_LONG, 0));
        }
    }

    /**
     * A stream's capture state.
     *
     * @param status whether it is capturing
     * @param id     the capture's unique id (valid when capturing)
     */
    public record CaptureInfo(CaptureStatus status, long id) {
    }

    private void ensureOpen() {
        if (!lifetime.isAlive()) {
            throw new IllegalStateException(this + " is closed");
        }
    }

    /** Destroys an owned stream (once; pending work still completes); for a borrowed one, only ends the wrapper. */
    @Override
    public void close() {
        if (lifetime.end() && owned) {
            CudaChecks.check(cuda_runtime_api_h.cudaStreamDestroy(handle), "cudaStreamDestroy");
        }
    }

    @Override
    public String toString() {
        return "CudaStream[0x" + Long.toHexString(handle.address()) + ", device " + device + (owned ? ", owned" : ", borrowed") + "]";
    }
}
