package dev.ar4j.examples.llama.cli;

import dev.ar4j.examples.llama.engine.EngineSettings;
import dev.ar4j.examples.llama.engine.Sampling;
import dev.ar4j.examples.llama.model.SyntheticModels;
import picocli.AutoComplete;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * {@code ar4j-llama}'s command line on picocli: the options as picocli reads them, and
 * {@link #toOptions()}, which checks them together and makes {@link LlamaOptions}. picocli gives
 * {@code --help}, {@code --version} and {@code generate-completion}; its parse errors are put in this
 * command's words by {@link ParseErrors}. Values stay text until {@link #toOptions()}, so that every
 * message names the option, what was given and what is accepted ({@link OptionValues}).
 */
@Command(name = "ar4j-llama", versionProvider = LlamaVersion.class,
        sortOptions = false, usageHelpAutoWidth = true,
        subcommands = AutoComplete.GenerateCompletion.class,
        customSynopsis = "ar4j-llama (--model DIR | --synthetic tiny|llama3-8b|verify-7168) [options]",
        description = {"A tensor-parallel Llama decoder on ar4j: generate tokens from a prompt (greedy, or "
                + "drawn with --temperature), or bench the prefill, decode and verify steps.",
            "generate streams the answer to standard output as the tokens come (text where the model has a "
                + "tokenizer, else token ids), stops at the tokenizer's end-of-sequence tokens or after --steps, and "
                + "ends with a one-line summary on standard error (prompt tokens, generated tokens, time to first "
                + "token, decode tokens/s); the model line and the loading progress go to standard error too."},
        footer = {"",
            "With torchrun-style variables (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT) each JVM is one "
                    + "rank and --tp must equal WORLD_SIZE; otherwise one JVM drives all ranks as threads.",
            "Shell completion: source <(ar4j-llama generate-completion)"},
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {"0:done", "1:any other failure", "2:a usage error", "3:a model folder that cannot be used"})
public final class LlamaCommand {

    /** The most draft tokens of a verify step. */
    static final int MAX_DRAFT = 64;

    @Option(names = "--model", paramLabel = "DIR", description = "a Hugging Face model folder (config.json, "
            + "*.safetensors)")
    private String model;

    @Option(names = "--synthetic", paramLabel = "NAME", description = "random weights of a known shape: tiny, "
            + "llama3-8b, llama3.1-8b (131072 positions) or verify-7168")
    private String synthetic;

    @Option(names = "--tp", paramLabel = "N", description = "ranks (tensor-parallel degree), default 1")
    private String tp;

    @Option(names = "--mode", paramLabel = "M", description = "generate (default) | bench")
    private String mode;

    @Option(names = "--prompt", paramLabel = "TEXT", description = "the prompt: text where the model has a tokenizer "
            + "(a --model folder with tokenizer.json), token ids (1,2,3) where it has none (synthetic models, folders "
            + "without tokenizer.json); - reads it from standard input (one trailing line break dropped; standard "
            + "input is read only then). Default: token ids 1,2,3,4 (bench: 1..512)")
    private String prompt;

    @Option(names = "--prompt-ids", paramLabel = "1,2,3", description = "the prompt as token ids, for any model")
    private String promptIds;

    @Option(names = "--steps", paramLabel = "N", description = "generate: the most new tokens (default 32), fewer when "
            + "an end-of-sequence token comes; bench: timed replays (default 1000)")
    private String steps;

    @Option(names = "--max-new-tokens", paramLabel = "N", description = "generate: --steps by its Hugging Face name")
    private String maxNewTokens;

    @Option(names = "--output", paramLabel = "F", description = "generate: text (streamed as the tokens come; the "
            + "default with a tokenizer) | ids (a line 'tokens: 1,2,3'; the default without one)")
    private String output;

    @Option(names = "--draft", paramLabel = "K", description = "draft tokens of a verify step, 0..64 (default 0; "
            + "bench: 3)")
    private String draft;

    @Option(names = "--batch", paramLabel = "B", description = "sequences decoded at once, 1..256 (default 1), each with "
            + "its own KV cache of --context positions. bench: the decode step runs one token of each, the verify step "
            + "--draft tokens of each; generate: B prompts, one per line of --prompt (or of standard input), or "
            + "--prompt-ids lists separated by ';', generated greedily together, each answer printed when all are done")
    private String batch;

    @Option(names = "--comm", paramLabel = "C[,C...]", description = "ar4j (default) | nccl | nccl-symm; a list in "
            + "bench only")
    private String comm;

    @Option(names = "--share-gpu", arity = "0", description = "every rank on GPU 0 (one JVM; ar4j without NCCL)")
    private boolean shareGpu;

    @Option(names = "--devices", paramLabel = "0,1,...", description = "the GPU of each rank when one JVM drives all "
            + "ranks")
    private String devices;

    @Option(names = "--context", paramLabel = "N", description = "KV-cache positions (default 2048, or "
            + "max_position_embeddings if smaller)")
    private String context;

    @Option(names = "--seed", paramLabel = "S", description = "seed of the synthetic weights and of generate's "
            + "draws with --temperature > 0 (default 1234): the same seed, prompt and options give the same tokens")
    private String seed;

    @Option(names = "--temperature", paramLabel = "T", description = "generate: 0 (default) takes the most likely "
            + "token (greedy); T > 0 draws each token from softmax(logits / T) on the GPU, inside the captured step")
    private String temperature;

    @Option(names = "--top-k", paramLabel = "K", description = "generate, with --temperature: draw only among the K "
            + "largest logits (every logit equal to the K-th stays); 0 (default): all")
    private String topK;

    @Option(names = "--top-p", paramLabel = "P", description = "generate, with --temperature: draw only from the "
            + "smallest set of most likely tokens whose probability (after --top-k) reaches P, 0 < P <= 1; 1 "
            + "(default): all")
    private String topP;

    @Option(names = "--tp-shard-of", paramLabel = "N", description = "bench rank 0's shard of a TP N split alone, as "
            + "one rank (world size 1) on one GPU: the per-rank compute of a TP N step, a projection with no "
            + "communication (the all-reduces are world-size-1 calls); bench only, since the shard's tokens mean "
            + "nothing; excludes --tp N > 1")
    private String tpShardOf;

    @Option(names = "--profile", arity = "0", description = "bench: also where the prefill's and one eager decode "
            + "(and verify) step's time goes, per kind of kernel (CUDA events around each kind; bytes moved and TB/s)")
    private boolean profile;

    // Long names only: with -h or -V, a text prompt starting with "-h" or "-V" would look like those options.
    @Option(names = "--help", usageHelp = true, description = "this text")
    private boolean help;

    @Option(names = "--version", versionHelp = true, description = "the version of ar4j-llama and of Java")
    private boolean version;

    /** An empty command; picocli fills its options ({@link #commandLine}). */
    public LlamaCommand() {
    }

    /**
     * A command line for this command, its parse errors in this command's words.
     *
     * @param command the object picocli fills
     * @return the command line
     */
    public static CommandLine commandLine(LlamaCommand command) {
        CommandLine cli = new CommandLine(command);
        // A prompt may start with '@': it is text, never the name of an argument file.
        cli.setExpandAtFiles(false);
        cli.getCommandSpec().subcommands().get("generate-completion").getCommandSpec().usageMessage().hidden(true);
        return cli;
    }

    /**
     * Parses {@code args} into the command line's object.
     *
     * @param cli  a command line from {@link #commandLine}
     * @param args the arguments
     * @return picocli's result: whether help, the version or a subcommand was asked for
     * @throws UsageException naming the option that is wrong, missing, repeated or unknown
     */
    public static CommandLine.ParseResult parseArgs(CommandLine cli, String... args) {
        return ParseErrors.parse(cli, args);
    }

    /**
     * Parses a command line that asks for a run (not for help): for tests and callers without a terminal.
     *
     * @param args the arguments
     * @return the options
     * @throws UsageException naming the option that is wrong, missing, repeated or unknown
     */
    public static LlamaOptions parse(String... args) {
        LlamaCommand command = new LlamaCommand();
        ParseErrors.parse(commandLine(command), args);
        return command.toOptions();
    }

    /**
     * Checks the options together and makes the record.
     *
     * @return the options
     * @throws UsageException naming the option that is wrong and what it takes
     */
    public LlamaOptions toOptions() {
        if ((model == null) == (synthetic == null)) {
            throw new UsageException(model == null ? "give --model DIR or --synthetic NAME ("
                    + String.join("|", SyntheticModels.NAMES) + ")" : "--model and --synthetic exclude each other");
        }
        if (synthetic != null && !SyntheticModels.NAMES.contains(synthetic)) {
            throw new UsageException("--synthetic: unknown model '" + synthetic + "'; accepted: "
                    + String.join(", ", SyntheticModels.NAMES));
        }
        RunMode runMode = mode(mode == null ? "generate" : mode);
        boolean bench = runMode == RunMode.BENCH;
        int ranks = OptionValues.intValue("--tp", or(tp, "1"), 1, 64);
        int shardOf = 0;
        if (tpShardOf != null) {
            shardOf = OptionValues.intValue("--tp-shard-of", tpShardOf, 2, 64);
            if (!bench) {
                throw new UsageException("--tp-shard-of runs in --mode bench only: rank 0's shard alone computes a "
                        + "part of the model, so its tokens mean nothing");
            }
            if (ranks != 1) {
                throw new UsageException("--tp-shard-of " + shardOf + " runs rank 0's shard as one rank alone: leave "
                        + "out --tp " + ranks);
            }
        }
        PromptInput given = promptInput();
        int sequences = OptionValues.intValue("--batch", or(batch, "1"), 1, EngineSettings.MAX_BATCH);
        boolean batchPrompts = sequences > 1 && !bench;  // generate's B prompts are resolved with the model
        // Token ids given, by default, or for a model without tokenizer are checked now; text waits for the model.
        int[] ids = !batchPrompts && given.resolvableWithout(model != null)
                ? given.resolve(bench, null, "synthetic models have none", null, false) : null;
        int stepCount = OptionValues.intValue(maxNewTokens != null ? "--max-new-tokens" : "--steps",
                or(stepsGiven(bench), bench ? "1000" : "32"), 1, 1 << 24);
        int draftTokens = OptionValues.intValue("--draft", or(draft, bench ? "3" : "0"), bench ? 1 : 0, MAX_DRAFT);
        List<CommMode> comms = comms(or(comm, "ar4j"), bench);
        int[] deviceList = null;
        if (devices != null) {
            if (shareGpu) {
                throw new UsageException("--devices and --share-gpu exclude each other (--share-gpu is --devices 0,0,...)");
            }
            deviceList = OptionValues.ids("--devices", devices, 0, 1023);
            if (deviceList.length != ranks) {
                throw new UsageException("--devices names " + deviceList.length + " GPUs but --tp is " + ranks
                        + ": give one GPU per rank");
            }
        }
        // 0: not given; LlamaOptions.forModel makes it the default once the model is known.
        int positions = context != null ? OptionValues.intValue("--context", context, 1, 1 << 24) : 0;
        long weightSeed = OptionValues.longValue("--seed", or(seed, "1234"));
        if (profile && !bench) {
            throw new UsageException("--profile: it profiles the steps of --mode bench; add --mode bench");
        }
        Sampling sampling = sampling(bench, weightSeed, draftTokens);
        if (batchPrompts && (draftTokens > 0 || !sampling.greedy())) {
            throw new UsageException("--batch " + sequences + " in generate: a batch is generated greedily, without a "
                    + "verify step; leave out " + (draftTokens > 0 ? "--draft" : "--temperature, --top-k and --top-p"));
        }
        LlamaOptions options = new LlamaOptions(model == null ? null : folder(model), synthetic, ranks, runMode, given,
                ids, stepCount, draftTokens, comms, shareGpu, deviceList, positions, weightSeed, shardOf, profile,
                answerFormat(bench), sampling, sequences, null);
        return synthetic != null && !batchPrompts ? options.withPrompt(ids, false) : options;
    }

    /** --temperature, --top-k and --top-p (with --seed): greedy unless a temperature above 0 is given. */
    private Sampling sampling(boolean bench, long seedValue, int draftTokens) {
        if (temperature == null && topK == null && topP == null) {
            return Sampling.GREEDY;
        }
        if (bench) {
            throw new UsageException("--temperature, --top-k and --top-p choose generate's tokens; bench times the "
                    + "greedy steps: leave them out");
        }
        double t = temperature == null ? 0 : OptionValues.doubleValue("--temperature", temperature);
        if (!(t >= 0) || !Double.isFinite(t)) {
            throw new UsageException("--temperature must be a finite number >= 0 (0: greedy), got " + temperature);
        }
        int k = topK == null ? 0 : OptionValues.intValue("--top-k", topK, 0, Integer.MAX_VALUE);
        double p = topP == null ? 1 : OptionValues.doubleValue("--top-p", topP);
        if (!(p > 0 && p <= 1)) {
            throw new UsageException("--top-p must be a number in (0, 1] (1: every token), got " + topP);
        }
        if (t == 0) {
            if (topK != null || topP != null) {
                throw new UsageException((topK != null ? "--top-k" : "--top-p") + " narrows the draw of --temperature "
                        + "T > 0; with temperature 0 (the default) generate takes the most likely token: give "
                        + "--temperature");
            }
            return Sampling.GREEDY;
        }
        if (draftTokens > 0) {
            throw new UsageException("--draft " + draftTokens + " checks the verify step against greedy decoding; "
                    + "leave it out with --temperature " + temperature);
        }
        try {
            return new Sampling(t, k, p, seedValue);
        } catch (IllegalArgumentException e) {
            throw new UsageException("--temperature " + temperature + ": " + e.getMessage());
        }
    }

    private PromptInput promptInput() {
        if (prompt != null && promptIds != null) {
            throw new UsageException("--prompt and --prompt-ids exclude each other (--prompt-ids is token ids; --prompt "
                    + "is text, or token ids for a model without tokenizer)");
        }
        if (promptIds != null) {
            return new PromptInput(PromptInput.Source.IDS, promptIds);
        }
        if (prompt == null) {
            return new PromptInput(PromptInput.Source.DEFAULT, null);
        }
        return prompt.equals("-") ? new PromptInput(PromptInput.Source.STDIN, null)
                : new PromptInput(PromptInput.Source.TEXT_OR_IDS, prompt);
    }

    private String stepsGiven(boolean bench) {
        if (maxNewTokens == null) {
            return steps;
        }
        if (bench) {
            throw new UsageException("--max-new-tokens is generate's: bench times --steps N replays of each step");
        }
        if (steps != null) {
            throw new UsageException("--max-new-tokens is --steps by another name: give one of them");
        }
        return maxNewTokens;
    }

    private AnswerFormat answerFormat(boolean bench) {
        if (output == null) {
            return null;
        }
        if (bench) {
            throw new UsageException("--output is how generate prints the answer; bench prints a table");
        }
        return switch (output) {
            case "text" -> AnswerFormat.TEXT;
            case "ids" -> AnswerFormat.IDS;
            default -> throw new UsageException("--output: unknown format '" + output + "'; accepted: text, ids");
        };
    }

    /**
     * The model folder as an absolute, normalized path: {@code --model .} or {@code --model model} have no parent
     * as given, which the files' checks need.
     */
    static Path folder(String text) {
        return Path.of(text).toAbsolutePath().normalize();
    }

    private static String or(String given, String otherwise) {
        return given != null ? given : otherwise;
    }

    private static RunMode mode(String text) {
        return switch (text) {
            case "generate" -> RunMode.GENERATE;
            case "bench" -> RunMode.BENCH;
            default -> throw new UsageException("--mode: unknown mode '" + text + "'; accepted: generate, bench");
        };
    }

    private static List<CommMode> comms(String text, boolean bench) {
        List<CommMode> out = new ArrayList<>();
        Set<CommMode> seen = new HashSet<>();
        for (String part : text.split(",", -1)) {
            CommMode m = CommMode.parse(part);
            if (!seen.add(m)) {
                throw new UsageException("--comm names " + m.flag() + " twice");
            }
            out.add(m);
        }
        if (out.size() > 1 && !bench) {
            throw new UsageException("--comm takes a list (" + text + ") in --mode bench only; generate runs one");
        }
        return out;
    }
}
