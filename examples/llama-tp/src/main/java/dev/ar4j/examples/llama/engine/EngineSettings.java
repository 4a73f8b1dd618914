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
 */
public record EngineSettings(TensorParallelLayout layout, int context, int prefillMax, int draft, boolean keepLogits,
                             boolean pdl, long seed) {

    /**
     * Checks the sizes.
     *
     * @throws IllegalArgumentException if a size is out of range
     */
    public EngineSettings {
        if (context < 1 || prefillMax < 1 || draft < 0 || prefillMax > context || draft > context) {
            throw new IllegalArgumentException("context " + context + ", prefill " + prefillMax + ", draft " + draft
                    + ": need 1 <= prefill <= context and 0 <= draft <= context");
        }
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
