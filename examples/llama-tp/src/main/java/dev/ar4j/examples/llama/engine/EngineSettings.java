package dev.ar4j.examples.llama.engine;

import dev.ar4j.examples.llama.model.TensorParallelLayout;

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
 * @param prefillChunk the most prompt tokens of one prefill step: a longer prompt runs in chunks of about equal
 *                   size, each appending to the KV cache and attending every earlier position, so that the
 *                   activations (and the attention's scores) are sized by the chunk, not by the prompt
 * @param sampling   how each step chooses its tokens: {@link Sampling#GREEDY} (the argmax) or a draw on the GPU
 * @param batch      the sequences decoded (and verified) at once, 1 to {@link #MAX_BATCH}: each has its own KV cache
 *                   of {@code context} positions, its own prefill and its own positions; the decode step runs one
 *                   token of every sequence, the verify step {@code draft} tokens of every sequence
 */
public record EngineSettings(TensorParallelLayout layout, int context, int prefillMax, int draft, boolean keepLogits,
                             boolean pdl, long seed, boolean shardAlone, int prefillChunk, Sampling sampling,
                             int batch) {

    /** The most sequences of one batch. */
    public static final int MAX_BATCH = 256;

    /**
     * The default {@link #prefillChunk}: 8192 tokens. Measured on one H100 with llama3-8b's shapes (RESULTS.md), a
     * prompt of 8192 tokens took 268 / 261 / 258 / 255 ms in chunks of 1024 / 2048 / 4096 / 8192: a longer chunk
     * gives the prefill attention more blocks to run at once and each product more rows, while its activations
     * grow to about 108 KiB a token at TP 1 (0.9 GiB at 8192 tokens). A smaller chunk bounds that memory
     * (the eager-attention path, for head dimensions other than 64 and 128, also bounds its scores by a budget).
     */
    public static final int DEFAULT_PREFILL_CHUNK = 8192;

    /**
     * The prompt rows whose logits an engine that keeps logits copies out (the last ones): what the
     * references of {@code reference/make_reference.py} record (format 2).
     */
    public static final int KEPT_PROMPT_LOGIT_ROWS = 8;

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
        if (prefillChunk < 2 * KEPT_PROMPT_LOGIT_ROWS) {
            throw new IllegalArgumentException("a prefill chunk of " + prefillChunk + " tokens; need at least "
                    + 2 * KEPT_PROMPT_LOGIT_ROWS);
        }
        if (sampling == null) {
            throw new IllegalArgumentException("no sampling settings: give Sampling.GREEDY for the argmax");
        }
        if (!sampling.greedy() && draft > 0) {
            throw new IllegalArgumentException("a verify step of " + draft + " draft tokens with " + sampling.describe()
                    + ": the verify step checks drafts against the greedy choice; sampled drafts need rejection "
                    + "sampling, which this engine does not do (use draft 0)");
        }
        if (batch < 1 || batch > MAX_BATCH) {
            throw new IllegalArgumentException("a batch of " + batch + " sequences; need 1.." + MAX_BATCH);
        }
        if (shardAlone && layout.tp() < 2) {
            throw new IllegalArgumentException("a shard of a split over " + layout.tp()
                    + " rank is the whole model: shardAlone needs a layout of at least 2 ranks");
        }
    }

    /**
     * Settings of one sequence at a time.
     *
     * @param layout       the model and its split
     * @param context      KV-cache positions
     * @param prefillMax   the longest prompt
     * @param draft        draft tokens of the verify step
     * @param keepLogits   copy the logits out
     * @param pdl          programmatic dependent launch
     * @param seed         the synthetic weights' seed
     * @param shardAlone   rank 0's shard alone
     * @param prefillChunk the most prompt tokens of one prefill step
     * @param sampling     greedy or a draw
     */
    public EngineSettings(TensorParallelLayout layout, int context, int prefillMax, int draft, boolean keepLogits,
                          boolean pdl, long seed, boolean shardAlone, int prefillChunk, Sampling sampling) {
        this(layout, context, prefillMax, draft, keepLogits, pdl, seed, shardAlone, prefillChunk, sampling, 1);
    }

    /**
     * These settings for a batch of {@code sequences}.
     *
     * @param sequences 1 to {@link #MAX_BATCH}
     * @return the settings with that batch
     */
    public EngineSettings withBatch(int sequences) {
        return new EngineSettings(layout, context, prefillMax, draft, keepLogits, pdl, seed, shardAlone, prefillChunk,
                sampling, sequences);
    }

    /**
     * Tokens of the decode step ({@link #batch}) or of the verify step ({@code batch * draft}).
     *
     * @param verify the verify step
     * @return its tokens
     */
    public int stepTokens(boolean verify) {
        return batch * (verify ? draft : 1);
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
        this(layout, context, prefillMax, draft, keepLogits, pdl, seed, false, DEFAULT_PREFILL_CHUNK, Sampling.GREEDY);
    }

    /**
     * Settings with the default prefill chunk.
     *
     * @param layout     the model and its split
     * @param context    KV-cache positions
     * @param prefillMax the longest prompt
     * @param draft      draft tokens of the verify step
     * @param keepLogits copy the logits out
     * @param pdl        programmatic dependent launch
     * @param seed       the synthetic weights' seed
     * @param shardAlone rank 0's shard alone
     */
    public EngineSettings(TensorParallelLayout layout, int context, int prefillMax, int draft, boolean keepLogits,
                          boolean pdl, long seed, boolean shardAlone) {
        this(layout, context, prefillMax, draft, keepLogits, pdl, seed, shardAlone, DEFAULT_PREFILL_CHUNK,
                Sampling.GREEDY);
    }

    /**
     * Greedy settings with a chosen prefill chunk.
     *
     * @param layout       the model and its split
     * @param context      KV-cache positions
     * @param prefillMax   the longest prompt
     * @param draft        draft tokens of the verify step
     * @param keepLogits   copy the logits out
     * @param pdl          programmatic dependent launch
     * @param seed         the synthetic weights' seed
     * @param shardAlone   rank 0's shard alone
     * @param prefillChunk the most prompt tokens of one prefill step
     */
    public EngineSettings(TensorParallelLayout layout, int context, int prefillMax, int draft, boolean keepLogits,
                          boolean pdl, long seed, boolean shardAlone, int prefillChunk) {
        this(layout, context, prefillMax, draft, keepLogits, pdl, seed, shardAlone, prefillChunk, Sampling.GREEDY);
    }

    /**
     * The sizes of the prefill chunks of a prompt: {@code ceil(prompt / prefillChunk)} chunks of about equal size
     * (the first ones one token longer), so that each holds at least {@link #KEPT_PROMPT_LOGIT_ROWS} tokens when
     * there are several (the last chunk yields the kept prompt logits).
     *
     * @param prompt the prompt's length, at least 1
     * @return the chunks' lengths in order
     */
    public int[] prefillChunks(int prompt) {
        int n = (prompt + prefillChunk - 1) / prefillChunk;
        int[] sizes = new int[n];
        for (int i = 0; i < n; i++) {
            sizes[i] = prompt / n + (i < prompt % n ? 1 : 0);
        }
        return sizes;
    }

    /**
     * The most rows of logits one step computes: the decode step's batch, the verify step's batch times its draft,
     * the prompt's last {@link #KEPT_PROMPT_LOGIT_ROWS} when logits are kept, and 1.
     *
     * @return rows
     */
    public int logitRows() {
        return Math.max(Math.max(batch, stepTokens(true)), keepLogits ? Math.min(prefillMax, KEPT_PROMPT_LOGIT_ROWS) : 1);
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
     * @return {@code max(min(prefillMax, prefillChunk), batch * draft, batch)}
     */
    public int maxTokens() {
        return Math.max(batch, Math.max(Math.min(prefillMax, prefillChunk), stepTokens(true)));
    }

    /**
     * The communicator's staging buffer this engine needs, so that the largest all-reduce of a step
     * fits ar4j's kernels (ranks sharing a GPU have no NCCL to fall back on): every all-reduce of the
     * longest step (hidden rows of a prefill chunk), and the logits of {@link #logitRows()} rows.
     *
     * @return bytes, at least ar4j's default and a multiple of 1 MiB
     */
    public long stagingBytes() {
        long hiddenRows = 2L * maxTokens() * layout.config().hiddenSize();
        long logits = 2L * logitRows() * layout.paddedVocab();
        long need = Math.max(hiddenRows, logits);
        long mib = 1L << 20;
        return Math.max(dev.ar4j.Communicator.DEFAULT_STAGING_BYTES, (need + mib - 1) / mib * mib);
    }
}
