package dev.ar4j.examples.llama.engine;

import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.examples.llama.model.TensorParallelLayout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Causal grouped-query attention of one prefill chunk on tensor cores, the sequence of
 * transformers' {@code eager_attention_forward} in bf16:
 *
 * <pre>
 * S_h = Q_h · K_gᵀ                     cublasGemmBatchedEx, one product per query head h of the pass
 *                                      (g = h / (heads / kv_heads)); bf16 out, fp32 accumulation
 * P_h = softmax(bf16(S_h · scale) + causal mask) as bf16     ar4j_llama_prefill_softmax, in place
 * O_h = P_h · V_g                      cublasGemmBatchedEx, straight into the attention output rows
 * </pre>
 *
 * for {@code n} query rows at positions {@code start .. start + n - 1} (read in place from the
 * fused QKV output, after RoPE) against KV-cache rows {@code 0 .. start + n - 1} (this chunk's
 * keys appended before). The matrices' addresses are arrays of device pointers filled once here,
 * per layer and sequence of the batch (each its own cache), so the calls allocate nothing and are
 * capturable; only the sizes change per chunk.
 *
 * <p>The scores take {@code chunk × context × heads × 2} bytes (row stride: the context rounded up
 * to 8). When that is more than {@link #SCORE_BUDGET_BYTES}, the heads run in passes of a few KV
 * heads' query heads each, so the workspace is {@code chunk × context × headsPerPass × 2} bytes.
 * Owns its buffers.
 */
final class PrefillAttention implements AutoCloseable {

    /**
     * The system property that chooses prefill chunks' attention: {@code fused} (the default where the head
     * dimension is 64 or 128: one tensor-core kernel, {@code ar4j_llama_prefill_attention}, no scores in memory;
     * 1x H100, llama3-8b, prefill of 4096 tokens: attention 33.2 ms against 59.1) or {@code gemm} (this class's
     * batched GEMMs around a softmax kernel, the one form for other head dimensions).
     */
    static final String PROPERTY = "ar4j.llama.prefill.attention";

    /**
     * Whether a prefill chunk's attention runs in one kernel (no scores in memory, no instance of this class).
     *
     * @param layout   the split (its head dimension)
     * @param property the {@link #PROPERTY} value, {@code null} for the default ({@code fused})
     * @return true for the one kernel: asked for or by default, and the head dimension is 64 or 128
     * @throws IllegalArgumentException for another property value, saying which are accepted
     */
    static boolean inOneKernel(TensorParallelLayout layout, String property) {
        boolean fused = switch (property == null ? "fused" : property) {
            case "gemm" -> false;
            case "fused" -> true;
            default -> throw new IllegalArgumentException("-D" + PROPERTY + "=" + property + ": expected fused "
                    + "(one tensor-core kernel, for head dimensions 64 and 128; the default) or gemm (batched GEMMs "
                    + "around a softmax kernel)");
        };
        int hd = layout.config().headDim();
        return fused && (hd == 64 || hd == 128);
    }

    /** {@link #inOneKernel(TensorParallelLayout, String)} with the property of this JVM. */
    static boolean inOneKernel(TensorParallelLayout layout) {
        return inOneKernel(layout, System.getProperty(PROPERTY));
    }

    /** The most bytes of scores held at once (heads are done in passes above it): 1 GiB. */
    static final long SCORE_BUDGET_BYTES = 1L << 30;

    private final Cublas cublas;
    private final LlamaKernels kernels;
    private final int heads;
    private final int headDim;
    private final int headsPerPass;
    private final int qkvWidth;
    private final int kvWidth;
    private final int queryWidth;
    private final long rowStride;
    private final long headStride;
    private final DeviceBuffer scores;
    private final DeviceBuffer pointers;
    private final long layerPointerBytes;
    private final int layers;

    /**
     * The scores' and pointers' bytes for these sizes, as the constructor allocates them.
     *
     * @param layout  the split
     * @param chunk   the most rows of one chunk
     * @param context KV-cache positions
     * @return bytes of device memory
     */
    static long bytes(TensorParallelLayout layout, int chunk, int context, int sequences) {
        int perPass = headsPerPass(layout, chunk, context);
        return 2L * chunk * stride(context) * perPass
                + 6L * 8 * layout.headsPerRank() * layout.config().numHiddenLayers() * sequences;
    }

    private static long stride(int context) {
        return (context + 7L) / 8 * 8;
    }

    /** Query heads per pass: the whole rank's when they fit the budget, else whole KV groups. */
    static int headsPerPass(TensorParallelLayout layout, int chunk, int context) {
        int kvHeads = layout.kvHeadsPerRank();
        int group = layout.headsPerRank() / kvHeads;
        long perKvHead = 2L * chunk * stride(context) * group;
        int kvPerPass = kvHeads;
        while (kvPerPass > 1 && (kvPerPass * perKvHead > SCORE_BUDGET_BYTES || kvHeads % kvPerPass != 0)) {
            kvPerPass--;
        }
        return kvPerPass * group;
    }

    /**
     * Fills the pointer arrays of every layer.
     *
     * @param cublas     the rank's handle (its stream)
     * @param kernels    the rank's kernels (the same stream)
     * @param layout     the split
     * @param cache      the KV cache (of every sequence of the batch)
     * @param qkv        the fused QKV output's address (rows of {@code qkvWidthPerRank})
     * @param attention  the attention output's address (rows of {@code queryWidthPerRank})
     * @param chunk      the most rows of one chunk
     */
    PrefillAttention(Cublas cublas, LlamaKernels kernels, TensorParallelLayout layout, KvCache cache, long qkv,
                     long attention, int chunk) {
        this.cublas = cublas;
        this.kernels = kernels;
        this.heads = layout.headsPerRank();
        this.headDim = layout.config().headDim();
        this.qkvWidth = layout.qkvWidthPerRank();
        this.kvWidth = layout.keyValueWidthPerRank();
        this.queryWidth = layout.queryWidthPerRank();
        this.headsPerPass = headsPerPass(layout, chunk, cache.positions());
        this.rowStride = stride(cache.positions());
        this.headStride = rowStride * chunk;
        int group = heads / layout.kvHeadsPerRank();
        int layers = layout.config().numHiddenLayers();
        this.layerPointerBytes = 6L * 8 * heads;
        this.layers = layers;
        int sequences = cache.sequences();
        DeviceBuffer s = DeviceBuffer.allocate(2L * headStride * headsPerPass);
        DeviceBuffer p = null;
        try {
            p = DeviceBuffer.allocate(layerPointerBytes * layers * sequences);
            try (Arena a = Arena.ofConfined()) {
                MemorySegment host = a.allocate(layerPointerBytes * layers * sequences, 8);
                for (int ls = 0; ls < layers * sequences; ls++) {
                    int l = ls % layers;
                    int sequence = ls / layers;
                    long base = ls * layerPointerBytes;
                    for (int h = 0; h < heads; h++) {
                        long g = h / group;
                        long sh = s.address() + 2L * headStride * (h % headsPerPass);
                        long[] row = {
                            cache.keys(l, sequence) + 2L * g * headDim,       // A of S = Q·Kᵀ
                            qkv + 2L * h * headDim,                           // B
                            sh,                                                // C
                            cache.values(l, sequence) + 2L * g * headDim,     // A of O = P·V
                            sh,                                                // B
                            attention + 2L * h * headDim,                     // C
                        };
                        for (int i = 0; i < 6; i++) {
                            host.set(ValueLayout.JAVA_LONG, base + 8L * (i * heads + h), row[i]);
                        }
                    }
                }
                p.copyFrom(host);
            }
        } catch (RuntimeException e) {
            s.close();
            if (p != null) {
                p.close();
            }
            throw e;
        }
        this.scores = s;
        this.pointers = p;
    }

    /**
     * Enqueues one layer's attention for {@code n} rows of one sequence at positions {@code start .. start + n - 1}.
     *
     * @param layer    the layer
     * @param sequence the sequence of the batch (its cache)
     * @param n        query rows, at most the chunk
     * @param start    the first row's position
     * @param scale    HF's scaling ({@code head_dim ** -0.5})
     */
    void enqueue(int layer, int sequence, int n, int start, float scale) {
        int keys = start + n;
        long base = pointers.address() + ((long) sequence * layers + layer) * layerPointerBytes;
        for (int h0 = 0; h0 < heads; h0 += headsPerPass) {
            long off = 8L * h0;
            // Sᵀ (keys x n, column-major, ld rowStride) = K_g (hd x keys col-major, transposed) · Q_hᵀ (hd x n).
            cublas.gemmBatched(true, keys, n, headDim, base + off, kvWidth, base + 8L * heads + off, qkvWidth,
                    base + 16L * heads + off, (int) rowStride, headsPerPass);
            kernels.prefillSoftmax(scores.address(), rowStride, headStride, n, headsPerPass, start, scale);
            // Oᵀ (hd x n, ld queryWidth) = V_gᵀ (hd x keys, ld kvWidth) · Pᵀ (keys x n, ld rowStride).
            cublas.gemmBatched(false, headDim, n, keys, base + 24L * heads + off, kvWidth, base + 32L * heads + off,
                    (int) rowStride, base + 40L * heads + off, queryWidth, headsPerPass);
        }
    }

    @Override
    public void close() {
        try {
            scores.close();
        } finally {
            pointers.close();
        }
    }
}
