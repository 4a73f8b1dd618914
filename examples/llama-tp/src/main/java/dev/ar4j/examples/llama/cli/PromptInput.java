package dev.ar4j.examples.llama.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.function.Function;

/**
 * How the prompt was given, and its token ids once the model is known ({@link #resolve}). The rule:
 * {@code --prompt-ids 1,2,3} is token ids for every model; {@code --prompt TEXT} is text where the
 * model has a tokenizer (a {@code --model} folder with {@code tokenizer.json}) and token ids where it
 * has none (synthetic models, folders without {@code tokenizer.json}); {@code --prompt -} reads
 * {@code TEXT} from standard input (one trailing line break dropped). Without a prompt: token ids
 * {@code 1,2,3,4} (bench: {@code 1..512}). Standard input is read only with {@code --prompt -}.
 *
 * @param source how it was given
 * @param value  the option's value ({@code null} for {@link Source#DEFAULT} and {@link Source#STDIN})
 */
public record PromptInput(Source source, String value) {

    /** How a prompt was given. */
    public enum Source {
        /** No prompt option: the default token ids. */
        DEFAULT,
        /** {@code --prompt-ids}: token ids. */
        IDS,
        /** {@code --prompt}: text, or token ids without a tokenizer. */
        TEXT_OR_IDS,
        /** {@code --prompt -}: as {@link #TEXT_OR_IDS}, read from standard input. */
        STDIN
    }

    /** Prompts longer than this many tokens are refused. */
    public static final int MAX_TOKENS = 1 << 20;

    /** The default prompt of generate: token ids 1, 2, 3, 4. */
    static final int[] GENERATE_DEFAULT = {1, 2, 3, 4};
    /** The default prompt length of bench: token ids 1..512. */
    static final int BENCH_DEFAULT_LENGTH = 512;

    /**
     * Checks the pairing of source and value.
     */
    public PromptInput {
        if ((value == null) != (source == Source.DEFAULT || source == Source.STDIN)) {
            throw new IllegalArgumentException(source + " with value " + value);
        }
    }

    /**
     * Whether the token ids can be known before the model is loaded: token ids given or by default, or
     * {@code --prompt} for a model that has no tokenizer.
     *
     * @param tokenizerPossible whether the model may have a tokenizer ({@code --model}, not {@code --synthetic})
     * @return {@code true} when {@link #resolve} needs neither a tokenizer nor standard input
     */
    boolean resolvableWithout(boolean tokenizerPossible) {
        return source == Source.DEFAULT || source == Source.IDS || source == Source.TEXT_OR_IDS && !tokenizerPossible;
    }

    /**
     * The prompt's token ids.
     *
     * @param bench       whether this is bench (its default prompt is longer)
     * @param encoder     the model's tokenizer (text to token ids, special tokens added), or {@code null}
     * @param noTokenizer why there is none, e.g. "synthetic models have none" (used when {@code encoder} is null)
     * @param stdin       standard input, read with {@code --prompt -}
     * @param launched    whether a launcher started this process as one rank of several
     * @return the token ids, at least one
     * @throws UsageException when the ids are malformed, the text needs a tokenizer that is missing, standard input
     *                        is empty or cannot be shared by the ranks, or the prompt is too long
     */
    public int[] resolve(boolean bench, Function<String, int[]> encoder, String noTokenizer, InputStream stdin,
                         boolean launched) {
        int[] ids = switch (source) {
            case DEFAULT -> bench ? range(BENCH_DEFAULT_LENGTH) : GENERATE_DEFAULT.clone();
            case IDS -> OptionValues.ids("--prompt-ids", value, 0, Integer.MAX_VALUE);
            case TEXT_OR_IDS -> textOrIds("--prompt", value, encoder, noTokenizer);
            case STDIN -> textOrIds("--prompt - (standard input)", readStdin(stdin, launched), encoder, noTokenizer);
        };
        if (ids.length > MAX_TOKENS) {
            throw new UsageException(optionName() + ": " + ids.length + " tokens, more than " + MAX_TOKENS);
        }
        return ids;
    }

