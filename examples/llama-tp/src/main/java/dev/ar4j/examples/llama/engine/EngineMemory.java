package dev.ar4j.examples.llama.engine;

import dev.ar4j.examples.llama.kernels.bindings.kernels_h;
import dev.ar4j.examples.llama.model.ShardPlan;
import dev.ar4j.examples.llama.model.TensorParallelLayout;

import java.util.Locale;

/**
 * What a rank's engine needs of the GPU's memory before it allocates any of it: the split-KV attention's workspace
 * for every step the settings allow, and the refusal of settings whose buffers cannot fit the free memory.
 */
public final class EngineMemory {

    /** cuBLAS's workspace per rank. */
    static final long CUBLAS_WORKSPACE = 32L << 20;

    private EngineMemory() {
    }

    /**
     * The split-KV attention's workspace for every step it serves: prefill chunks of up to
     * {@code AR4J_LLAMA_MAX_ATTENTION_STORED_TOKENS} tokens, decode and verify (longer chunks go
     * through {@link PrefillAttention}). Not monotonic in the tokens (scores are kept up to that many).
     */
    static long attentionWorkspaceBytes(EngineSettings s, int sm) {
        long ws = 0;
        int most = Math.max(Math.min(s.maxTokens(), LlamaKernels.MAX_ATTENTION_STORED_TOKENS), s.draft());
        for (int t = 1; t <= most; t++) {
            ws = Math.max(ws, attentionWorkspaceBytes(s, sm, t, 1));
        }
        ws = Math.max(ws, attentionWorkspaceBytes(s, sm, s.stepTokens(false), s.batch()));
        if (s.draft() > 0) {
            ws = Math.max(ws, attentionWorkspaceBytes(s, sm, s.stepTokens(true), s.batch()));
        }
        return ws;
    }

    /** The workspace of a step of {@code tokens} tokens in {@code sequences} equal runs. */
    private static long attentionWorkspaceBytes(EngineSettings s, int sm, int tokens, int sequences) {
        TensorParallelLayout layout = s.layout();
        int splits = LlamaKernels.attentionBatchedSplits(tokens, sequences, layout.headsPerRank(),
                layout.kvHeadsPerRank(), s.context(), sm);
        long b = LlamaKernels.attentionBatchedWorkspaceBytes(tokens, sequences, layout.headsPerRank(),
                layout.kvHeadsPerRank(), layout.config().headDim(), s.context(), splits);
        if (b == 0) {
            throw new EngineException("head_dim " + layout.config().headDim() + ": the attention kernels need a "
                    + "multiple of 8 up to " + kernels_h.AR4J_LLAMA_MAX_HEAD_DIM());
        }
        return b;
    }

    /** Room the CUDA context, cuBLAS's handle and the allocator's rounding may take besides the buffers. */
    static final long MEMORY_MARGIN = 512L << 20;

    /**
     * The bytes of a rank's buffers, by kind.
     *
     * @param weights  its shard of the weights
     * @param kvCache  its KV cache
     * @param work     the activations and the workspaces (split-KV attention, prefill scores, cuBLAS)
     */
    public record Plan(long weights, long kvCache, long work) {

        /**
         * The buffers' sum.
         *
         * @return bytes
         */
        public long total() {
            return weights + kvCache + work;
        }
    }

    /**
     * A rank's buffers and the GPU's memory in use.
     *
     * @param plan  the rank's buffers
     * @param inUse the GPU's memory in use (total minus free: all its processes, the CUDA contexts too)
     */
    public record Use(Plan plan, long inUse) {
    }

    /**
     * The buffers rank {@code rank} allocates for settings {@code s}, an attention workspace of {@code attentionWs}
     * and prefill attention in one kernel ({@code fusedPrefill}: no scores buffer) or not.
     */
    static Plan plan(EngineSettings s, long attentionWs, int rank, boolean fusedPrefill) {
        TensorParallelLayout layout = s.layout();
        int chunkRows = Math.min(s.prefillMax(), s.prefillChunk());
        long work = Activations.bytes(layout, s.maxTokens(), s.logitRows(), attentionWs) + CUBLAS_WORKSPACE
                + (chunkRows > LlamaKernels.MAX_ATTENTION_STORED_TOKENS && !fusedPrefill
                        ? PrefillAttention.bytes(layout, chunkRows, s.context(), s.batch()) : 0);
        return new Plan(ShardPlan.forRank(layout, rank).bf16Bytes(), KvCache.bytes(layout, s.context(), s.batch()), work);
    }

    /**
     * Refuses, before any allocation, settings whose buffers ({@link #plan}) cannot fit the GPU's free memory,
     * with {@link #MEMORY_MARGIN} besides.
     *
     * @return the plan, when it fits
     */
    static Plan checkFits(EngineSettings s, long attentionWs, int rank, boolean fusedPrefill) {
        Plan p = plan(s, attentionWs, rank, fusedPrefill);
        int chunkRows = Math.min(s.prefillMax(), s.prefillChunk());
        long need = p.total() + MEMORY_MARGIN;
        long[] mem = LlamaKernels.deviceMemory();
        if (need > mem[0]) {
            throw new EngineException(String.format(Locale.ROOT, "rank %d: the GPU has %.2f GiB free (of %.2f "
                    + "GiB) but this engine needs %.2f GiB: weights %.2f GiB, KV cache of --context %d x %d sequences "
                    + "%.2f GiB, "
                    + "activations and workspaces %.2f GiB (prefill chunk %d), margin %.2f GiB. Use a smaller --context, "
                    + "a larger --tp or a smaller prefill chunk (-Dar4j.llama.prefillChunk)", rank, gib(mem[0]),
                    gib(mem[1]), gib(need), gib(p.weights()), s.context(), s.batch(), gib(p.kvCache()), gib(p.work()),
                    chunkRows, gib(MEMORY_MARGIN)));
        }
        return p;
    }

    private static double gib(long bytes) {
        return bytes / (double) (1L << 30);
    }
}
