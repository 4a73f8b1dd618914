package dev.ar4j.examples.llama.cli;

import dev.ar4j.examples.llama.config.SyntheticModels;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Parses {@code ar4j-llama}'s arguments ({@code --name value} or {@code --name=value}) into
 * {@link LlamaOptions}; every error is a {@link UsageException} naming the option.
 */
public final class OptionsParser {

    /** The usage text {@code --help} prints. */
    public static final String USAGE = """
            usage: ar4j-llama (--model DIR | --synthetic tiny|llama3-8b|verify-7168) [options]
              --tp N              ranks (tensor-parallel degree), default 1
              --mode M            generate (default) | bench
              --prompt 1,2,3      the prompt's token ids (default 1,2,3,4; bench: 512 tokens)
              --steps N           decode steps (generate, default 32) or timed replays (bench, default 1000)
              --draft K           draft tokens of a verify step, 0..64 (default 0; bench: 3)
              --comm C[,C...]     ar4j (default) | nccl | nccl-symm; a list in bench only
              --share-gpu         every rank on GPU 0 (one JVM; ar4j without NCCL)
              --devices 0,1,...   the GPU of each rank when one JVM drives all ranks
              --context N         KV-cache positions (default 2048, or max_position_embeddings if smaller)
              --seed S            seed of the synthetic weights (default 1234)
              --tp-shard-of N     bench rank 0's shard of a TP N split alone, as one rank (world size 1) on
                                  one GPU: the per-rank compute of a TP N step, a projection with no
                                  communication (the all-reduces are world-size-1 calls); bench only,
                                  since the shard's tokens mean nothing; excludes --tp N > 1
              --profile           bench: also where one eager step's time goes, per kind of kernel
                                  (CUDA events around each kind; bytes moved and TB/s)
              --help              this text
            With torchrun-style variables (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT) each
            JVM is one rank and --tp must equal WORLD_SIZE; otherwise one JVM drives all ranks as threads.""";

    private static final Set<String> FLAGS = Set.of("--share-gpu", "--help", "--profile");
    private static final Set<String> VALUED = Set.of("--model", "--synthetic", "--tp", "--mode", "--prompt", "--steps",
            "--draft", "--comm", "--devices", "--context", "--seed", "--tp-shard-of");

    /** The longest prompt accepted on the command line. */
    static final int MAX_PROMPT = 1 << 20;
    /** The most draft tokens of a verify step. */
    static final int MAX_DRAFT = 64;

    private OptionsParser() {
    }

