package dev.ar4j.examples.llama.engine;

import dev.ar4j.Communicator;
import dev.ar4j.DType;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.examples.llama.model.LlamaConfig;
import dev.ar4j.examples.llama.model.TensorParallelLayout;
import dev.ar4j.examples.llama.model.WeightName;
import dev.ar4j.examples.llama.model.WeightName.Kind;

/**
 * Enqueues one step of the decoder on a rank's stream for {@code t} tokens whose ids and
 * positions are already in device memory ({@link Activations#ids}, {@link Activations#positions}):
 *
 * <pre>
 * partial  = embedding rows of this rank's vocabulary (zero elsewhere)
 * residual = allreduce(partial) + 0;  normed = rmsnorm(residual) * input_norm[0]       (fused)
 * per layer:
 *   qkv = normed · Wqkvᵀ;  q = rope(q), kv-cache[positions] = rope(k), v;  attn = attention(q, cache)
 *                                 (RoPE + KV append one kernel before the attention; with
 *                                  -Dar4j.llama.attention.rope=true decode and verify do them in the attention's two)
 *   partial = attn · Woᵀ
 *   residual += allreduce(partial);  normed = rmsnorm(residual) * post_norm             (fused)
 *   gate_up = normed · Wgate_upᵀ;  act = silu(gate) * up;  partial = act · Wdownᵀ
 *   residual += allreduce(partial);  normed = rmsnorm(residual) * next input_norm | final norm  (fused)
 * logits[:, this rank's vocabulary] = normed[last rows] · Wlm_headᵀ (zero elsewhere);  allreduce(logits)
 * token  = argmax(logits[:, :vocab])        (the last rows: all of a decode or verify step, a prompt's last)
 *        | sample(logits[:, :vocab])        (temperature &gt; 0: {@link Sampling}, after the logits' all-reduce)
 * </pre>
 *
 * <p>Greedy at TP &gt; 1 without the logits' all-reduce (unless the logits are kept, or
 * {@code -Dar4j.llama.argmax-exchange=false}): each rank takes the argmax of its own shard of the logits (fused
 * into the LM head for one-token steps), the ranks' (value, index) pairs are exchanged by a SUM all-reduce of
 * 8 bytes per rank and row (each slot has one non-zero addend: exact), and every rank picks the same winner in
 * torch.argmax's order: the token the argmax of the all-reduced logits gives, for 16 bytes instead of 256 KB per
 * row at llama3-8b's vocabulary and TP 2.
 *
 * <p>Sampling at TP &gt; 1: every rank draws the same token without exchanging it. The logits' all-reduce gives
 * every rank the same bits (ar4j's reductions are exact and in a fixed order, and each rank's partial row is zero
 * outside its vocabulary); the sampling kernel's draw is a function of (logits, settings, seed, step counter, row)
 * only, with integer sums; every rank's counter starts at 0 and advances once per sampling launch, and the ranks
 * launch the same steps in the same order (the generation loop compares their tokens at the end).
 *
 * Every row-parallel all-reduce is ar4j's {@code allReduceResidualRmsNorm}; the logits'
 * all-reduce is a plain one. The products ({@code ·}) of one-token steps (decode) go through the
 * example's {@code ar4j_llama_linear_rows}, which streams each weight once, with SiLU × up fused into
 * the gate/up projection and, at TP 1, the argmax into the LM head; the others through cuBLAS.
 * {@code -Dar4j.llama.linear=cublas} sends every product to cuBLAS, and
 * {@code -Dar4j.llama.linear=rows} every product of up to {@code AR4J_LLAMA_MAX_LINEAR_ROWS}
 * tokens to the rows kernel. Capturable: no allocation and no host synchronisation, given
 * {@link StepViews} made beforehand.
 */
final class ForwardPass {

