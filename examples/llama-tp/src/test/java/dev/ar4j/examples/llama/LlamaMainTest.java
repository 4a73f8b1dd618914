package dev.ar4j.examples.llama;

import dev.ar4j.examples.llama.cli.LlamaOptions;
import dev.ar4j.examples.llama.cli.OptionsParser;
import dev.ar4j.examples.llama.config.SyntheticModels;
import dev.ar4j.examples.llama.weights.TensorParallelLayout;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

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

    @Test
    void helpPrintsTheUsage() {
        assertEquals(0, run("--help"));
        assertTrue(out.toString(StandardCharsets.UTF_8).contains("usage: ar4j-llama"));
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
        LlamaOptions o = OptionsParser.parse("--synthetic", "llama3-8b", "--mode", "bench", "--tp-shard-of", "2");
        TensorParallelLayout layout = new TensorParallelLayout(SyntheticModels.byName("llama3-8b"), o.splitDegree());
        String d = LlamaMain.describe(o, layout);
        // Rank 0's weights of TP 2: half of every split matrix and half of the (padded) vocabulary, norms whole.
        assertTrue(d.contains("rank 0's shard of tp 2, alone (world size 1): 7.48 GiB of bf16 weights"), d);
        String whole = LlamaMain.describe(OptionsParser.parse("--synthetic", "llama3-8b", "--mode", "bench", "--tp", "2"),
                layout);
        assertTrue(whole.contains("tp 2: 7.48 GiB of bf16 weights per rank"), whole);
        String note = Runner.shardNote(2);
        assertTrue(note.startsWith("rank 0's shard of TP 2, alone: a projection, no communication"), note);
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
