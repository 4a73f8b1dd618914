package dev.ar4j.examples.llama.engine;

import dev.ar4j.examples.llama.kernels.bindings.kernels_h;

import java.lang.foreign.MemorySegment;

/**
 * The example's kernels (see {@code native/include/ar4j_llama/kernels.h}) for one rank: every
 * call is enqueued on this rank's stream, with its PDL setting and its device status word, and a
 * non-zero return becomes an {@link EngineException} naming the call and the code. Addresses are
 * device addresses of the rank's GPU.
 */
final class LlamaKernels {

    static {
        // Every use of this class, its static helpers too, reaches the library: load it first.
        LlamaKernelsLibrary.load();
    }

    /** {@code AR4J_LLAMA_DTYPE_BFLOAT16}. */
    public static final int BF16 = 2;

    private final MemorySegment stream;
    private final MemorySegment status;
    private final int pdl;

    /**
     * Binds the kernels to a rank.
     *
     * @param streamHandle the {@code cudaStream_t}
     * @param statusWord   the device address of an int32 the kernels set on a device-side error (0 = none)
     * @param pdl          whether to launch with programmatic dependent launch
     */
    public LlamaKernels(long streamHandle, long statusWord, boolean pdl) {
        LlamaKernelsLibrary.load();
        this.stream = MemorySegment.ofAddress(streamHandle);
        this.status = MemorySegment.ofAddress(statusWord);
        this.pdl = pdl ? 1 : 0;
    }

    private static MemorySegment at(long address) {
        return MemorySegment.ofAddress(address);
    }

    /**
     * Throws for a non-zero kernel status.
     *
     * @param code the returned code
     * @param call the call, for the message
     * @throws EngineException naming the call and the code
     */
    public static void check(int code, String call) {
        if (code != 0) {
            throw new EngineException(call + " failed: " + errorString(code) + " (" + code + ")");
        }
    }

    /**
     * The library's name for a code.
     *
     * @param code a status or {@code cudaError_t}
     * @return its name
     */
    public static String errorString(int code) {
        MemorySegment s = kernels_h.ar4j_llama_error_string(code);
        return s.equals(MemorySegment.NULL) ? "unknown status" : s.reinterpret(256).getString(0);
    }

    /** Vocabulary-parallel embedding gather of {@code n} ids into {@code n x hidden} rows. */
    void embedding(long ids, int n, long table, int vocabStart, int vocabEnd, int vocab, int hidden, long out) {
        check(kernels_h.ar4j_llama_embedding(at(ids), n, at(table), vocabStart, vocabEnd, vocab, hidden, at(out), status,
                pdl, stream), "ar4j_llama_embedding");
    }

    /** Rotary embedding in place on q and k, positions from device memory. */
    void rope(long q, long qStride, long k, long kStride, int n, int heads, int kvHeads, int headDim, long invFreq,
              long positions, int maxPositions) {
        check(kernels_h.ar4j_llama_rope(at(q), qStride, at(k), kStride, n, heads, kvHeads, headDim, at(invFreq), 1.0f,
                at(positions), 0, maxPositions, status, pdl, stream), "ar4j_llama_rope");
    }

    /**
     * RoPE on q in place and on k into one layer's key cache, v copied to its value cache, positions from device
     * memory, for {@code sequences} equal runs of the n tokens, run s writing into the caches at
     * {@code kCache + s * cacheSequenceStride} (elements; {@code ar4j_llama_rope_kv_append_batched}; one sequence:
     * {@code ar4j_llama_rope_kv_append}).
     */
    void ropeKvAppendBatched(long q, long qStride, long k, long kStride, long v, long vStride, int n, int sequences,
                             int heads, int kvHeads, int headDim, long invFreq, long kCache, long vCache,
                             long cacheSequenceStride, int maxPositions, long positions) {
        check(kernels_h.ar4j_llama_rope_kv_append_batched(at(q), qStride, at(k), kStride, at(v), vStride, n, sequences,
                heads, kvHeads, headDim, at(invFreq), 1.0f, at(kCache), at(vCache), cacheSequenceStride, maxPositions,
                at(positions), 0, status, pdl, stream), "ar4j_llama_rope_kv_append_batched");
    }