    private final Communicator comm;
    private final CudaStream stream;
    private final Cublas cublas;
    private final LlamaKernels kernels;
    private final RankWeights w;
    private final Activations act;
    private final KvCache cache;
    private final TensorParallelLayout layout;
    private final LlamaConfig c;
    private final int rank;
    private final float eps;
    private final float scale;
    private final int rowsKernelMaxTokens;
    /** Prefill chunks' attention through cuBLAS batched GEMMs (steps of more than 8 tokens), or {@code null}. */
    private final PrefillAttention prefill;
    /** Whether a prefill chunk's attention is one kernel ({@link PrefillAttention#inOneKernel}). */
    private final boolean prefillInOneKernel;
    /** Greedy (the argmax, fused into the LM head where it can be) or a draw on the GPU. */
    private final Sampling sampling;
    /** At TP > 1 greedy steps exchange the ranks' (max, index) pairs instead of all-reducing the logits. */
    private final boolean exchangeArgmax;
    /** Decode and verify steps rotate q and k and append to the caches inside the attention's kernels (off by default). */
    private final boolean ropeInAttention;


    ForwardPass(Communicator comm, CudaStream stream, Cublas cublas, LlamaKernels kernels, RankWeights weights,
                Activations activations, KvCache cache, PrefillAttention prefill, boolean prefillInOneKernel,
                Sampling sampling, boolean keepLogits) {
        this.comm = comm;
        this.sampling = sampling;
        this.prefill = prefill;
        this.prefillInOneKernel = prefillInOneKernel;
        this.stream = stream;
        this.cublas = cublas;
        this.kernels = kernels;
        this.w = weights;
        this.act = activations;
        this.cache = cache;
        this.layout = weights.plan().layout();
        this.c = layout.config();
        this.rank = weights.plan().rank();
        this.exchangeArgmax = StepChoices.exchangesArgmax(layout, sampling, keepLogits,
                System.getProperty(StepChoices.ARGMAX_EXCHANGE_PROPERTY));
        this.ropeInAttention = StepChoices.ropeInAttention(System.getProperty(StepChoices.ROPE_IN_ATTENTION_PROPERTY));
        this.eps = (float) c.rmsNormEps();
        this.scale = (float) Math.pow(c.headDim(), -0.5);
        LlamaKernels.chooseLinearRowsKernel(
                StepChoices.linearRowsKernel(System.getProperty(StepChoices.LINEAR_KERNEL_PROPERTY)));
        this.rowsKernelMaxTokens = StepChoices.rowsKernelMaxTokens(System.getProperty(StepChoices.LINEAR_PROPERTY),
                LlamaKernels.MAX_LINEAR_ROWS);
    }

    /** Whether a product of {@code t} rows goes through the rows kernel (or one of its fused forms). */
    private boolean rowsKernel(long weight, long x, int t, int k, int ldx) {
        return t <= rowsKernelMaxTokens && LlamaKernels.linearRowsApply(weight, x, t, k, ldx);
    }

    /** {@code Y = X · Wᵀ} (see {@link Cublas#linear}), through the rows kernel where it applies. */
    private void linear(long weight, long x, long y, int t, int n, int k, int ldx, int ldy) {
        if (rowsKernel(weight, x, t, k, ldx)) {
            kernels.linearRows(weight, x, ldx, y, ldy, t, n, k);
        } else {
            cublas.linear(weight, x, y, t, n, k, ldx, ldy);
        }
    }

    /** All-reduces in one step: the embedding's, two per layer, and the logits' (when tp > 1). */
    int allReducesPerStep() {
        return 1 + 2 * c.numHiddenLayers() + (layout.tp() > 1 ? 1 : 0);
    }

    /** The views of the activation buffers for steps of {@code t} tokens. */
    StepViews views(int t) {
        if (t < 1 || t > act.maxTokens) {
            throw new IllegalArgumentException(t + " tokens in one step; this engine was set up for 1.." + act.maxTokens);
        }
        long row = 2L * c.hiddenSize();
        return new StepViews(t, Activations.rows(act.partial, t, row), Activations.rows(act.residual, t, row),
                Activations.rows(act.normed, t, row), Activations.rows(act.zeros, t, row), act.logits,
                2L * layout.paddedVocab());
    }

