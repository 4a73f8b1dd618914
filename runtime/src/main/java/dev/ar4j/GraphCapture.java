package dev.ar4j;

/**
 * A CUDA graph capture scope of a {@link Communicator}. Open it before capturing all-reduces,
 * close it after {@code cudaStreamEndCapture} and before the first replay:
 *
 * <pre>{@code
 * try (GraphCapture scope = comm.graphCapture()) {
 *     CudaGraph.beginCapture(stream, CaptureMode.THREAD_LOCAL);
 *     comm.allReduce(x, DType.BFLOAT16, stream);
 *     graph = CudaGraph.endCapture(stream);
 * }   // inputs shared with the peers here: replays are zero-copy
 * }</pre>
 *
 * Closing is collective: every rank closes its scope, and every rank must have made the same
 * all-reduces while it was open. Closing compares each call's signature (algorithm, dtype,
 * element count, whether its input is shared, in call order) across the ranks; on any difference
 * it throws naming the first differing call and both ranks' versions of it, and the communicator
 * refuses further use, instead of letting a replay sum different calls or read memory that was
 * never shared.
 */
public final class GraphCapture implements AutoCloseable {

    private final Runnable finish;
    private boolean closed;

    GraphCapture(Runnable finish) {
        this.finish = finish;
    }

    /** Shares the captured inputs with every rank; idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        finish.run();
    }
}
