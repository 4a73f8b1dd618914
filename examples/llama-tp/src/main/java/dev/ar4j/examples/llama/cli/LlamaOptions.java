package dev.ar4j.examples.llama.cli;

import dev.ar4j.examples.llama.engine.EngineSettings;
import dev.ar4j.examples.llama.engine.Sampling;
import dev.ar4j.examples.llama.model.LlamaConfig;

import java.nio.file.Path;
import java.util.List;

/**
 * A parsed {@code ar4j-llama} command line ({@link LlamaCommand} makes it and checks what it can
 * without the model; {@link #checkAgainst} checks the rest once the config is known).
 *
 * @param model     {@code --model DIR}, or {@code null} with {@code --synthetic}
 * @param synthetic {@code --synthetic NAME}, or {@code null} with {@code --model}
 * @param tp        {@code --tp N}: ranks
 * @param mode      {@code --mode}
 * @param promptInput how the prompt was given ({@code --prompt}, {@code --prompt-ids}, {@code --prompt -} or not)
 * @param prompt    the prompt's token ids, or {@code null} until {@link #withPrompt} resolves them (text, or
 *                  standard input)
 * @param steps     {@code --steps}: the most new tokens ({@code --max-new-tokens}; generate) or timed replays per
 *                  step kind (bench)
 * @param draft     {@code --draft k}: draft tokens of a verify step (0: no verify step)
 * @param comms     {@code --comm}: one mode, or several in bench
 * @param shareGpu  {@code --share-gpu}: every rank on GPU 0 (ar4j without NCCL)
 * @param devices   {@code --devices}: the GPU of each rank in one JVM, or {@code null} for 0..tp-1
 * @param context   {@code --context}: KV-cache positions per sequence; 0 until {@link #forModel} resolves
 *                  the default ({@value #DEFAULT_CONTEXT}, or the model's {@code max_position_embeddings}
 *                  if smaller)
 * @param seed      {@code --seed}: the synthetic weights' seed
 * @param tpShardOf {@code --tp-shard-of N}: run rank 0's shard of a TP N split alone (world size 1; bench
 *                  only), or 0 for the whole model split over {@code tp} ranks
 * @param profile   {@code --profile}: in bench mode, also the time of each kind of kernel in one step
 * @param output    {@code --output}: how generate prints the answer; {@code null} in bench, and in generate until
 *                  {@link #withPrompt} picks the default
 * @param sampling  {@code --temperature}, {@code --top-k}, {@code --top-p} with {@code --seed}: how generate chooses
 *                  its tokens ({@link Sampling#GREEDY} by default and in bench)
 * @param batch     {@code --batch B}: sequences decoded at once (bench: B copies of the prompt; generate: B prompts,
 *                  greedy, without a verify step)
 * @param batchPrompts generate's B prompts ({@link #withBatchPrompts}), or {@code null}: one sequence, or bench
 */