    /**
     * Enqueues the step.
     *
     * @param v      the views for the step's token count
     * @param splits attention key-range splits for that count
     * @param timer  events around the all-reduces or every section, or {@code null} (graphs)
     * @param logitRows the last rows that get logits and an argmax (1 to {@code t}; a prompt needs only its last)
     */
    void enqueue(StepViews v, int splits, SectionTimer timer, int logitRows) {
        enqueue(v, splits, timer, logitRows, -1, 1, 0);
    }

    /**
     * Enqueues the step; a prefill chunk of more than {@code AR4J_LLAMA_MAX_ATTENTION_STORED_TOKENS} tokens at
     * positions {@code chunkStart ..} (a host value: eager steps only) runs its attention through
     * {@link PrefillAttention}.
     *
     * @param logitRows  as above, or 0 for a prefill chunk before the last (no LM head)
     * @param chunkStart the first position of a prefill chunk, or -1 (positions only in device memory)
     * @param sequences  the sequences of the batch the step's tokens are equal runs of (1: one sequence)
     * @param sequence   with one sequence: which of the batch's caches it reads and writes
     */
    void enqueue(StepViews v, int splits, SectionTimer timer, int logitRows, int chunkStart, int sequences,
                 int sequence) {
        int t = v.tokens();
        int h = c.hiddenSize();
        int qkvW = layout.qkvWidthPerRank();
        int qW = layout.queryWidthPerRank();
        int kvW = layout.keyValueWidthPerRank();
        int inter = layout.intermediatePerRank();

        long kvBytesPerKey = 4L * layout.kvHeadsPerRank() * c.headDim();  // one position's key and value, bf16
        begin(timer, StepSection.EMBEDDING, 2L * t * h);
        kernels.embedding(act.ids.address(), t, w.address(Kind.EMBEDDING, -1), layout.vocabStart(rank),
                layout.vocabEnd(rank), c.vocabSize(), h, act.partial.address());
        end(timer);
        fused(v, v.zeros(), w.get(WeightName.of(Kind.INPUT_NORM, 0)), timer);

        for (int l = 0; l < c.numHiddenLayers(); l++) {
            begin(timer, StepSection.QKV, 2L * qkvW * h);
            qkvProduct(l, t);
            end(timer);
            if (ropeInAttention(t, chunkStart, sequences)) {
                begin(timer, StepSection.ATTENTION, timer == null ? 0 : kvBytesPerKey * timer.contextKeys());
                ropeAttention(l, t, splits, sequences, sequence);
                end(timer);
            } else {
                begin(timer, StepSection.ROPE_KV, 2L * t * kvW * 2);
                long qkv = act.qkv.address();
                long k = qkv + 2L * qW;
                kernels.ropeKvAppendBatched(qkv, qkvW, k, qkvW, k + 2L * kvW, qkvW, t, sequences,
                        layout.headsPerRank(), layout.kvHeadsPerRank(), c.headDim(), w.invFreq().address(),
                        cache.keys(l, sequence), cache.values(l, sequence), cache.sequenceStride(), cache.positions(),
                        act.positions.address());
                end(timer);
                begin(timer, StepSection.ATTENTION, timer == null ? 0 : kvBytesPerKey * timer.contextKeys());
                attention(l, t, splits, chunkStart, sequences, sequence);
                end(timer);
            }
            begin(timer, StepSection.O_PROJ, 2L * h * qW);
            outProduct(l, t);
            end(timer);
            fused(v, v.residual(), w.get(WeightName.of(Kind.POST_NORM, l)), timer);

            begin(timer, StepSection.GATE_UP, 4L * inter * h);
            int activationStride = gateUpProduct(l, t);
            end(timer);
            begin(timer, StepSection.DOWN, 2L * h * inter);
            downProduct(l, t, activationStride);
            end(timer);
            WeightName next = l + 1 < c.numHiddenLayers() ? WeightName.of(Kind.INPUT_NORM, l + 1)
                    : WeightName.model(Kind.FINAL_NORM);
            fused(v, v.residual(), w.get(next), timer);
        }

        if (logitRows == 0 && chunkStart >= 0) {
            return;  // a prefill chunk before the last: its keys and values are in the cache, nothing else is used
        }
        int vocabPad = layout.paddedVocab();
        int rows = logitRows;
        if (rows < 1 || rows > t) {
            throw new IllegalArgumentException("logits of " + rows + " rows of a " + t + "-token step");
        }
        long logits = act.logits.address();
        long lastNormed = act.normed.address() + 2L * h * (t - rows);
        long lmHead = w.get(w.plan().lmHead()).address();
        if (exchangeArgmax) {
            exchangeArgmax(lmHead, lastNormed, logits, rows, vocabPad, timer);
            return;
        }
        if (layout.tp() > 1) {
            (rows == t ? v.logits() : v.logitRows(rows)).fillAsync(0, stream);
        }
        begin(timer, StepSection.LM_HEAD, 2L * layout.vocabPerRank() * h);
        if (layout.tp() == 1 && sampling.greedy() && rowsKernel(lmHead, lastNormed, rows, h, h)) {
            // The greedy choice in the LM head's epilogue: no pass over the logits after it.
            kernels.linearRowsArgmax(lmHead, lastNormed, h, logits, vocabPad, rows, layout.vocabPerRank(), h,
                    c.vocabSize(), 0, act.argmax.address(), act.argmaxValue.address(),
                    act.argmaxWorkspace.address(), act.argmaxWorkspace.byteSize());
            end(timer);
            return;
        }
        lmHeadProduct(lastNormed, logits, rows);
        end(timer);
        if (layout.tp() > 1) {
            begin(timer, StepSection.LOGITS_ALL_REDUCE, 2L * rows * vocabPad);
            comm.allReduce(logits, logits, (long) rows * vocabPad, DType.BFLOAT16, stream.handle());
            end(timer);
        }
        begin(timer, StepSection.ARGMAX, 2L * rows * vocabPad);  // the token's choice, greedy or sampled
        if (sampling.greedy()) {
            kernels.argmax(logits, vocabPad, rows, c.vocabSize(), act.argmax.address(), act.argmaxValue.address());
        } else {
            kernels.sample(logits, vocabPad, rows, c.vocabSize(), sampling, act.sampleState.address(),
                    act.argmax.address());
        }
        end(timer);
    }

