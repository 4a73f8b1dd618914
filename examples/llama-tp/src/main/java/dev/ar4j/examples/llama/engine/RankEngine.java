package dev.ar4j.examples.llama.engine;

import dev.ar4j.Communicator;
import dev.ar4j.DType;
import dev.ar4j.HostData;
import dev.ar4j.cuda.Cuda;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceAttribute;
import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.examples.llama.cublas.Cublas;
import dev.ar4j.examples.llama.kernels.bindings.kernels_h;
import dev.ar4j.examples.llama.safetensors.ModelFolder;
import dev.ar4j.examples.llama.weights.ShardPlan;
import dev.ar4j.examples.llama.weights.TensorParallelLayout;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;

/**
 * One rank of the tensor-parallel decoder: its stream, cuBLAS handle, kernels, weights, KV cache,
 * activations, pinned I/O and its three steps (prefill eager; decode and verify captured into
 * CUDA graphs by {@link #captureGraphs}). Every method is collective: every rank calls the same
 * ones with the same arguments, each on its own thread (whose current device is the rank's).
 * Owns everything it allocates except the communicator.
 */
public final class RankEngine implements AutoCloseable {

    /** cuBLAS's workspace per rank. */
    static final long CUBLAS_WORKSPACE = 32L << 20;

    private final Communicator comm;
    private final EngineSettings settings;
    private final List<AutoCloseable> owned = new ArrayList<>();
    private final CudaStream stream;
    private final DeviceBuffer status;
    private final LlamaKernels kernels;
    private final RankWeights weights;
    private final Activations act;
    private final HostIo io;
    private final ForwardPass forward;
    private final int smCount;
    private final StepRunner decode;
    private final StepRunner verify;

    private RankEngine(Communicator comm, EngineSettings s, ModelFolder folder, PrintStream progress) {
        this.comm = comm;
        this.settings = s;
        TensorParallelLayout layout = s.layout();
        if (comm.worldSize() != s.worldSize()) {
            throw new IllegalArgumentException("the communicator has " + comm.worldSize() + " ranks but "
                    + (s.shardAlone() ? "rank 0's shard of TP " + layout.tp() + " runs alone (world size 1)"
                    : "--tp is " + layout.tp()));
        }
        if (layout.vocabEnd(comm.rank()) <= layout.vocabStart(comm.rank())) {
            throw new IllegalArgumentException("with --tp " + layout.tp() + " rank " + comm.rank()
                    + " would hold only vocabulary padding (vocab_size " + layout.config().vocabSize()
                    + ", " + layout.vocabPerRank() + " rows per rank): use fewer ranks");
        }
        try {
            // Non-blocking: no implicit order with the legacy stream, which another thread (a watchdog, a
            // synchronous copy) may use while this stream is being captured.
            stream = own(CudaStream.create(true, 0));
            status = own(DeviceBuffer.allocate(16));
            status.fill(0);
            DeviceBuffer workspace = own(DeviceBuffer.allocate(CUBLAS_WORKSPACE));
            Cublas cublas = own(Cublas.create(stream, workspace));
            kernels = new LlamaKernels(stream.handle(), status.address(), s.pdl());
            ShardPlan plan = ShardPlan.forRank(layout, comm.rank());
            weights = own(RankWeights.allocate(plan));
            if (folder != null) {
                WeightLoader.load(folder, weights, comm.rank() == 0 ? progress : null);
            } else {
                SyntheticWeights.make(weights, kernels, stream, s.seed(), comm.rank() == 0 ? progress : null);
            }
            KvCache cache = own(new KvCache(layout, s.context()));
            smCount = Cuda.deviceAttribute(DeviceAttribute.MULTI_PROCESSOR_COUNT, comm.device());
            // Every step size may run (a prompt of any length up to prefillMax); the workspace
            // is not monotonic in it (scores are kept up to AR4J_LLAMA_MAX_ATTENTION_STORED_TOKENS tokens).
            long ws = 0;
            for (int t = 1; t <= s.maxTokens(); t++) {
                ws = Math.max(ws, LlamaKernels.attentionWorkspaceBytes(t, layout.headsPerRank(), layout.kvHeadsPerRank(),
                        layout.config().headDim(), s.context(), splits(t)));
            }
            if (ws == 0) {
                throw new EngineException("head_dim " + layout.config().headDim() + ": the attention kernels need a "
                        + "multiple of 8 up to " + kernels_h.AR4J_LLAMA_MAX_HEAD_DIM());
            }
            act = own(new Activations(layout, s.maxTokens(), ws));
            io = own(new HostIo(s.maxTokens(), 2L * s.maxTokens() * layout.paddedVocab(), s.keepLogits()));
            forward = new ForwardPass(comm, stream, cublas, kernels, weights, act, cache);
            decode = own(new StepRunner(forward, stream, act, status, io, 1, splits(1), 1));
            verify = s.draft() > 0
                    ? own(new StepRunner(forward, stream, act, status, io, s.draft(), splits(s.draft()), s.draft()))
                    : null;
            stream.synchronize();
            // No rank launches a collective before every rank's setup (allocations, weight copies,
            // cuBLAS) is done: on ranks sharing one GPU, a setup step that waits for the device (a
            // copy through the driver's staging buffer, a free) would otherwise wait behind a peer's
            // kernel that waits for this rank, until the kernel timeout (seen once in four runs of
            // LlamaReferenceIT at TP 4 on one H200).
            comm.barrier();
        } catch (RuntimeException e) {
            closeOwned(e);
            throw e;
        }
    }

