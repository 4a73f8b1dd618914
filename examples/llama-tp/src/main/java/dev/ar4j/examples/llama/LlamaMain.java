package dev.ar4j.examples.llama;

import dev.ar4j.examples.llama.cli.LlamaOptions;
import dev.ar4j.examples.llama.cli.OptionsParser;
import dev.ar4j.examples.llama.cli.UsageException;
import dev.ar4j.examples.llama.config.ConfigReader;
import dev.ar4j.examples.llama.config.LlamaConfig;
import dev.ar4j.examples.llama.config.ModelFileException;
import dev.ar4j.examples.llama.config.SyntheticModels;
import dev.ar4j.examples.llama.weights.ShardPlan;
import dev.ar4j.examples.llama.weights.TensorParallelLayout;

import java.io.PrintStream;
import java.util.Locale;

/**
 * {@code ar4j-llama}: a tensor-parallel Llama decoder on ar4j. Exit codes: 0 done, 2 a usage
 * error, 3 a model folder that cannot be used, 1 any other failure.
 */
public final class LlamaMain {

    private LlamaMain() {
    }

    /**
     * Runs the command.
     *
     * @param args the command line (see {@link OptionsParser#USAGE})
     */
    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err));
    }

    /**
     * Runs the command, printing to the given streams.
     *
     * @param args the command line
     * @param out  where results go
     * @param err  where errors go
     * @return the exit code
     */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        LlamaOptions options;
        LlamaConfig config;
        TensorParallelLayout layout;
        try {
            options = OptionsParser.parse(args);
            if (options.help()) {
                out.println(OptionsParser.USAGE);
                return 0;
            }
            config = options.model() != null ? ConfigReader.read(options.model())
                    : SyntheticModels.byName(options.synthetic());
            options = options.forModel(config);
            options.checkAgainst(config);
            try {
                layout = new TensorParallelLayout(config, options.splitDegree());
            } catch (IllegalArgumentException e) {
                // The layout names --tp; with --tp-shard-of that is the degree it split by.
                throw options.shardAlone() ? new IllegalArgumentException("--tp-shard-of " + options.tpShardOf() + ": "
                        + e.getMessage().replace("--tp " + options.tpShardOf(), "degree " + options.tpShardOf()), e)
                        : e;
            }
        } catch (ModelFileException e) {
            err.println("ar4j-llama: " + e.getMessage());
            return 3;
        } catch (IllegalArgumentException e) {
            err.println("ar4j-llama: " + e.getMessage());
            err.println("(try --help)");
            return 2;
        }
        out.println(describe(options, layout));
        try {
            return Runner.run(options, layout, out, err);
        } catch (ModelFileException e) {
            err.println("ar4j-llama: " + e.getMessage());
            return 3;
        } catch (RuntimeException e) {
            err.println("ar4j-llama: " + e.getMessage());
            for (Throwable c = e.getCause(); c != null && c != c.getCause(); c = c.getCause()) {
                err.println("  caused by: " + c);
            }
            if (Boolean.getBoolean("ar4j.llama.trace")) {
                e.printStackTrace(err);
            } else {
                err.println("(-Dar4j.llama.trace=true in AR4J_LLAMA_JAVA_OPTS prints the stack trace)");
            }
            return 1;
        }
    }

    /**
     * One line on the model and its split.
     *
     * @param options the command line
     * @param layout  the split
     * @return e.g. {@code llama3-8b: 32 layers, hidden 4096, ... tp 2: 7.5 GiB of weights per rank}
     */
    static String describe(LlamaOptions options, TensorParallelLayout layout) {
        LlamaConfig c = layout.config();
        String name = options.model() != null ? options.model().toString() : options.synthetic() + " (synthetic)";
        String split = options.shardAlone()
                ? String.format(Locale.ROOT, "rank 0's shard of tp %d, alone (world size 1): %.2f GiB of bf16 weights",
                        layout.tp(), ShardPlan.forRank(layout, 0).bf16Bytes() / (double) (1L << 30))
                : String.format(Locale.ROOT, "tp %d: %.2f GiB of bf16 weights per rank", layout.tp(),
                        ShardPlan.forRank(layout, 0).bf16Bytes() / (double) (1L << 30));
        return String.format(Locale.ROOT, "%s: %d layers, hidden %d, %d/%d heads of %d, intermediate %d, vocab %d; %s",
                name, c.numHiddenLayers(), c.hiddenSize(), c.numAttentionHeads(), c.numKeyValueHeads(), c.headDim(),
                c.intermediateSize(), c.vocabSize(), split);
    }
}