    /**
     * Greedy at TP > 1: this rank's shard of the logits and its argmax (indices from the shard's first id, over its
     * real columns), the ranks' (value, index) pairs exchanged by a SUM all-reduce of a few floats, and the pick of
     * the best as torch.argmax over the whole vocabulary: the same token as the argmax of all-reduced logits.
     */
    private void exchangeArgmax(long lmHead, long lastNormed, long logits, int rows, int vocabPad, SectionTimer timer) {
        int h = c.hiddenSize();
        int first = layout.vocabStart(rank);
        int cols = layout.vocabEnd(rank) - first;  // the last shard's padding is not a token
        long shard = logits + 2L * first;
        begin(timer, StepSection.LM_HEAD, 2L * layout.vocabPerRank() * h);
        if (rowsKernel(lmHead, lastNormed, rows, h, h)) {
            kernels.linearRowsArgmax(lmHead, lastNormed, h, shard, vocabPad, rows, layout.vocabPerRank(), h, cols,
                    first, act.argmax.address(), act.argmaxValue.address(), act.argmaxWorkspace.address(),
                    act.argmaxWorkspace.byteSize());
        } else {
            lmHeadProduct(lastNormed, logits, rows);
            kernels.argmax(shard, vocabPad, rows, cols, first, act.argmax.address(), act.argmaxValue.address());
        }
        end(timer);
        long floats = LlamaKernels.argmaxExchangeFloats(rows, layout.tp());
        begin(timer, StepSection.LOGITS_ALL_REDUCE, 4 * floats);
        long exchange = act.argmaxExchange.address();
        kernels.argmaxPack(act.argmax.address(), act.argmaxValue.address(), rows, layout.tp(), rank, c.vocabSize(),
                exchange);
        comm.allReduce(exchange, exchange, floats, DType.FLOAT32, stream.handle());
        end(timer);
        begin(timer, StepSection.ARGMAX, 8L * rows * layout.tp());
        kernels.argmaxPick(exchange, rows, layout.tp(), act.argmax.address(), act.argmaxValue.address());
        end(timer);
    }