    /**
     * Causal GQA attention of n query tokens over one layer's caches, for {@code sequences} equal runs of the tokens,
     * run s over the caches at {@code kCache + s * cacheSequenceStride} (elements; {@code ar4j_llama_attention_batched};
     * one sequence: {@code ar4j_llama_attention}).
     */
    void attentionBatched(long q, long qStride, long kCache, long vCache, long cacheSequenceStride, int n,
                          int sequences, int heads, int kvHeads, int headDim, int maxPositions, long positions,
                          float scale, long out, long outStride, int splits, long workspace, long workspaceBytes) {
        check(kernels_h.ar4j_llama_attention_batched(at(q), qStride, at(kCache), at(vCache), cacheSequenceStride, n,
                sequences, heads, kvHeads, headDim, maxPositions, at(positions), 0, scale, at(out), outStride, splits,
                at(workspace), workspaceBytes, status, pdl, stream), "ar4j_llama_attention_batched");
    }

    /**
     * {@link #ropeKvAppendBatched} then {@link #attentionBatched} in the attention's two kernels
     * ({@code ar4j_llama_rope_attention_batched}): the same out and caches, q, k and v left as they are. For steps
     * that {@link #ropeAttentionApplies} to.
     */
    void ropeAttentionBatched(long q, long qStride, long k, long kStride, long v, long vStride, long invFreq,
                              long kCache, long vCache, long cacheSequenceStride, int n, int sequences, int heads,
                              int kvHeads, int headDim, int maxPositions, long positions, float scale, long out,
                              long outStride, int splits, long workspace, long workspaceBytes) {
        check(kernels_h.ar4j_llama_rope_attention_batched(at(q), qStride, at(k), kStride, at(v), vStride, at(invFreq),
                1.0f, at(kCache), at(vCache), cacheSequenceStride, n, sequences, heads, kvHeads, headDim, maxPositions,
                at(positions), 0, scale, at(out), outStride, splits, at(workspace), workspaceBytes, status, pdl, stream),
                "ar4j_llama_rope_attention_batched");
    }

    /**
     * Whether {@link #ropeAttentionBatched} takes a step of {@code tokensPerSequence} tokens per sequence and
     * {@code group} query heads per KV head: at most {@code AR4J_LLAMA_MAX_ATTENTION_STORED_TOKENS} tokens and
     * {@code AR4J_LLAMA_MAX_ROPE_ATTENTION_ROWS} rows (tokens × group) per sequence.
     */
    static boolean ropeAttentionApplies(int tokensPerSequence, int group) {
        return tokensPerSequence >= 1 && tokensPerSequence <= MAX_ATTENTION_STORED_TOKENS
                && (long) tokensPerSequence * group <= kernels_h.AR4J_LLAMA_MAX_ROPE_ATTENTION_ROWS();
    }

    /**
     * Prefill attention's softmax in place on the scores of {@code n} rows of {@code heads} heads
     * ({@code ar4j_llama_prefill_softmax}): row i at position {@code startPos + i}, keys 0 ..
     * {@code startPos + n - 1}.
     */
    void prefillSoftmax(long scores, long rowStride, long headStride, int n, int heads, int startPos, float scale) {
        check(kernels_h.ar4j_llama_prefill_softmax(at(scores), rowStride, headStride, n, heads, startPos, scale, pdl,
                stream), "ar4j_llama_prefill_softmax");
    }

