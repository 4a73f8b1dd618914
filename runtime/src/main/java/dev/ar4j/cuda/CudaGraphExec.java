package dev.ar4j.cuda;

import dev.ar4j.internal.platform.Lifetime;

import dev.ar4j.bindings.cudart.cuda_runtime_api_h;

import java.lang.foreign.MemorySegment;
import java.util.Objects;

/** An instantiated, launchable CUDA graph ({@code cudaGraphExec_t}), destroyed exactly once by {@link #close()}. */
public final class CudaGraphExec implements AutoCloseable {
    private final MemorySegment handle;
    private final Lifetime lifetime = new Lifetime(null);

    CudaGraphExec(MemorySegment handle) {
        this.handle = handle;
    }

    /**
     * Enqueues one replay of the graph on {@code stream} ({@code cudaGraphLaunch}).
     *
     * @param stream the stream to launch on, of the graph's device
     * @throws IllegalStateException if the executable graph is closed
     * @throws CudaException if {@code cudaGraphLaunch} fails
     */
    public void launch(CudaStream stream) {
        ensureOpen();
        Objects.requireNonNull(stream, "stream");
        CudaChecks.check(cuda_runtime_api_h.cudaGraphLaunch(handle, stream.segment()), "cudaGraphLaunch");
    }

    /**
     * The {@code cudaGraphExec_t} as an address.
     *
     * @return the handle's address, valid until {@link #close()}
     * @throws IllegalStateException if the executable graph is closed
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
            throw new IllegalStateException("CudaGraphExec[0x" + Long.toHexString(handle.address()) + "] is closed");
        }
    }

    /** Destroys the executable graph (once). */
    @Override
    public void close() {
        if (lifetime.end()) {
            CudaChecks.check(cuda_runtime_api_h.cudaGraphExecDestroy(handle), "cudaGraphExecDestroy");
        }
    }
}