    /**
     * Enqueues, once, each launch of a {@code t}-token prefill chunk whose first use may wait for the whole device:
     * cuBLAS readies a kernel at its first use of a shape (setting the kernel's attributes), and the attention
     * raises a kernel's shared-memory limit at its first launch of a size. Made while a peer's all-reduce kernel
     * spins on the same GPU waiting for this rank, such a call waits for that kernel, which waits for the call,
     * until the kernel's timeout (LlamaReferenceIT with ranks sharing one GPU: every rank's stack inside
     * {@code cublasGemmEx} when the group failed). {@link ChunkedPrefill} runs this before a chunk shape's first use,
     * waits for it and meets the other ranks at a barrier, so no rank launches a collective before every rank has made
     * its first-use calls. Layer 0's products and attention, into activations the chunk writes before it reads them.
     *
     * @param t          the chunk's tokens
     * @param logitRows  its logit rows (0: none)
     * @param chunkStart its first position
     * @param sequence   the sequence whose cache its attention reads
     */
    void warmUp(int t, int logitRows, int chunkStart, int sequence) {
        qkvProduct(0, t);
        attention(0, t, 1, chunkStart, 1, sequence);
        outProduct(0, t);
        downProduct(0, t, gateUpProduct(0, t));
        if (logitRows > 0) {
            int h = c.hiddenSize();
            lmHeadProduct(act.normed.address() + 2L * h * (t - logitRows), act.logits.address(), logitRows);
        }
    }

    private void qkvProduct(int l, int t) {
        int h = c.hiddenSize();
        int qkvW = layout.qkvWidthPerRank();
        linear(w.address(Kind.QKV, l), act.normed.address(), act.qkv.address(), t, qkvW, h, h, qkvW);
    }

    /** Whether a step of {@code t} tokens runs a prefill chunk's attention (its kernel, or batched GEMMs). */
    private boolean chunkAttention(int t, int chunkStart) {
        return (prefill != null || prefillInOneKernel) && chunkStart >= 0 && t > LlamaKernels.MAX_ATTENTION_STORED_TOKENS;
    }

    /** Whether the step's RoPE + KV append runs inside its attention ({@link #ropeAttention}). */
    private boolean ropeInAttention(int t, int chunkStart, int sequences) {
        return ropeInAttention && !chunkAttention(t, chunkStart)
                && LlamaKernels.ropeAttentionApplies(t / sequences, layout.headsPerRank() / layout.kvHeadsPerRank());
    }

    /** RoPE, the KV append and the attention of layer {@code l} for a decode or verify step, in one call. */
    private void ropeAttention(int l, int t, int splits, int sequences, int sequence) {
        int qkvW = layout.qkvWidthPerRank();
        int qW = layout.queryWidthPerRank();
        long qkv = act.qkv.address();
        long k = qkv + 2L * qW;
        long v = k + 2L * layout.keyValueWidthPerRank();
        kernels.ropeAttentionBatched(qkv, qkvW, k, qkvW, v, qkvW, w.invFreq().address(), cache.keys(l, sequence),
                cache.values(l, sequence), cache.sequenceStride(), t, sequences, layout.headsPerRank(),
                layout.kvHeadsPerRank(), c.headDim(), cache.positions(), act.positions.address(), scale,
                act.attention.address(), qW, splits, act.attentionWorkspace.address(),
                act.attentionWorkspace.byteSize());
    }