    /**
     * Causal attention of a prefill chunk in one kernel ({@code ar4j_llama_prefill_attention}): {@code n} query
     * rows at positions {@code start .. start + n - 1} against the cache rows {@code 0 .. start + n - 1}.
     */
    void prefillAttention(long q, long qStride, long kCache, long vCache, long kvStride, long out, long outStride,
                          int n, int start, int heads, int kvHeads, int headDim, float scale) {
        check(kernels_h.ar4j_llama_prefill_attention(at(q), qStride, at(kCache), at(vCache), kvStride, at(out),
                outStride, n, start, heads, kvHeads, headDim, scale, pdl, stream), "ar4j_llama_prefill_attention");
    }

    /** {@code AR4J_LLAMA_MAX_ATTENTION_STORED_TOKENS}: above it, a step's attention recomputes its scores. */
    static final int MAX_ATTENTION_STORED_TOKENS = kernels_h.AR4J_LLAMA_MAX_ATTENTION_STORED_TOKENS();

    /**
     * The current device's free and total memory ({@code ar4j_llama_device_memory}).
     *
     * @return {free, total} bytes
     */
    static long[] deviceMemory() {
        LlamaKernelsLibrary.load();
        try (java.lang.foreign.Arena a = java.lang.foreign.Arena.ofConfined()) {
            MemorySegment free = a.allocate(java.lang.foreign.ValueLayout.JAVA_LONG);
            MemorySegment total = a.allocate(java.lang.foreign.ValueLayout.JAVA_LONG);
            check(kernels_h.ar4j_llama_device_memory(free, total), "ar4j_llama_device_memory");
            return new long[] {free.get(java.lang.foreign.ValueLayout.JAVA_LONG, 0),
                    total.get(java.lang.foreign.ValueLayout.JAVA_LONG, 0)};
        }
    }

    /** {@code AR4J_LLAMA_MAX_LINEAR_ROWS}: the most rows of X that {@link #linearRows} takes. */
    static final int MAX_LINEAR_ROWS = kernels_h.AR4J_LLAMA_MAX_LINEAR_ROWS();

    /**
     * Whether {@link #linearRows} takes these arguments: at most {@link #MAX_LINEAR_ROWS} rows,
     * {@code k} and X's row stride multiples of 8, W and X 16-byte aligned.
     */
    static boolean linearRowsApply(long w, long x, int t, int k, long ldx) {
        return t >= 1 && t <= MAX_LINEAR_ROWS && k % 8 == 0 && ldx % 8 == 0 && (w & 15) == 0 && (x & 15) == 0;
    }

    /**
     * Chooses the kernel of every later rows product in the process
     * ({@code ar4j_llama_set_linear_rows_kernel}; both give the same bits).
     *
     * @param kernel {@code AR4J_LLAMA_LINEAR_ROWS_AUTO}, {@code _REGISTERS} or {@code _RING}
     * @throws EngineException for the ring on a device older than sm_90
     */
    static void chooseLinearRowsKernel(int kernel) {
        check(kernels_h.ar4j_llama_set_linear_rows_kernel(kernel), "ar4j_llama_set_linear_rows_kernel(" + kernel + ")");
    }

    /** {@code Y[t, n] = X[t, k] · W[n, k]ᵀ} for a few rows ({@code ar4j_llama_linear_rows}). */
    void linearRows(long w, long x, long ldx, long y, long ldy, int t, int n, int k) {
        check(kernels_h.ar4j_llama_linear_rows(at(w), at(x), ldx, at(y), ldy, t, n, k, pdl, stream),
                "ar4j_llama_linear_rows");
    }

    /**
     * The gate/up projection with SwiGLU in its epilogue ({@code ar4j_llama_linear_rows_silu_mul}):
     * {@code out[t, intermediate] = silu(X · Wgateᵀ) * (X · Wupᵀ)}, W the fused gate_up weight.
     */
    void linearRowsSiluMul(long wGateUp, long x, long ldx, long out, long ldOut, int t, int intermediate, int k) {
        check(kernels_h.ar4j_llama_linear_rows_silu_mul(at(wGateUp), at(x), ldx, at(out), ldOut, t, intermediate, k, 0,
                pdl, stream), "ar4j_llama_linear_rows_silu_mul");
    }

