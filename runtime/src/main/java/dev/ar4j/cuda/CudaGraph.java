package dev.ar4j.cuda;

import dev.ar4j.internal.platform.Lifetime;

import dev.ar4j.bindings.cudart.cuda_runtime_api_h;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Objects;

/**
 * A CUDA graph made by stream capture, destroyed exactly once by {@link #close()}.
 * {@link #instantiate()} turns it into a launchable {@link CudaGraphExec}.
 *
 * <pre>{@code
 * try (CudaGraph graph = CudaGraph.capture(stream, CaptureMode.THREAD_LOCAL, () -> enqueueWork(stream));
 *      CudaGraphExec exec = graph.instantiate()) {
 *     exec.launch(stream);
 * }
 * }</pre>
 */
public final class CudaGraph implements AutoCloseable {
    private final MemorySegment handle;
    private final Lifetime lifetime = new Lifetime(null);

    private CudaGraph(MemorySegment handle) {
        this.handle = handle;
    }

    /**
     * Starts capturing the work enqueued on {@code stream} ({@code cudaStreamBeginCapture}).
     *
     * @param stream the stream to capture, open and not already capturing
     * @param mode how strictly other threads' unsafe calls are refused during the capture
     * @throws NullPointerException if {@code stream} or {@code mode} is {@code null}
     * @throws CudaException if {@code cudaStreamBeginCapture} fails (for example the legacy default stream,
     *     or a stream already capturing)
     */
    public static void beginCapture(CudaStream stream, CaptureMode mode) {
        Objects.requireNonNull(stream, "stream");
        Objects.requireNonNull(mode, "mode");
        CudaChecks.check(cuda_runtime_api_h.cudaStreamBeginCapture(stream.segment(), mode.code()),
                "cudaStreamBeginCapture(" + mode + ")");
    }

    /**
     * Ends the capture on {@code stream} and returns the graph ({@code cudaStreamEndCapture}).
     *
     * @param stream the capturing stream, on the thread that began the capture (unless the mode is relaxed)
     * @return the captured graph, owned by the caller
     * @throws CudaException if {@code cudaStreamEndCapture} fails (for example an invalidated capture); a
     *     partial graph is destroyed first
     * @throws IllegalStateException if the runtime returned no graph
     */
    public static CudaGraph endCapture(CudaStream stream) {
        Objects.requireNonNull(stream, "stream");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            int status = cuda_runtime_api_h.cudaStreamEndCapture(stream.segment(), out);
            MemorySegment graph = out.get(ValueLayout.ADDRESS, 0);
            if (status != 0) {
                if (graph.address() != 0) {
                    cuda_runtime_api_h.cudaGraphDestroy(graph);
                }
                throw CudaChecks.exception(status, "cudaStreamEndCapture");
            }
            if (graph.address() == 0) {
                throw new IllegalStateException("cudaStreamEndCapture returned no graph");
            }
            return new CudaGraph(graph);
        }
    }

    /**
     * Captures what {@code work} enqueues on {@code stream}. If {@code work} throws, the capture is
     * ended, its partial graph destroyed and the exception rethrown.
     *
     * @param stream the stream to capture, open and not already capturing
     * @param mode how strictly other threads' unsafe calls are refused during the capture
     * @param work enqueues the work to capture on {@code stream}, on the calling thread
     * @return the captured graph, owned by the caller
     * @throws NullPointerException if an argument is {@code null}
     * @throws CudaException if beginning or ending the capture fails
     */
    public static CudaGraph capture(CudaStream stream, CaptureMode mode, Runnable work) {
        Objects.requireNonNull(work, "work");
        beginCapture(stream, mode);
        try {
            work.run();
        } catch (RuntimeException | Error e) {
            try {
                endCapture(stream).close();
            } catch (RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
        return endCapture(stream);
    }

    /**
     * Makes an executable graph ({@code cudaGraphInstantiate}, no flags). The graph stays usable.
     *
     * @return a new executable graph, owned by the caller
     * @throws IllegalStateException if this graph is closed
     * @throws CudaException if {@code cudaGraphInstantiate} fails
     */
    public CudaGraphExec instantiate() {
        ensureOpen();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            CudaChecks.check(cuda_runtime_api_h.cudaGraphInstantiate(out, handle, 0L), "cudaGraphInstantiate");
            return new CudaGraphExec(out.get(ValueLayout.ADDRESS, 0));
        }
    }

    /**
     * The {@code cudaGraph_t} as an address.
     *
     * @return the handle's address, valid until {@link #close()}
     * @throws IllegalStateException if the graph is closed
     */
    public long handle() {
        ensureOpen();
        return handle.address();
    }

    /**
     * False once closed.
     *
     * @return {@code true} until {@link #close()} was called
     */
    public boolean isOpen() {
        return lifetime.isAlive();
    }

    private void ensureOpen() {
        if (!lifetime.isAlive()) {
            throw new IllegalStateException("CudaGraph[0x" + Long.toHexString(handle.address()) + "] is closed");
        }
    }

    /** Destroys the graph (once). Executable graphs made from it stay valid. */
    @Override
    public void close() {
        if (lifetime.end()) {
            CudaChecks.check(cuda_runtime_api_h.cudaGraphDestroy(handle), "cudaGraphDestroy");
        }
    }
}