    /** The attention of layer {@code l}: the prefill's kernel (or batched GEMMs) for long chunks, else the step's. */
    private void attention(int l, int t, int splits, int chunkStart, int sequences, int sequence) {
        boolean chunkAttention = chunkAttention(t, chunkStart);
        int qkvW = layout.qkvWidthPerRank();
        int qW = layout.queryWidthPerRank();
        long qkv = act.qkv.address();
        if (chunkAttention && prefillInOneKernel) {
            kernels.prefillAttention(qkv, qkvW, cache.keys(l, sequence), cache.values(l, sequence),
                    layout.keyValueWidthPerRank(), act.attention.address(), qW, t, chunkStart, layout.headsPerRank(),
                    layout.kvHeadsPerRank(), c.headDim(), scale);
        } else if (chunkAttention) {
            prefill.enqueue(l, sequence, t, chunkStart, scale);
        } else {
            kernels.attentionBatched(qkv, qkvW, cache.keys(l, sequence), cache.values(l, sequence),
                    cache.sequenceStride(), t, sequences, layout.headsPerRank(), layout.kvHeadsPerRank(), c.headDim(),
                    cache.positions(), act.positions.address(), scale, act.attention.address(), qW, splits,
                    act.attentionWorkspace.address(), act.attentionWorkspace.byteSize());
        }
    }

    private void outProduct(int l, int t) {
        int h = c.hiddenSize();
        int qW = layout.queryWidthPerRank();
        linear(w.address(Kind.OUT_PROJ, l), act.attention.address(), act.partial.address(), t, h, qW, qW, h);
    }

    /** gate/up and SiLU × up into {@link Activations#gateUp}; returns the activation's row stride. */
    private int gateUpProduct(int l, int t) {
        int h = c.hiddenSize();
        int inter = layout.intermediatePerRank();
        long gateUp = act.gateUp.address();
        long gateUpWeight = w.address(Kind.GATE_UP, l);
        if (rowsKernel(gateUpWeight, act.normed.address(), t, h, h)) {
            kernels.linearRowsSiluMul(gateUpWeight, act.normed.address(), h, gateUp, inter, t, inter, h);
            return inter;
        }
        linear(gateUpWeight, act.normed.address(), gateUp, t, 2 * inter, h, h, 2 * inter);
        kernels.siluMul(gateUp, 2L * inter, gateUp + 2L * inter, 2L * inter, gateUp, 2L * inter, t, inter);
        return 2 * inter;
    }

    private void downProduct(int l, int t, int activationStride) {
        int h = c.hiddenSize();
        int inter = layout.intermediatePerRank();
        linear(w.address(Kind.DOWN_PROJ, l), act.gateUp.address(), act.partial.address(), t, h, inter,
                activationStride, h);
    }

    /** This rank's shard of the logits of {@code rows} rows of {@code normed}, into its columns of {@code logits}. */
    private void lmHeadProduct(long normed, long logits, int rows) {
        int h = c.hiddenSize();
        linear(w.get(w.plan().lmHead()).address(), normed, logits + 2L * layout.vocabStart(rank), rows,
                layout.vocabPerRank(), h, h, layout.paddedVocab());
    }

    private void begin(SectionTimer timer, StepSection section, long bytes) {
        if (timer != null) {
            timer.begin(section, bytes, stream);
        }
    }

    private void end(SectionTimer timer) {
        if (timer != null) {
            timer.end(stream);
        }
    }

    /** residual = allreduce(partial) + residualIn; normed = rmsnorm(residual) * weight. */
    private void fused(StepViews v, DeviceBuffer residualIn, DeviceBuffer weight, SectionTimer timer) {
        // The all-reduce's and the norm's traffic: partial, residual in and out, normed out.
        begin(timer, StepSection.ALL_REDUCE_NORM, 8L * v.tokens() * c.hiddenSize());
        comm.allReduceResidualRmsNorm(v.partial(), residualIn, weight, v.normed(), v.residual(), c.hiddenSize(), eps,
                DType.BFLOAT16, stream);
        end(timer);
    }
}