    /**
     * Bytes of workspace {@link #linearRowsArgmax} needs.
     *
     * @param rows rows of X (1 to {@link #MAX_LINEAR_ROWS})
     * @param n    output features
     * @return bytes (0 when an argument is out of range)
     */
    static long linearRowsArgmaxWorkspaceBytes(int rows, int n) {
        return kernels_h.ar4j_llama_linear_rows_argmax_workspace_bytes(rows, n);
    }

    /**
     * An LM head with the greedy choice in its epilogue ({@code ar4j_llama_linear_rows_argmax}): the logits
     * {@code X · Wᵀ} into {@code logits}, and per row the index (plus {@code indexOffset}) and value of the
     * largest of the first {@code argmaxCols}, as {@link #argmax} would give them. The workspace was zeroed once.
     */
    void linearRowsArgmax(long w, long x, long ldx, long logits, long ldLogits, int t, int n, int k, int argmaxCols,
                          int indexOffset, long outIndex, long outValue, long workspace, long workspaceBytes) {
        check(kernels_h.ar4j_llama_linear_rows_argmax(at(w), at(x), ldx, at(logits), ldLogits, t, n, k, argmaxCols,
                indexOffset, at(outIndex), at(outValue), at(workspace), workspaceBytes, pdl, stream),
                "ar4j_llama_linear_rows_argmax");
    }

    /** SwiGLU: {@code out = silu(gate) * up}, rows x cols. */
    void siluMul(long gate, long gateStride, long up, long upStride, long out, long outStride, int rows, int cols) {
        check(kernels_h.ar4j_llama_silu_mul(at(gate), gateStride, at(up), upStride, at(out), outStride, rows, cols, pdl,
                stream), "ar4j_llama_silu_mul");
    }

    /** Row-wise argmax of bf16 logits. */
    void argmax(long logits, long rowStride, int rows, int cols, long outIndex, long outValue) {
        argmax(logits, rowStride, rows, cols, 0, outIndex, outValue);
    }

    /** Row-wise argmax of bf16 logits, the indices counted from {@code indexOffset} (a vocabulary shard's first id). */
    void argmax(long logits, long rowStride, int rows, int cols, int indexOffset, long outIndex, long outValue) {
        check(kernels_h.ar4j_llama_argmax(BF16, at(logits), rowStride, rows, cols, indexOffset, at(outIndex),
                at(outValue), pdl, stream), "ar4j_llama_argmax");
    }

    /** The largest vocabulary whose token ids the argmax exchange carries exactly (fp32). */
    static final int MAX_EXCHANGED_VOCAB = kernels_h.AR4J_LLAMA_MAX_EXCHANGED_VOCAB();

    /**
     * The fp32 elements of the argmax exchange buffer for {@code rows} rows and {@code ranks} ranks (a multiple of 4;
     * 0 when an argument is out of range): what {@link #argmaxPack}, the SUM all-reduce and {@link #argmaxPick} use.
     */
    static long argmaxExchangeFloats(int rows, int ranks) {
        return kernels_h.ar4j_llama_argmax_exchange_floats(rows, ranks);
    }

    /**
     * This rank's shard argmax ({@code index}, {@code value} per row) into its slot of the exchange buffer, zeros
     * into the other ranks' slots ({@code ar4j_llama_argmax_pack}).
     */
    void argmaxPack(long index, long value, int rows, int ranks, int rank, int vocab, long exchange) {
        check(kernels_h.ar4j_llama_argmax_pack(at(index), at(value), rows, ranks, rank, vocab, at(exchange), pdl,
                stream), "ar4j_llama_argmax_pack");
    }

    /**
     * Per row, the best of the ranks' pairs in the all-reduced exchange buffer, as torch.argmax over the vocabulary;
     * a pair a failed all-reduce left NaN sets the status word (the step then throws) and gives no token.
     */
    void argmaxPick(long exchange, int rows, int ranks, long outIndex, long outValue) {
        check(kernels_h.ar4j_llama_argmax_pick(at(exchange), rows, ranks, at(outIndex), at(outValue), status, pdl,
                stream), "ar4j_llama_argmax_pick");
    }