    /**
     * Sets up one rank: allocates, loads (or makes) its weights, with a progress bar on rank 0.
     *
     * @param comm     this rank's communicator (its GPU current on the calling thread); not owned
     * @param settings the engine's sizes
     * @param folder   the checked model folder, or {@code null} for synthetic weights
     * @param progress where rank 0 draws its progress bar, or {@code null}
     * @return the engine
     */
    public static RankEngine open(Communicator comm, EngineSettings settings, ModelFolder folder,
                                  PrintStream progress) {
        return new RankEngine(comm, settings, folder, progress);
    }

    private <T extends AutoCloseable> T own(T resource) {
        owned.add(resource);
        return resource;
    }

    private int splits(int tokens) {
        return LlamaKernels.attentionSplits(tokens, settings.layout().headsPerRank(), settings.layout().kvHeadsPerRank(),
                settings.context(), smCount);
    }

    /**
     * The communicator.
     *
     * @return this rank's communicator
     */
    public Communicator communicator() {
        return comm;
    }

    /**
     * The settings.
     *
     * @return the engine's settings
     */
    public EngineSettings settings() {
        return settings;
    }

    /**
     * Captures the decode step and (with a draft) the verify step into CUDA graphs. Collective.
     */
    public void captureGraphs() {
        decode.capture(comm);
        if (verify != null) {
            verify.capture(comm);
        }
        stream.synchronize();
    }

    /**
     * Runs the prompt eagerly at positions {@code 0 .. n-1} and returns the greedy next token. The
     * logits of every prompt position are kept when the engine keeps logits, of the last one otherwise.
     *
     * @param prompt the token ids, 1 to {@code prefillMax} of them
     * @return the argmax of the last position's logits
     */
    public int prefill(int[] prompt) {
        refuseShardAlone("prefill");
        if (prompt.length < 1 || prompt.length > settings.prefillMax()) {
            throw new IllegalArgumentException("a prompt of " + prompt.length + " tokens; this engine takes 1.."
                    + settings.prefillMax());
        }
        int rows = settings.keepLogits() ? prompt.length : 1;
        try (StepRunner step = new StepRunner(forward, stream, act, status, io, prompt.length, splits(prompt.length),
                rows)) {
            for (int i = 0; i < prompt.length; i++) {
                io.setInput(i, prompt[i], i);
            }
            step.runEager(null);
            finish("prefill");
        }
        return io.argmax(rows - 1);
    }

