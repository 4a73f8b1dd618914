package dev.ar4j.examples.llama.engine;

import dev.ar4j.Communicator;
import dev.ar4j.DType;
import dev.ar4j.HostData;
import dev.ar4j.cuda.Cuda;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceAttribute;
import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.examples.llama.model.ModelFolder;
import dev.ar4j.examples.llama.model.ShardPlan;
import dev.ar4j.examples.llama.model.TensorParallelLayout;

import java.io.PrintStream;
import java.lang.foreign.ValueLayout;
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
    private final EngineMemory.Plan memoryPlan;
    /** The one timing entry (a new one per call cost the replay loop 16 bytes of heap a step). */
    private final Timing timing = new Timing();
    private final ChunkedPrefill chunkedPrefill;

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
            // One SM count for the workspace's size and every launch's split count: the communicator's GPU.
            smCount = Cuda.deviceAttribute(DeviceAttribute.MULTI_PROCESSOR_COUNT, comm.device());
            long attentionWs = EngineMemory.attentionWorkspaceBytes(s, smCount);
            // Read once: the memory plan, the buffers and the forward pass must agree on it.
            boolean fusedPrefill = PrefillAttention.inOneKernel(layout);
            memoryPlan = EngineMemory.checkFits(s, attentionWs, comm.rank(), fusedPrefill);
            // Non-blocking: no implicit order with the legacy stream, which another thread (a watchdog, a
            // synchronous copy) may use while this stream is being captured.
            stream = own(CudaStream.create(true, 0));
            status = own(DeviceBuffer.allocate(16));
            status.fill(0);
            DeviceBuffer workspace = own(DeviceBuffer.allocate(EngineMemory.CUBLAS_WORKSPACE));
            Cublas cublas = own(Cublas.create(stream, workspace));
            kernels = new LlamaKernels(stream.handle(), status.address(), s.pdl());
            ShardPlan plan = ShardPlan.forRank(layout, comm.rank());
            weights = own(RankWeights.allocate(plan));
            if (folder != null) {
                WeightLoader.load(folder, weights, comm.rank() == 0 ? progress : null);
            } else {
                SyntheticWeights.make(weights, kernels, stream, s.seed(), comm.rank() == 0 ? progress : null);
            }
            KvCache cache = own(new KvCache(layout, s.context(), s.batch()));
            act = own(new Activations(layout, s.maxTokens(), s.logitRows(), attentionWs));
            io = own(new HostIo(s.maxTokens(), 2L * s.logitRows() * layout.paddedVocab(), s.keepLogits()));
            int chunkRows = Math.min(s.prefillMax(), s.prefillChunk());
            PrefillAttention prefillAttention = chunkRows > LlamaKernels.MAX_ATTENTION_STORED_TOKENS
                    && !fusedPrefill
                    ? own(new PrefillAttention(cublas, kernels, layout, cache, act.qkv.address(),
                            act.attention.address(), chunkRows))
                    : null;
            forward = new ForwardPass(comm, stream, cublas, kernels, weights, act, cache, prefillAttention, fusedPrefill,
                    s.sampling(), s.keepLogits());
            int b = s.batch();
            decode = own(new StepRunner(forward, stream, act, status, io, b, splits(b, b), b, -1, b, 0));
            verify = s.draft() > 0
                    ? own(new StepRunner(forward, stream, act, status, io, s.stepTokens(true),
                            splits(s.stepTokens(true), b), s.stepTokens(true), -1, b, 0))
                    : null;
            chunkedPrefill = new ChunkedPrefill(s, forward, io, comm, (t, rows, start, sequence) -> new StepRunner(forward,
                    stream, act, status, io, t, splits(t, 1), rows, start, 1, sequence), this::finish);
            stream.synchronize();
            // No rank launches a collective before every rank's setup (allocations, weight copies,
            // cuBLAS) is done: on ranks sharing one GPU, a setup step that waits for the device (a
            // copy through the driver's staging buffer, a free) would otherwise wait behind a peer's
            // kernel that waits for this rank, until the kernel timeout.
            comm.barrier();
        } catch (RuntimeException e) {
            closeOwned(e);
            throw e;
        }
    }

    /**
     * This rank's buffers, by kind, and the GPU's memory in use now (all its processes, the CUDA contexts too).
     *
     * @return the plan and {@code cudaMemGetInfo}'s total minus free, in bytes
     */
    public EngineMemory.Use memoryUse() {
        long[] mem = LlamaKernels.deviceMemory();
        return new EngineMemory.Use(memoryPlan, mem[1] - mem[0]);
    }

    /**
     * Sets up one rank: allocates, loads (or makes) its weights, with a progress bar on rank 0.
     *
     * @param comm     this rank's communicator (its GPU current on the calling thread); not owned
     * @param settings the engine's sizes
     * @param folder   the model folder (checked against the config here, {@code LlamaTensors.check}: a
     *                 needed tensor missing, of another shape or of a dtype the engine cannot read is refused
     *                 before anything is copied), or {@code null} for synthetic weights
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

    private int splits(int tokens, int sequences) {
        return LlamaKernels.attentionBatchedSplits(tokens, sequences, settings.layout().headsPerRank(),
                settings.layout().kvHeadsPerRank(), settings.context(), smCount);
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
     * Runs the prompt eagerly at positions {@code 0 .. n-1}, in chunks of at most
     * {@link EngineSettings#prefillChunk()} tokens, and returns the next token (the argmax, or a draw with
     * {@link EngineSettings#sampling()}). Only the last chunk computes logits: of its last
     * {@link EngineSettings#KEPT_PROMPT_LOGIT_ROWS} positions when the engine keeps logits ({@link #logits}{@code (r)}
     * is then prompt position {@link #prefillLogitsFirst()}{@code + r}), of the last
     * position otherwise.
     *
     * @param prompt the token ids, 1 to {@code prefillMax} of them
     * @return the argmax of the last position's logits
     */
    public int prefill(int[] prompt) {
        return prefill(0, prompt);
    }

    /**
     * {@link #prefill(int[])} of one sequence of the batch, into its own KV cache (its positions start at 0).
     *
     * @param sequence the sequence, 0 to {@code batch - 1}
     * @param prompt   its token ids, 1 to {@code prefillMax} of them
     * @return the sequence's next token
     */
    public int prefill(int sequence, int[] prompt) {
        refuseShardAlone("prefill");
        checkTokenIds("prefill", prompt, prompt.length, settings.layout().config().vocabSize());
        chunkedPrefill.run(sequence, prompt, null);
        return io.argmax(chunkedPrefill.keptLogitRows() - 1);
    }

    /**
     * The prompt position of {@link #logits}{@code (0)} after a prefill.
     *
     * @return the first prompt position whose logits the last prefill kept
     */
    public int prefillLogitsFirst() {
        return chunkedPrefill.firstKeptPosition();
    }

    /**
     * One decode step from the graph: token {@code id} at {@code position}.
     *
     * @param id       the input token
     * @param position its position, below the context
     * @return the next token: the argmax, or a draw with {@link EngineSettings#sampling()}
     */
    public int decode(int id, int position) {
        refuseShardAlone("decode");
        refuseBatch("decode", "decodeBatch");
        checkTokenId("decode", 0, id, settings.layout().config().vocabSize());
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
        refuseBatch("verify", "verifyBatch");
        if (verify == null || ids.length != settings.draft() || next.length < ids.length) {
            throw new IllegalArgumentException("verify takes exactly --draft " + settings.draft() + " tokens");
        }
        checkTokenIds("verify", ids, ids.length, settings.layout().config().vocabSize());
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
     * One decode step of every sequence of the batch from the graph: sequence s's token {@code ids[s]} at its position
     * {@code positions[s]} (its own cache; the sequences' lengths are independent).
     *
     * @param ids       one token per sequence, {@code batch} of them
     * @param positions each token's position in its sequence
     * @param next      receives each sequence's next token (the argmax, or a draw)
     */
    public void decodeBatch(int[] ids, int[] positions, int[] next) {
        refuseShardAlone("decode");
        int b = settings.batch();
        if (ids.length != b || positions.length != b || next.length < b) {
            throw new IllegalArgumentException("decodeBatch takes one token and one position per sequence of the batch"
                    + " of " + b + " (and room for " + b + " tokens): got " + ids.length + " ids, " + positions.length
                    + " positions, room for " + next.length);
        }
        checkTokenIds("decode", ids, b, settings.layout().config().vocabSize());
        for (int s = 0; s < b; s++) {
            checkPosition(positions[s], 1);
            io.setInput(s, ids[s], positions[s]);
        }
        decode.replay();
        finish("decode");
        for (int s = 0; s < b; s++) {
            next[s] = io.argmax(s);
        }
    }

    /**
     * One verify step of every sequence of the batch from the graph: sequence s's {@code draft} tokens
     * {@code ids[s * draft ..]} at positions {@code positions[s] ..} of its own cache.
     *
     * @param ids       {@code batch * draft} tokens, sequence by sequence
     * @param positions each sequence's first position
     * @param next      receives the greedy next token after each draft token, sequence by sequence
     */
    public void verifyBatch(int[] ids, int[] positions, int[] next) {
        refuseShardAlone("verify");
        int b = settings.batch();
        int k = settings.draft();
        if (verify == null || ids.length != b * k || positions.length != b || next.length < b * k) {
            throw new IllegalArgumentException("verifyBatch takes --draft " + k + " tokens of each of the " + b
                    + " sequences, their first positions and room for as many tokens: got " + ids.length + " ids, "
                    + positions.length + " positions, room for " + next.length);
        }
        checkTokenIds("verify", ids, ids.length, settings.layout().config().vocabSize());
        for (int s = 0; s < b; s++) {
            checkPosition(positions[s], k);
            for (int i = 0; i < k; i++) {
                io.setInput(s * k + i, ids[s * k + i], positions[s] + i);
            }
        }
        verify.replay();
        finish("verify");
        for (int i = 0; i < b * k; i++) {
            next[i] = io.argmax(i);
        }
    }

    /** Refuses a one-sequence step on an engine of a batch of several. */
    private void refuseBatch(String step, String batchStep) {
        if (settings.batch() != 1) {
            throw new IllegalStateException(step + ": this engine runs a batch of " + settings.batch()
                    + " sequences; step every sequence at once with " + batchStep);
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

    /**
     * Refuses token ids outside the vocabulary before anything is launched, naming the first (the
     * embedding kernel would report it through the status word and embed zeros).
     *
     * @throws IllegalArgumentException naming the step, the index and the id
     */
    static void checkTokenIds(String step, int[] ids, int count, int vocab) {
        for (int i = 0; i < count; i++) {
            checkTokenId(step, i, ids[i], vocab);
        }
    }

    /** One id of {@link #checkTokenIds} (no allocation: decode runs it every step). */
    static void checkTokenId(String step, int index, int id, int vocab) {
        if (id < 0 || id >= vocab) {
            throw new IllegalArgumentException(step + ": token " + index + " is id " + id
                    + ", outside the vocabulary 0.." + (vocab - 1) + " (vocab_size " + vocab + ")");
        }
    }

    /**
     * Waits for the step and throws if a kernel reported a device-side error. The status word is
     * zeroed first (on the device and in the host copy), so the error fails this step only: the
     * next step reports its own errors, if any. What the failed step wrote (its KV-cache rows,
     * zeros for a bad token's embedding) stays; the caller decides whether to go on.
     */
    private void finish(String step) {
        stream.synchronize();
        int word = io.statusWord();
        if (word != 0) {
            status.fillAsync(0, stream);
            stream.synchronize();
            io.status().set(ValueLayout.JAVA_INT, 0, 0);
            throw new EngineException(step + " step on rank " + comm.rank() + ": a kernel reported "
                    + LlamaKernels.errorString(word) + " (" + word + ") for an index in device memory (the status "
                    + "word is reset; later steps run)");
        }
    }

    /**
     * The last step's logits of one row, as floats (the vocabulary only, not its padding).
     *
     * @param row the step's row (token), from 0; after a prefill, its kept rows (see {@link #prefill})
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

    /** The timing entry: what {@link StepTiming} (and the engine's GPU tests) measure and drive through. */
    Timing timing() {
        return timing;
    }

    /**
     * This engine's stream, host buffers and steps, for {@link StepTiming}: the captured steps, fresh eager
     * steps, the chunked prefill, and the check that ends each step. Nothing else reaches into the engine.
     */
    final class Timing {

        private Timing() {
        }

        CudaStream stream() {
            return stream;
        }

        HostIo io() {
            return io;
        }

        /** The captured step of {@code kind} ({@link StepKind#DECODE} or {@link StepKind#VERIFY}). */
        StepRunner captured(StepKind kind) {
            return switch (kind) {
                case DECODE -> decode;
                case VERIFY -> verify;
                case PREFILL -> throw new IllegalArgumentException("prefill is not captured: " + kind);
            };
        }

        /**
         * An eager step of {@code tokens} tokens in {@code sequences} equal runs (the batch's decode or verify step:
         * the batch; else 1) with logits of the last {@code logitRows}.
         */
        StepRunner eager(int tokens, int logitRows, int sequences) {
            return new StepRunner(forward, stream, act, status, io, tokens, splits(tokens, sequences), logitRows, -1,
                    sequences, 0);
        }

        /** The whole chunked prefill of {@code prompt}, timer events around each chunk's sections. */
        void prefill(int[] prompt, SectionTimer timer) {
            chunkedPrefill.run(0, prompt, timer);
        }

        /** Waits for the step and checks its status word, as every public step does. */
        void finish(String step) {
            RankEngine.this.finish(step);
        }
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