    /** Bytes of the sampling kernel's state (its step counter and completion word). */
    static final int SAMPLE_STATE_BYTES = kernels_h.AR4J_LLAMA_SAMPLE_STATE_BYTES();

    /**
     * One token per row of bf16 logits drawn from {@code softmax(logits / temperature)} cut to the top-k and the
     * top-p nucleus ({@code ar4j_llama_sample}), written to {@code outIndex} as {@link #argmax} writes it; the
     * state's step counter advances once per launch. A row without a finite logit sets the status word.
     */
    void sample(long logits, long rowStride, int rows, int cols, Sampling sampling, long state, long outIndex) {
        check(kernels_h.ar4j_llama_sample(at(logits), rowStride, rows, cols, (float) sampling.temperature(),
                sampling.topK(), (float) sampling.topP(), sampling.seed(), at(state), 0, at(outIndex), status, pdl,
                stream), "ar4j_llama_sample");
    }

    /** Seeded random bf16 block of a global tensor. */
    void fillRandom(long dst, long rows, long cols, long ld, long rowOffset, long colOffset, long globalCols, long seed,
                    float std) {
        check(kernels_h.ar4j_llama_fill_random_bf16(at(dst), rows, cols, ld, rowOffset, colOffset, globalCols, seed, std,
                stream), "ar4j_llama_fill_random_bf16");
    }

    /** {@code count} bf16 copies of {@code value}. */
    void fill(long dst, long count, float value) {
        check(kernels_h.ar4j_llama_fill_bf16(at(dst), count, value, stream), "ar4j_llama_fill_bf16");
    }

    /**
     * The key-range splits for attention of n tokens.
     *
     * @param n          query tokens
     * @param heads      query heads of the rank
     * @param kvHeads    key/value heads of the rank
     * @param maxContext the longest context
     * @param smCount    the GPU's multiprocessors
     * @return the splits, 1 to {@code AR4J_LLAMA_MAX_SPLITS}
     */
    public static int attentionSplits(int n, int heads, int kvHeads, int maxContext, int smCount) {
        return kernels_h.ar4j_llama_attention_splits(n, heads, kvHeads, maxContext, smCount);
    }

    /**
     * Bytes of workspace the attention needs (its scores for up to
     * {@code AR4J_LLAMA_MAX_ATTENTION_STORED_TOKENS} tokens grow with maxPositions).
     *
     * @param n            query tokens
     * @param heads        query heads of the rank
     * @param kvHeads      key/value heads of the rank
     * @param headDim      the head dimension
     * @param maxPositions the KV cache's positions
     * @param splits       the key-range splits
     * @return bytes (0 when an argument is out of range)
     */
    public static long attentionWorkspaceBytes(int n, int heads, int kvHeads, int headDim, int maxPositions,
                                               int splits) {
        return kernels_h.ar4j_llama_attention_workspace_bytes(n, heads, kvHeads, headDim, maxPositions, splits);
    }

    /** {@link #attentionSplits} for n tokens in {@code sequences} equal runs ({@link #attentionBatched}). */
    public static int attentionBatchedSplits(int n, int sequences, int heads, int kvHeads, int maxContext,
                                             int smCount) {
        return kernels_h.ar4j_llama_attention_batched_splits(n, sequences, heads, kvHeads, maxContext, smCount);
    }

    /** {@link #attentionWorkspaceBytes} for n tokens in {@code sequences} equal runs (0 when out of range). */
    public static long attentionBatchedWorkspaceBytes(int n, int sequences, int heads, int kvHeads, int headDim,
                                                      int maxPositions, int splits) {
        return kernels_h.ar4j_llama_attention_batched_workspace_bytes(n, sequences, heads, kvHeads, headDim,
                maxPositions, splits);
    }
}