    /**
     * One decode step from the graph: token {@code id} at {@code position}.
     *
     * @param id       the input token
     * @param position its position, below the context
     * @return the greedy next token
     */
    public int decode(int id, int position) {
        refuseShardAlone("decode");
        checkPosition(position, 1);
        io.setInput(0, id, position);
        decode.replay();
        finish("decode");
        return io.argmax(0);
    }

    /**
     * One verify step from the graph: {@code draft} tokens at {@code position ..}.
     *
     * @param ids      the draft tokens, {@code settings.draft()} of them
     * @param position the first one's position
     * @param next     receives the greedy next token after each draft token
     */
    public void verify(int[] ids, int position, int[] next) {
        refuseShardAlone("verify");
        if (verify == null || ids.length != settings.draft() || next.length < ids.length) {
            throw new IllegalArgumentException("verify takes exactly --draft " + settings.draft() + " tokens");
        }
        checkPosition(position, ids.length);
        for (int i = 0; i < ids.length; i++) {
            io.setInput(i, ids[i], position + i);
        }
        verify.replay();
        finish("verify");
        for (int i = 0; i < ids.length; i++) {
            next[i] = io.argmax(i);
        }
    }

    /**
     * Refuses the steps that return tokens on a shard alone: its LM head fills only rank 0's
     * vocabulary (the other ranks' logits stay zero and no peer adds them), so its greedy tokens
     * mean nothing. {@link StepTiming} times such an engine's steps without reading their tokens.
     */
    private void refuseShardAlone(String step) {
        if (settings.shardAlone()) {
            throw new IllegalStateException(step + ": this engine runs rank 0's shard of TP " + settings.layout().tp()
                    + " alone (a benchmark projection); its tokens mean nothing");
        }
    }

    private void checkPosition(int position, int tokens) {
        if (position < 0 || position + tokens > settings.context()) {
            throw new IllegalArgumentException("positions " + position + ".." + (position + tokens - 1)
                    + " are outside the KV cache of " + settings.context());
        }
    }

    /** Waits for the step and throws if a kernel reported a device-side error. */
    private void finish(String step) {
        stream.synchronize();
        int word = io.statusWord();
        if (word != 0) {
            throw new EngineException(step + " step on rank " + comm.rank() + ": a kernel reported "
                    + LlamaKernels.errorString(word) + " (" + word + ") for an index in device memory");
        }
    }

    /**
     * The last step's logits of one row, as floats (the vocabulary only, not its padding).
     *
     * @param row the step's row (token), from 0
     * @return {@code vocab_size} logits
     */
    public float[] logits(int row) {
        refuseShardAlone("logits");
        if (!io.keepsLogits()) {
            throw new IllegalStateException("this engine was set up without keepLogits");
        }
        TensorParallelLayout l = settings.layout();
        long rowBytes = 2L * l.paddedVocab();
        return HostData.decode(io.logits().asSlice(row * rowBytes, 2L * l.config().vocabSize()), DType.BFLOAT16);
    }

    StepRunner decodeStep() {
        return decode;
    }

    StepRunner verifyStep() {
        return verify;
    }

    ForwardPass forwardPass() {
        return forward;
    }

    CudaStream stream() {
        return stream;
    }

    HostIo io() {
        return io;
    }

    /** An eager step of {@code tokens} tokens with logits of the last {@code logitRows}. */
    StepRunner eagerStep(int tokens, int logitRows) {
        return new StepRunner(forward, stream, act, status, io, tokens, splits(tokens), logitRows);
    }

    void finishStep(String step) {
        finish(step);
    }

    /** Frees everything this rank allocated, in reverse order; the communicator stays open. */
    @Override
    public void close() {
        RuntimeException first = closeOwned(null);
        if (first != null) {
            throw first;
        }
    }

    private RuntimeException closeOwned(RuntimeException cause) {
        RuntimeException first = null;
        for (int i = owned.size() - 1; i >= 0; i--) {
            try {
                owned.get(i).close();
            } catch (Exception e) {
                if (first == null) {
                    first = new EngineException("closing rank " + comm.rank() + "'s " + owned.get(i), e);
                }
            }
        }
        owned.clear();
        if (cause != null && first != null) {
            cause.addSuppressed(first);
        }
        return first;
    }
}
