package dev.ar4j.examples.llama.engine;

import dev.ar4j.Communicator;
import dev.ar4j.GraphCapture;
import dev.ar4j.cuda.CaptureMode;
import dev.ar4j.cuda.CudaGraph;
import dev.ar4j.cuda.CudaGraphExec;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;

import java.lang.foreign.MemorySegment;

/**
 * One step of a fixed token count with its host I/O: the token ids and positions copied from
 * pinned host memory to the device, the forward pass, the argmax of the last {@code logitRows}
 * rows, the kernels' status word (and, when kept, those rows' logits) copied back to pinned memory. Run eagerly, or captured once into a CUDA
 * graph ({@link #capture}) and replayed ({@link #replay}), which makes no Java objects.
 */
final class StepRunner implements AutoCloseable {

    private final ForwardPass forward;
    private final CudaStream stream;
    private final StepViews views;
    private final int splits;
    private final DeviceBuffer idsIn;
    private final DeviceBuffer positionsIn;
    private final DeviceBuffer argmaxOut;
    private final DeviceBuffer statusOut;
    private final DeviceBuffer logitsOut;
    private final MemorySegment hostIds;
    private final MemorySegment hostPositions;
    private final MemorySegment hostArgmax;
    private final MemorySegment hostStatus;
    private final MemorySegment hostLogits;
    private final int logitRows;
    private final int chunkStart;
    private final int sequences;
    private final int sequence;
    private CudaGraphExec graph;

    StepRunner(ForwardPass forward, CudaStream stream, Activations act, DeviceBuffer status, HostIo io, int tokens,
               int splits, int logitRows) {
        this(forward, stream, act, status, io, tokens, splits, logitRows, -1, 1, 0);
    }

    /**
     * A step; a prefill chunk gives its first position ({@code chunkStart}, for its attention) and may ask for no
     * logits ({@code logitRows} 0); a step of a batch gives its sequences (its tokens are that many equal runs, run s
     * in sequence s's cache), a prefill chunk its one sequence.
     */
    StepRunner(ForwardPass forward, CudaStream stream, Activations act, DeviceBuffer status, HostIo io, int tokens,
               int splits, int logitRows, int chunkStart, int sequences, int sequence) {
        if (sequences < 1 || tokens % sequences != 0 || (sequences > 1 && sequence != 0)) {
            throw new IllegalArgumentException(tokens + " tokens in " + sequences + " sequences from sequence "
                    + sequence + ": need equal runs, and sequence 0 for a step of several");
        }
        this.forward = forward;
        this.sequences = sequences;
        this.sequence = sequence;
        this.chunkStart = chunkStart;
        this.stream = stream;
        this.views = forward.views(tokens);
        this.splits = splits;
        this.logitRows = logitRows;
        this.idsIn = act.ids.slice(0, 4L * tokens);
        this.positionsIn = act.positions.slice(0, 4L * tokens);
        this.argmaxOut = logitRows == 0 ? null : act.argmax.slice(0, 4L * logitRows);
        this.statusOut = status.slice(0, 4);
        this.logitsOut = io.keepsLogits() && logitRows > 0 ? views.logitRows(logitRows) : null;
        this.hostIds = io.ids().asSlice(0, 4L * tokens);
        this.hostPositions = io.positions().asSlice(0, 4L * tokens);
        this.hostArgmax = io.argmax().asSlice(0, 4L * logitRows);
        this.hostStatus = io.status();
        this.hostLogits = logitsOut != null ? io.logits().asSlice(0, logitsOut.byteSize()) : null;
    }

    int tokens() {
        return views.tokens();
    }

    int splits() {
        return splits;
    }

    int logitRows() {
        return logitRows;
    }

    private void enqueue(SectionTimer timer) {
        idsIn.copyFromAsync(hostIds, stream);
        positionsIn.copyFromAsync(hostPositions, stream);
        forward.enqueue(views, splits, timer, logitRows, chunkStart, sequences, sequence);
        if (argmaxOut != null) {
            argmaxOut.copyToAsync(hostArgmax, stream);
        }
        statusOut.copyToAsync(hostStatus, stream);
        if (logitsOut != null) {
            logitsOut.copyToAsync(hostLogits, stream);
        }
    }

    /** Enqueues the step eagerly (with events around its all-reduces when {@code timer} is given). */
    void runEager(SectionTimer timer) {
        enqueue(timer);
    }

    /** Captures the step into a graph, collectively with the other ranks (the all-reduces are shared on close). */
    void capture(Communicator comm) {
        if (graph != null) {
            throw new IllegalStateException("the " + tokens() + "-token step is already captured");
        }
        CudaGraph g;
        try (GraphCapture scope = comm.graphCapture()) {
            CudaGraph.beginCapture(stream, CaptureMode.THREAD_LOCAL);
            try {
                enqueue(null);
            } catch (RuntimeException e) {
                try {
                    CudaGraph.endCapture(stream).close();
                } catch (RuntimeException suppressed) {
                    e.addSuppressed(suppressed);
                }
                throw e;
            }
            g = CudaGraph.endCapture(stream);
        }
        try (CudaGraph captured = g) {
            graph = captured.instantiate();
        }
    }

    /** Enqueues one replay of the captured graph. */
    void replay() {
        graph.launch(stream);
    }

    boolean captured() {
        return graph != null;
    }

    @Override
    public void close() {
        if (graph != null) {
            graph.close();
            graph = null;
        }
    }
}