    /**
     * The prompts of generate's batch: one per line of the text ({@code --prompt TEXT}, or standard input with
     * {@code --prompt -}), or {@code --prompt-ids} lists separated by {@code ;}; each resolved as {@link #resolve}
     * resolves one prompt.
     *
     * @param batch       the sequences of the batch ({@code --batch B}, at least 2)
     * @param encoder     the model's tokenizer, or {@code null}
     * @param noTokenizer why there is none
     * @param stdin       standard input, read with {@code --prompt -}
     * @param launched    whether a launcher started this process as one rank of several
     * @return {@code batch} prompts, each at least one token
     * @throws UsageException when there are not {@code batch} prompts, or one of them is malformed
     */
    public int[][] resolveBatch(int batch, Function<String, int[]> encoder, String noTokenizer, InputStream stdin,
                                boolean launched) {
        String[] parts = switch (source) {
            case DEFAULT -> throw new UsageException("--batch " + batch + " in generate takes " + batch + " prompts: "
                    + "one per line of --prompt TEXT (or of standard input with --prompt -), or --prompt-ids lists "
                    + "separated by ';'");
            case IDS -> value.split(";", -1);
            case TEXT_OR_IDS -> value.split("\\r?\\n", -1);
            case STDIN -> readStdin(stdin, launched).split("\\r?\\n", -1);
        };
        if (parts.length != batch) {
            throw new UsageException(optionName() + " gives " + parts.length + (parts.length == 1 ? " prompt" : " prompts")
                    + " but --batch is " + batch + ": give one prompt per sequence (" + (source == Source.IDS
                    ? "id lists separated by ';'" : "one per line") + ")");
        }
        int[][] prompts = new int[batch][];
        for (int i = 0; i < batch; i++) {
            String option = optionName() + " (prompt " + (i + 1) + " of " + batch + ")";
            prompts[i] = source == Source.IDS ? OptionValues.ids(option, parts[i], 0, Integer.MAX_VALUE)
                    : textOrIds(option, parts[i], encoder, noTokenizer);
            if (prompts[i].length > MAX_TOKENS) {
                throw new UsageException(option + ": " + prompts[i].length + " tokens, more than " + MAX_TOKENS);
            }
        }
        return prompts;
    }

    /**
     * The option that gave the prompt, for messages.
     *
     * @return e.g. {@code --prompt-ids}, or "the default prompt"
     */
    String optionName() {
        return switch (source) {
            case DEFAULT -> "the default prompt";
            case IDS -> "--prompt-ids";
            case TEXT_OR_IDS -> "--prompt";
            case STDIN -> "--prompt -";
        };
    }

    private static int[] textOrIds(String option, String text, Function<String, int[]> encoder, String noTokenizer) {
        if (encoder == null) {
            if (looksLikeIds(text)) {
                return OptionValues.ids(option, text, 0, Integer.MAX_VALUE);
            }
            throw new UsageException(option + " '" + abbreviated(text) + "': a text prompt needs a tokenizer, and "
                    + noTokenizer + "; give token ids, e.g. --prompt-ids 1,2,3");
        }
        if (text.isBlank()) {
            throw new UsageException(option + " is empty; give the prompt's text");
        }
        int[] ids = encoder.apply(text);
        if (ids.length == 0) {
            throw new UsageException(option + ": the text '" + abbreviated(text) + "' makes no tokens");
        }
        return ids;
    }

    /** Only digits, signs, commas and blanks: meant as token ids (a mistyped list is reported as one). */
    static boolean looksLikeIds(String text) {
        return text.matches("[\\s0-9,+-]*");
    }

    private static String abbreviated(String text) {
        String line = text.replaceAll("\\s+", " ").strip();
        return line.length() <= 40 ? line : line.substring(0, 37) + "...";
    }

    private static String readStdin(InputStream stdin, boolean launched) {
        if (launched) {
            throw new UsageException("--prompt - under a launcher: every rank is a process of its own and only one "
                    + "would read standard input; give the prompt with --prompt TEXT");
        }
        String text;
        try {
            text = new String(stdin.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("--prompt -: cannot read standard input", e);
        }
        if (text.endsWith("\r\n")) {
            text = text.substring(0, text.length() - 2);
        } else if (text.endsWith("\n")) {
            text = text.substring(0, text.length() - 1);
        }
        if (text.isBlank()) {
            throw new UsageException("--prompt -: standard input is empty; pipe the prompt in, e.g. "
                    + "echo 'Hello' | ar4j-llama ... --prompt -");
        }
        return text;
    }

    private static int[] range(int n) {
        int[] out = new int[n];
        for (int i = 0; i < n; i++) {
            out[i] = i + 1;
        }
        return out;
    }
}
