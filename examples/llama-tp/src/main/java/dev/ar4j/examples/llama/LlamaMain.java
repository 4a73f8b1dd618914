package dev.ar4j.examples.llama;

import dev.ar4j.examples.llama.cli.LlamaCommand;
import dev.ar4j.examples.llama.cli.LlamaOptions;
import dev.ar4j.examples.llama.cli.RunMode;
import dev.ar4j.examples.llama.model.ConfigReader;
import dev.ar4j.examples.llama.model.LlamaConfig;
import dev.ar4j.examples.llama.model.ModelFileException;
import dev.ar4j.examples.llama.model.SyntheticModels;
import dev.ar4j.examples.llama.text.Tokenizer;
import dev.ar4j.examples.llama.model.TensorParallelLayout;
import picocli.CommandLine;

import java.io.InputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.util.function.Function;
import java.io.PrintWriter;

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
     * @param args the command line (see {@code --help}, {@link LlamaCommand})
     */
    public static void main(String[] args) {
        System.exit(run(args, System.in, System.out, System.err));
    }

    /**
     * Runs the command, printing to the given streams; standard input is not read.
     *
     * @param args the command line
     * @param out  where results go
     * @param err  where errors go
     * @return the exit code
     */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        return run(args, InputStream.nullInputStream(), out, err);
    }

    /**
     * Runs the command, printing to the given streams.
     *
     * @param args the command line
     * @param in   standard input, read for {@code --prompt -}
     * @param out  where results go (in generate: the answer alone)
     * @param err  where errors go (in generate: also the model line, the loading progress and the summary)
     * @return the exit code
     */
    public static int run(String[] args, InputStream in, PrintStream out, PrintStream err) {
        LlamaOptions options;
        LlamaConfig config;
        Tokenizer tokenizer;
        TensorParallelLayout layout;
        try {
            LlamaCommand command = new LlamaCommand();
            CommandLine cli = LlamaCommand.commandLine(command);
            cli.setOut(new PrintWriter(out, true));
            cli.setErr(new PrintWriter(err, true));
            CommandLine.ParseResult parsed = LlamaCommand.parseArgs(cli, args);
            if (CommandLine.printHelpIfRequested(parsed)) {
                return 0;
            }
            if (parsed.subcommand() != null) {
                ((Runnable) parsed.subcommand().commandSpec().userObject()).run();
                return 0;
            }
            options = command.toOptions();
            config = options.model() != null ? ConfigReader.read(options.model())
                    : SyntheticModels.byName(options.synthetic());
            tokenizer = tokenizerOf(options);
            options = withPrompt(options, tokenizer, in);
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
        Runner.info(options, out, err).println(ModelDescription.of(options, layout));
        try {
            return Runner.run(options, layout, tokenizer, out, err);
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
     * The model folder's tokenizer where it has a {@code tokenizer.json} and the run needs it (generate, or a text
     * prompt in bench), else {@code null}.
     */
    static Tokenizer tokenizerOf(LlamaOptions o) {
        boolean needed = o.mode() == RunMode.GENERATE || o.prompt() == null;
        return needed && o.model() != null && Files.isRegularFile(o.model().resolve(TOKENIZER_FILE))
                ? Tokenizer.load(o.model()) : null;
    }

    /** The file that gives a model folder its tokenizer. */
    static final String TOKENIZER_FILE = "tokenizer.json";

    /**
     * The options with the prompt's token ids: given, or the text (of standard input with {@code --prompt -})
     * through the tokenizer, its special tokens added (Llama's BOS); in generate with {@code --batch B}, B prompts.
     */
    private static LlamaOptions withPrompt(LlamaOptions o, Tokenizer tokenizer, InputStream in) {
        String none = o.model() == null ? "synthetic models have none" : o.model() + " has no " + TOKENIZER_FILE;
        Function<String, int[]> encoder = tokenizer == null ? null : text -> tokenizer.encode(text, true);
        if (o.mode() == RunMode.GENERATE && o.batch() > 1) {
            return o.withBatchPrompts(o.promptInput().resolveBatch(o.batch(), encoder, none, in, Runner.launched()),
                    tokenizer != null);
        }
        int[] ids = o.prompt() != null ? o.prompt() : o.promptInput().resolve(o.mode() == RunMode.BENCH, encoder,
                none, in, Runner.launched());
        return o.withPrompt(ids, tokenizer != null);
    }
}