public record LlamaOptions(Path model, String synthetic, int tp, RunMode mode, PromptInput promptInput, int[] prompt,
                           int steps, int draft, List<CommMode> comms, boolean shareGpu, int[] devices, int context,
                           long seed, int tpShardOf, boolean profile, AnswerFormat output, Sampling sampling,
                           int batch, int[][] batchPrompts) {

    /** The KV-cache positions when {@code --context} is not given (fewer if the model allows fewer). */
    public static final int DEFAULT_CONTEXT = 2048;

    /**
     * Copies the arrays and the list.
     */
    public LlamaOptions {
        if (tpShardOf != 0 && (tpShardOf < 2 || tp != 1 || mode != RunMode.BENCH)) {
            throw new IllegalArgumentException("--tp-shard-of " + tpShardOf + " with --tp " + tp + " in " + mode
                    + ": the shard of TP N (N >= 2) runs as one rank alone, in bench mode only");
        }
        if (profile && mode != RunMode.BENCH) {
            throw new IllegalArgumentException("--profile in " + mode + " mode: it profiles the steps of --mode bench");
        }
        if (output != null && mode != RunMode.GENERATE) {
            throw new IllegalArgumentException("--output in " + mode + " mode: it is how generate prints the answer");
        }
        if (sampling == null) {
            throw new IllegalArgumentException("no sampling settings: Sampling.GREEDY takes the most likely token");
        }
        if (!sampling.greedy() && (mode != RunMode.GENERATE || draft > 0)) {
            throw new IllegalArgumentException(sampling.describe() + " in " + mode + " mode with --draft " + draft
                    + ": sampling chooses generate's tokens, without a verify step");
        }
        if (batch < 1 || batch > EngineSettings.MAX_BATCH) {
            throw new IllegalArgumentException("--batch " + batch + ": a batch of 1.." + EngineSettings.MAX_BATCH
                    + " sequences");
        }
        if (batch > 1 && mode == RunMode.GENERATE && (draft > 0 || !sampling.greedy())) {
            throw new IllegalArgumentException("--batch " + batch + " in generate with " + (draft > 0 ? "--draft "
                    + draft : sampling.describe()) + ": a batch is generated greedily, without a verify step");
        }
        if (batchPrompts != null && (mode != RunMode.GENERATE || batchPrompts.length != batch)) {
            throw new IllegalArgumentException(batchPrompts.length + " prompts for --batch " + batch + " in " + mode
                    + " mode: generate takes one prompt per sequence of its batch");
        }
        prompt = prompt == null ? null : prompt.clone();
        batchPrompts = batchPrompts == null ? null : deepCopy(batchPrompts);
        devices = devices == null ? null : devices.clone();
        comms = List.copyOf(comms);
    }

    /**
     * Options of one sequence at a time ({@code batch} 1); the parameters as the record's.
     *
     * @param model       {@code --model}
     * @param synthetic   {@code --synthetic}
     * @param tp          {@code --tp}
     * @param mode        {@code --mode}
     * @param promptInput how the prompt was given
     * @param prompt      the prompt's token ids, or {@code null}
     * @param steps       {@code --steps} or {@code --max-new-tokens}
     * @param draft       {@code --draft}
     * @param comms       {@code --comm}
     * @param shareGpu    {@code --share-gpu}
     * @param devices     {@code --devices}, or {@code null}
     * @param context     {@code --context}, or 0
     * @param seed        {@code --seed}
     * @param tpShardOf   {@code --tp-shard-of}, or 0
     * @param profile     {@code --profile}
     * @param output      {@code --output}, or {@code null}
     * @param sampling    how generate chooses its tokens
     */
    public LlamaOptions(Path model, String synthetic, int tp, RunMode mode, PromptInput promptInput, int[] prompt,
                        int steps, int draft, List<CommMode> comms, boolean shareGpu, int[] devices, int context,
                        long seed, int tpShardOf, boolean profile, AnswerFormat output, Sampling sampling) {
        this(model, synthetic, tp, mode, promptInput, prompt, steps, draft, comms, shareGpu, devices, context, seed,
                tpShardOf, profile, output, sampling, 1, null);
    }

    private static int[][] deepCopy(int[][] prompts) {
        int[][] copy = new int[prompts.length][];
        for (int i = 0; i < prompts.length; i++) {
            copy[i] = prompts[i].clone();
        }
        return copy;
    }

    /**
     * The prompts of generate's batch.
     *
     * @return a copy: one prompt per sequence of {@code --batch B} in generate, or {@code null} (one sequence, the
     *         prompt is {@link #prompt()})
     */
    @Override
    public int[][] batchPrompts() {
        return batchPrompts == null ? null : deepCopy(batchPrompts);
    }

    /**
     * These options with the prompts of generate's batch ({@link PromptInput#resolveBatch}); {@link #prompt()} becomes
     * the longest of them (what the engine is sized for). The answer's format as {@link #withPrompt}.
     *
     * @param prompts   one prompt per sequence
     * @param tokenizer whether the model has a tokenizer
     * @return resolved options
     */
    public LlamaOptions withBatchPrompts(int[][] prompts, boolean tokenizer) {
        int[] longest = prompts[0];
        for (int[] p : prompts) {
            if (p.length > longest.length) {
                longest = p;
            }
        }
        return new LlamaOptions(model, synthetic, tp, mode, promptInput, longest, steps, draft, comms, shareGpu, devices,
                context, seed, tpShardOf, profile, answerFormat(tokenizer), sampling, batch, prompts);
    }

    /**
     * The prompt.
     *
     * @return a copy of the prompt's token ids
     */
    @Override
    public int[] prompt() {
        return prompt == null ? null : prompt.clone();
    }

    /**
     * These options with the prompt's token ids ({@link PromptInput#resolve}) and, in generate, the answer's format:
     * {@code --output} when given, else text where the model has a tokenizer and token ids where it has none.
     *
     * @param ids       the prompt's token ids
     * @param tokenizer whether the model has a tokenizer
     * @return resolved options
     * @throws UsageException for {@code --output text} without a tokenizer
     */
    public LlamaOptions withPrompt(int[] ids, boolean tokenizer) {
        return new LlamaOptions(model, synthetic, tp, mode, promptInput, ids, steps, draft, comms, shareGpu, devices,
                context, seed, tpShardOf, profile, answerFormat(tokenizer), sampling, batch, batchPrompts);
    }

    /** Generate's answer format: {@code --output} when given, else text with a tokenizer and ids without. */
    private AnswerFormat answerFormat(boolean tokenizer) {
        if (output == AnswerFormat.TEXT && !tokenizer) {
            throw new UsageException("--output text needs the model's tokenizer (tokenizer.json in the --model folder)"
                    + "; without one the answer is printed as token ids");
        }
        return mode != RunMode.GENERATE ? null : output != null ? output : tokenizer ? AnswerFormat.TEXT
                : AnswerFormat.IDS;
    }

    /**
     * The device mapping.
     *
     * @return a copy of {@code --devices}, or {@code null}
     */
    @Override
    public int[] devices() {
        return devices == null ? null : devices.clone();
    }

    /**
     * The GPU each rank of one JVM drives: {@code --devices}, all 0 with {@code --share-gpu}, else 0..tp-1.
     *
     * @return one CUDA ordinal per rank
     */
    public int[] deviceOfRank() {
        if (devices != null) {
            return devices.clone();
        }
        int[] d = new int[tp];
        for (int i = 0; i < tp; i++) {
            d[i] = shareGpu ? 0 : i;
        }
        return d;
    }

    /**
     * The tensor-parallel degree of the weights' split: {@code --tp-shard-of N} when given (rank 0's
     * shard of that split, run alone), else {@code --tp}.
     *
     * @return the degree the layout and the shard plan use
     */
    public int splitDegree() {
        return tpShardOf > 0 ? tpShardOf : tp;
    }

    /**
     * Whether this run is rank 0's shard of a larger split, alone ({@code --tp-shard-of}).
     *
     * @return {@code tpShardOf > 0}
     */
    public boolean shardAlone() {
        return tpShardOf > 0;
    }

    /**
     * Whether some GPU drives two ranks (then NCCL cannot be used).
     *
     * @return {@code true} when {@link #deviceOfRank()} repeats an ordinal
     */
    public boolean ranksShareGpu() {
        int[] d = deviceOfRank();
        return java.util.Arrays.stream(d).distinct().count() < d.length;
    }

    /**
     * These options with the default context resolved for the model: {@code --context} when it was
     * given, else {@value #DEFAULT_CONTEXT} or the model's {@code max_position_embeddings} if smaller.
     *
     * @param c the model's config
     * @return options whose {@link #context()} is at least 1
     */
    public LlamaOptions forModel(LlamaConfig c) {
        if (context > 0) {
            return this;
        }
        return new LlamaOptions(model, synthetic, tp, mode, promptInput, prompt, steps, draft, comms, shareGpu, devices,
                Math.min(DEFAULT_CONTEXT, c.maxPositionEmbeddings()), seed, tpShardOf, profile, output, sampling,
                batch, batchPrompts);
    }

    /**
     * Checks what needs the model's config (after {@link #forModel}): the context against {@code max_position_embeddings},
     * the prompt, steps and draft against the context, the token ids against the vocabulary.
     *
     * @param c the model's config
     * @throws UsageException naming the option and the limit
     */
    public void checkAgainst(LlamaConfig c) {
        if (context < 1) {
            throw new IllegalStateException("the context is not resolved yet: call forModel(config) first");
        }
        if (prompt == null) {
            throw new IllegalStateException("the prompt is not resolved yet: call withPrompt first");
        }
        if (context > c.maxPositionEmbeddings()) {
            throw new UsageException("--context " + context + " is more than the model's max_position_embeddings "
                    + c.maxPositionEmbeddings());
        }
        long needed = (long) prompt.length + steps + draft;
        if (mode == RunMode.GENERATE && needed > context) {
            throw new UsageException("the prompt (" + prompt.length + " tokens) + --steps (--max-new-tokens) " + steps
                    + " + --draft "
                    + draft + " need " + needed + " positions, more than --context " + context);
        }
        if (mode == RunMode.BENCH && (long) prompt.length + 1 + draft > context) {
            throw new UsageException("the prompt (" + prompt.length + " tokens) + 1 + --draft " + draft
                    + " positions do not fit --context " + context);
        }
        int[][] all = batchPrompts != null ? batchPrompts : new int[][] {prompt};
        for (int p = 0; p < all.length; p++) {
            for (int i = 0; i < all[p].length; i++) {
                if (all[p][i] >= c.vocabSize()) {
                    throw new UsageException(promptInput.optionName() + (all.length > 1 ? " (prompt " + (p + 1) + ")" : "")
                            + ": token " + i + " is " + all[p][i] + ", outside the vocabulary of " + c.vocabSize());
                }
            }
        }
    }
}
