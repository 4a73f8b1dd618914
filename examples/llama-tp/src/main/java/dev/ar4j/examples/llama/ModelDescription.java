package dev.ar4j.examples.llama;

import dev.ar4j.examples.llama.cli.LlamaOptions;
import dev.ar4j.examples.llama.model.LlamaConfig;
import dev.ar4j.examples.llama.model.ShardPlan;
import dev.ar4j.examples.llama.model.TensorParallelLayout;

import java.util.Locale;

/** The one line on the model and its split that a run prints first (and bench puts above its table). */
final class ModelDescription {

    private ModelDescription() {
    }

    /**
     * One line on the model and its split.
     *
     * @param options the command line
     * @param layout  the split
     * @return e.g. {@code llama3-8b: 32 layers, hidden 4096, ... tp 2: 7.5 GiB of weights per rank}
     */
    static String of(LlamaOptions options, TensorParallelLayout layout) {
        LlamaConfig c = layout.config();
        String name = options.model() != null ? options.model().toString() : options.synthetic() + " (synthetic)";
        String split = options.shardAlone()
                ? String.format(Locale.ROOT, "rank 0's shard of tp %d, alone (world size 1): %.2f GiB of bf16 weights",
                        layout.tp(), ShardPlan.forRank(layout, 0).bf16Bytes() / (double) (1L << 30))
                : String.format(Locale.ROOT, "tp %d: %.2f GiB of bf16 weights per rank", layout.tp(),
                        ShardPlan.forRank(layout, 0).bf16Bytes() / (double) (1L << 30));
        return String.format(Locale.ROOT, "%s: %d layers, hidden %d, %d/%d heads of %d, intermediate %d, vocab %d; %s",
                name, c.numHiddenLayers(), c.hiddenSize(), c.numAttentionHeads(), c.numKeyValueHeads(), c.headDim(),
                c.intermediateSize(), c.vocabSize(), split)
                + (options.sampling().greedy() ? "" : "; " + options.sampling().describe())
                + (options.batch() == 1 ? "" : "; a batch of " + options.batch() + " sequences (decode: one token of "
                        + "each; verify: --draft tokens of each; prefill: one sequence)");
    }
}
