package dev.ar4j.examples.llama;

import dev.ar4j.examples.llama.cli.LlamaOptions;
import dev.ar4j.examples.llama.cli.LlamaCommand;
import dev.ar4j.examples.llama.model.SyntheticModels;
import dev.ar4j.examples.llama.model.TensorParallelLayout;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The command's exit codes and messages for what is refused before any GPU work. */
class LlamaMainTest {

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    private int run(String... args) {
        return LlamaMain.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    private String errors() {
        return err.toString(StandardCharsets.UTF_8);
    }

    private String printed() {
        return out.toString(StandardCharsets.UTF_8);
    }

    @Test
    void helpPrintsTheUsageWithEveryOptionAndTheExitCodes() {
        assertEquals(0, run("--help"));
        String help = printed();
        assertTrue(help.startsWith("Usage: ar4j-llama (--model DIR | --synthetic tiny|llama3-8b|verify-7168)"), help);
        for (String option : new String[] {"--model", "--synthetic", "--tp", "--mode", "--prompt", "--prompt-ids",
            "--max-new-tokens", "--output", "--steps", "--draft",
            "--comm", "--share-gpu", "--devices", "--context", "--seed", "--tp-shard-of", "--profile", "--help",
            "--version"}) {
            assertTrue(help.contains(option), option + " in --help:\n" + help);
        }
        for (String code : new String[] {"0   done", "1   any other failure", "2   a usage error",
            "3   a model folder that cannot be used"}) {
            assertTrue(help.contains(code), code + " in --help:\n" + help);
        }
        assertTrue(help.contains("torchrun"), help);
        String flat = help.replaceAll("\\s+", " ");
        assertTrue(flat.contains("text where the model has a tokenizer"), help);
        assertTrue(flat.contains("- reads it from standard input"), help);
        assertTrue(flat.contains("a one-line summary on standard error"), help);
        assertTrue(help.contains("generate-completion"), help);
    }

    @Test
    void versionNamesTheExampleAndTheJava() {
        assertEquals(0, run("--version"));
        assertTrue(printed().startsWith("ar4j-llama "), printed());
        assertTrue(printed().contains("Java " + Runtime.version()), printed());
    }

    @Test
    void completionIsABashScript() {
        assertEquals(0, run("generate-completion"));
        assertTrue(printed().contains("complete -F"), printed());
        assertTrue(printed().contains("--tp-shard-of"), printed());
    }

    @Test
    void usageErrorsExitWith2() {
        assertEquals(2, run("--synthetic", "tiny", "--tp", "x"));
        assertTrue(errors().contains("--tp: 'x' is not a whole number"), errors());
        assertTrue(errors().contains("(try --help)"), errors());
    }

    @Test
    void aDegreeThatDoesNotSplitTheModelExitsWith2() {
        // TP 16 now runs (8 KV heads replicated twice, issue 29); 12 does not divide the 32 heads.
        assertEquals(2, run("--synthetic", "llama3-8b", "--tp", "12"));
        assertTrue(errors().contains("does not divide num_attention_heads 32"), errors());
    }

    @Test
    void tpShardOfIsBenchOnlyAndNamesItsDegree() {
        assertEquals(2, run("--synthetic", "llama3-8b", "--tp-shard-of", "2"));
        assertTrue(errors().contains("--tp-shard-of runs in --mode bench only"), errors());
        assertEquals(2, run("--synthetic", "llama3-8b", "--mode", "bench", "--tp-shard-of", "12"));
        assertTrue(errors().contains("--tp-shard-of 12: degree 12 does not divide num_attention_heads 32"), errors());
    }

    @Test
    void aShardAloneIsDescribedAsRankZerosShard() {
        LlamaOptions o = LlamaCommand.parse("--synthetic", "llama3-8b", "--mode", "bench", "--tp-shard-of", "2");
        TensorParallelLayout layout = new TensorParallelLayout(SyntheticModels.byName("llama3-8b"), o.splitDegree());
        String d = ModelDescription.of(o, layout);
        // Rank 0's weights of TP 2: half of every split matrix and half of the (padded) vocabulary, norms whole.
        assertTrue(d.contains("rank 0's shard of tp 2, alone (world size 1): 7.48 GiB of bf16 weights"), d);
        String whole = ModelDescription.of(LlamaCommand.parse("--synthetic", "llama3-8b", "--mode", "bench", "--tp", "2"),
                layout);
        assertTrue(whole.contains("tp 2: 7.48 GiB of bf16 weights per rank"), whole);
        String note = Runner.shardNote(2);
        assertTrue(note.startsWith("rank 0's shard of TP 2, alone: a projection, no communication"), note);
    }

    @Test
    void aRelativeModelFolderIsNamedAbsolute() {
        assertEquals(3, run("--model", "."));
        assertTrue(errors().contains("no config.json in the model folder " + Path.of("").toAbsolutePath()), errors());
    }

    private int runWithInput(String stdin, String... args) {
        return LlamaMain.run(args, new ByteArrayInputStream(stdin.getBytes(StandardCharsets.UTF_8)),
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    /** A model folder holding only a config.json (enough for everything before the weights). */
    private static Path configOnly(Path dir) throws IOException {
        Files.writeString(dir.resolve("config.json"), """
                {"hidden_size": 512, "intermediate_size": 1408, "num_hidden_layers": 4, "num_attention_heads": 8,
                 "num_key_value_heads": 4, "vocab_size": 4096, "max_position_embeddings": 64}""");
        return dir;
    }

    @Test
    void thePromptIsReadFromStandardInputWithPromptDash() {
        // 5 token ids from standard input: too many for 4 positions, which shows they were read (exit 2, no GPU).
        assertEquals(2, runWithInput("1,2,3,4,5\n", "--synthetic", "tiny", "--prompt", "-", "--context", "4", "--steps", "1"));
        assertTrue(errors().contains("the prompt (5 tokens)"), errors());
        assertEquals(2, runWithInput("", "--synthetic", "tiny", "--prompt", "-"));
        assertTrue(errors().contains("--prompt -: standard input is empty"), errors());
    }

    @Test
    void aTextPromptIsRefusedWithoutATokenizer(@TempDir Path dir) throws IOException {
        assertEquals(2, run("--synthetic", "tiny", "--prompt", "Hello"));
        assertTrue(errors().contains("a text prompt needs a tokenizer, and synthetic models have none"), errors());
        configOnly(dir);
        assertEquals(2, run("--model", dir.toString(), "--prompt", "Hello"));
        assertTrue(errors().contains("--prompt 'Hello': a text prompt needs a tokenizer"), errors());
        assertTrue(errors().contains("--prompt-ids 1,2,3"), errors());
        // Token ids need no tokenizer: the prompt passes and the context check (before any GPU work) speaks.
        assertEquals(2, run("--model", dir.toString(), "--prompt", "1,2,3", "--max-new-tokens", "62"));
        assertTrue(errors().contains("the prompt (3 tokens) + --steps (--max-new-tokens) 62"), errors());
    }

    @Test
    void aBadModelFolderExitsWith3(@TempDir Path dir) throws IOException {
        assertEquals(3, run("--model", dir.toString()));
        assertTrue(errors().contains("no config.json"), errors());
        Files.writeString(dir.resolve("config.json"), "{\"hidden_size\": 8}");
        assertEquals(3, run("--model", dir.toString()));
        assertTrue(errors().contains("num_attention_heads is missing"), errors());
    }
}