    /**
     * Parses a command line.
     *
     * @param args the arguments
     * @return the options
     * @throws UsageException naming the option that is wrong, missing, repeated or unknown
     */
    public static LlamaOptions parse(String... args) {
        Map<String, String> given = split(args);
        if (given.containsKey("--help")) {
            return new LlamaOptions(null, null, 1, RunMode.GENERATE, new int[0], 1, 0, List.of(CommMode.AR4J), false,
                    null, 1, 0, true, 0, false);
        }
        String model = given.get("--model");
        String synthetic = given.get("--synthetic");
        if ((model == null) == (synthetic == null)) {
            throw new UsageException(model == null ? "give --model DIR or --synthetic NAME ("
                    + String.join("|", SyntheticModels.NAMES) + ")" : "--model and --synthetic exclude each other");
        }
        if (synthetic != null && !SyntheticModels.NAMES.contains(synthetic)) {
            throw new UsageException("--synthetic: unknown model '" + synthetic + "'; accepted: "
                    + String.join(", ", SyntheticModels.NAMES));
        }
        RunMode mode = mode(given.getOrDefault("--mode", "generate"));
        boolean bench = mode == RunMode.BENCH;
        int tp = intValue("--tp", given.getOrDefault("--tp", "1"), 1, 64);
        int shardOf = 0;
        if (given.containsKey("--tp-shard-of")) {
            shardOf = intValue("--tp-shard-of", given.get("--tp-shard-of"), 2, 64);
            if (!bench) {
                throw new UsageException("--tp-shard-of runs in --mode bench only: rank 0's shard alone computes a "
                        + "part of the model, so its tokens mean nothing");
            }
            if (tp != 1) {
                throw new UsageException("--tp-shard-of " + shardOf + " runs rank 0's shard as one rank alone: leave "
                        + "out --tp " + tp);
            }
        }
        int[] prompt = given.containsKey("--prompt") ? ids("--prompt", given.get("--prompt"), 0, Integer.MAX_VALUE)
                : bench ? range(512) : new int[] {1, 2, 3, 4};
        if (prompt.length > MAX_PROMPT) {
            throw new UsageException("--prompt: " + prompt.length + " tokens, more than " + MAX_PROMPT);
        }
        int steps = intValue("--steps", given.getOrDefault("--steps", bench ? "1000" : "32"), 1, 1 << 24);
        int draft = intValue("--draft", given.getOrDefault("--draft", bench ? "3" : "0"), bench ? 1 : 0, MAX_DRAFT);
        List<CommMode> comms = comms(given.getOrDefault("--comm", "ar4j"), bench);
        boolean share = given.containsKey("--share-gpu");
        int[] devices = null;
        if (given.containsKey("--devices")) {
            if (share) {
                throw new UsageException("--devices and --share-gpu exclude each other (--share-gpu is --devices 0,0,...)");
            }
            devices = ids("--devices", given.get("--devices"), 0, 1023);
            if (devices.length != tp) {
                throw new UsageException("--devices names " + devices.length + " GPUs but --tp is " + tp
                        + ": give one GPU per rank");
            }
        }
        // 0: not given; LlamaOptions.forModel makes it the default once the model is known.
        int context = given.containsKey("--context") ? intValue("--context", given.get("--context"), 1, 1 << 24) : 0;
        long seed = longValue("--seed", given.getOrDefault("--seed", "1234"));
        return new LlamaOptions(model == null ? null : Path.of(model), synthetic, tp, mode, prompt, steps, draft, comms,
                share, devices, context, seed, false, shardOf, profile(given, mode));
    }

    private static Map<String, String> split(String[] args) {
        Map<String, String> given = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            String name = a;
            String value = null;
            int eq = a.indexOf('=');
            if (a.startsWith("--") && eq > 0) {
                name = a.substring(0, eq);
                value = a.substring(eq + 1);
            }
            if (FLAGS.contains(name)) {
                if (value != null) {
                    throw new UsageException(name + " takes no value");
                }
            } else if (VALUED.contains(name)) {
                if (value == null) {
                    if (i + 1 >= args.length || args[i + 1].startsWith("--")) {
                        throw new UsageException(name + " needs a value");
                    }
                    value = args[++i];
                }
            } else {
                throw new UsageException(a.startsWith("-") ? "unknown option " + name + " (try --help)"
                        : "unexpected argument '" + a + "' (options start with --; try --help)");
            }
            if (given.put(name, value == null ? "" : value) != null) {
                throw new UsageException(name + " is given twice");
            }
        }
        return given;
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

    static int intValue(String option, String text, int min, int max) {
        long v = longValue(option, text);
        if (v < min || v > max) {
            throw new UsageException(option + " must be " + min + ".." + max + ", got " + text);
        }
        return (int) v;
    }

    static long longValue(String option, String text) {
        try {
            return Long.parseLong(text.trim());
        } catch (NumberFormatException e) {
            throw new UsageException(option + ": '" + text + "' is not a whole number");
        }
    }

    static int[] ids(String option, String text, int min, int max) {
        if (text.isBlank()) {
            throw new UsageException(option + " is empty; give comma-separated whole numbers, e.g. 1,2,3");
        }
        String[] parts = text.split(",", -1);
        int[] out = new int[parts.length];
        for (int i = 0; i < parts.length; i++) {
            if (parts[i].isBlank()) {
                throw new UsageException(option + ": value " + (i + 1) + " of '" + text + "' is empty");
            }
            out[i] = intValue(option + " value " + (i + 1), parts[i], min, max);
        }
        return out;
    }

    private static int[] range(int n) {
        int[] out = new int[n];
        for (int i = 0; i < n; i++) {
            out[i] = i + 1;
        }
        return out;
    }

    private static boolean profile(Map<String, String> given, RunMode mode) {
        if (given.containsKey("--profile") && mode != RunMode.BENCH) {
            throw new UsageException("--profile: it profiles the steps of --mode bench; add --mode bench");
        }
        return given.containsKey("--profile");
    }
}
