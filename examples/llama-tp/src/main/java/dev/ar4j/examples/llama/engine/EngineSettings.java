package dev.ar4j.examples.llama.engine;

import dev.ar4j.examples.llama.weights.TensorParallelLayout;

/**
 * How one rank's engine is set up.
 *
 * @param layout     the model and its split
 * @param context    KV-cache positions (the longest sequence)
 * @param prefillMax the longest prompt
 * @param draft      draft tokens of the verify step (0: no verify graph)
 * @param keepLogits copy every step's logits to host memory (for comparisons; costs a copy per step)
 * @param pdl        launch the example's kernels with programmatic dependent launch
 * @param seed       the synthetic weights' seed
 * @param shardAlone run rank 0's shard of the layout's split as the only rank (a communicator of world size 1):
 *                   the per-rank compute of a TP {@code layout.tp()} step, for benchmarks only (the LM head
 *                   fills only rank 0's vocabulary, so the greedy tokens mean nothing)
 */
public record EngineSettings(TensorParallelLayout layout, int context, int prefillMax, int draft, boolean keepLogits,
                             boolean pdl, long seed, boolean shardAlone) {

    /**
     * Checks the sizes.
     *
     * @throws IllegalArgumentException if a size is out of range, or a shard alone of a layout of one rank
     */
    public EngineSettings {
        if (context < 1 || prefillMax < 1 || draft < 0 || prefillMax > context || draft > context) {
            throw new IllegalArgumentException("context " + context + ", prefill " + prefillMax + ", draft " + draft
                    + ": need 1 <= prefill <= context and 0 <= draft <= context");
        }
        if (shardAlone && layout.tp() < 2) {
            throw new IllegalArgumentException("a shard of a split over " + layout.tp()
                    + " rank is the whole model: shardAlone needs a layout of at least 2 ranks");
        }
    }

    /**
     * Settings of an engine that runs its own rank of the layout's split (not a shard alone).
     *
     * @param layout     the model and its split
     * @param context    KV-cache positions
     * @param prefillMax the longest prompt
     * @param draft      draft tokens of the verify step
     * @param keepLogits copy every step's logits to host memory
     * @param pdl        programmatic dependent launch
     * @param seed       the synthetic weights' seed
     */
    public EngineSettings(TensorParallelLayout layout, int context, int prefillMax, int draft, boolean keepLogits,
                          boolean pdl, long seed) {
        this(layout, context, prefillMax, draft, keepLogits, pdl, seed, false);
    }

    /**
     * The world size of the communicator this engine runs on.
     *
     * @return 1 for a shard alone, else {@code layout.tp()}
     */
    public int worldSize() {
        return shardAlone ? 1 : layout.tp();
    }

    /**
     * The most tokens one step holds.
     *
     * @return {@code max(prefillMax, draft, 1)}
     */
    public int maxTokens() {
        return Math.max(1, Math.max(prefillMax, draft));
    }

    /**
     * The communicator's staging buffer this engine needs, so that the largest all-reduce of a step
     * fits ar4j's kernels (ranks sharing a GPU have no NCCL to fall back on): every all-reduce of the
     * longest step (hidden rows), and the logits of a decode or verify step (or of every prompt
     * position when logits are kept).
     *
     * @return bytes, at least ar4j's default and a multiple of 1 MiB
     */
    public long stagingBytes() {
        long hiddenRows = 2L * maxTokens() * layout.config().hiddenSize();
        long logitRows = keepLogits ? maxTokens() : Math.max(1, draft);
        long logits = 2L * logitRows * layout.paddedVocab();
        long need = Math.max(hiddenRows, logits);
        long mib = 1L << 20;
        return Math.max(dev.ar4j.Communicator.DEFAULT_STAGING_BYTES, (need + mib - 1) / mib * mib);
    }
}
