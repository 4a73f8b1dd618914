package dev.ar4j.examples.llama.cli;

import dev.ar4j.examples.llama.config.SyntheticModels;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class LlamaCommandTest {

    private static void refused(String expected, String... args) {
        UsageException e = assertThrows(UsageException.class, () -> LlamaCommand.parse(args));
        assertTrue(e.getMessage().contains(expected), () -> "'" + e.getMessage() + "' does not say '" + expected + "'");
    }

    @Test
    void generateDefaults() {
        LlamaOptions o = LlamaCommand.parse("--synthetic", "tiny");
        assertEquals("tiny", o.synthetic());
        assertNull(o.model());
        assertEquals(1, o.tp());
        assertEquals(RunMode.GENERATE, o.mode());
        assertArrayEquals(new int[] {1, 2, 3, 4}, o.prompt());
        assertEquals(32, o.steps());
        assertEquals(0, o.draft());
        assertEquals(List.of(CommMode.AR4J), o.comms());
        assertArrayEquals(new int[] {0}, o.deviceOfRank());
    }

    @Test
    void benchWithEveryOption() {
        LlamaOptions o = LlamaCommand.parse("--model=/m", "--tp", "2", "--mode", "bench", "--prompt", "5,6,7",
                "--steps", "10", "--draft", "3", "--comm", "ar4j,nccl,nccl-symm", "--devices", "1,0", "--context",
                "64", "--seed", "-3");
        assertEquals(Path.of("/m"), o.model());
        assertEquals(2, o.tp());
        assertEquals(RunMode.BENCH, o.mode());
        assertArrayEquals(new int[] {5, 6, 7}, o.prompt());
        assertEquals(10, o.steps());
        assertEquals(3, o.draft());
        assertEquals(List.of(CommMode.AR4J, CommMode.NCCL, CommMode.NCCL_SYMM), o.comms());
        assertArrayEquals(new int[] {1, 0}, o.deviceOfRank());
        assertFalse(o.ranksShareGpu());
        assertEquals(64, o.context());
        assertEquals(-3, o.seed());
    }

    @Test
    void benchDefaultsAndSharedGpu() {
        LlamaOptions o = LlamaCommand.parse("--synthetic", "llama3-8b", "--mode", "bench", "--tp", "4", "--share-gpu");
        assertEquals(512, o.prompt().length);
        assertEquals(1000, o.steps());
        assertEquals(3, o.draft());
        assertArrayEquals(new int[] {0, 0, 0, 0}, o.deviceOfRank());
        assertTrue(o.ranksShareGpu());
    }

    @Test
    void tpShardOfRunsOneRankOfALargerSplitInBench() {
        LlamaOptions o = LlamaCommand.parse("--synthetic", "llama3-8b", "--mode", "bench", "--tp-shard-of", "2");
        assertEquals(1, o.tp());
        assertEquals(2, o.tpShardOf());
        assertEquals(2, o.splitDegree());
        assertTrue(o.shardAlone());
        assertArrayEquals(new int[] {0}, o.deviceOfRank());
        assertFalse(o.ranksShareGpu());
        // --tp 1 said aloud is the same; one device may be named.
        LlamaOptions d = LlamaCommand.parse("--synthetic", "llama3-8b", "--mode=bench", "--tp", "1", "--tp-shard-of=8",
                "--devices", "3");
        assertEquals(8, d.splitDegree());
        assertArrayEquals(new int[] {3}, d.deviceOfRank());
        // Without it, the split is --tp's.
        LlamaOptions whole = LlamaCommand.parse("--synthetic", "llama3-8b", "--mode", "bench", "--tp", "4");
        assertEquals(0, whole.tpShardOf());
        assertFalse(whole.shardAlone());
        assertEquals(4, whole.splitDegree());
        String usage = LlamaCommand.commandLine(new LlamaCommand()).getUsageMessage();
        assertTrue(usage.contains("--tp-shard-of=N"), usage);
        assertTrue(usage.contains("bench only"), usage);
    }

    @Test
    void tpShardOfIsRefusedWhereItCannotBeRight() {
        refused("--tp-shard-of runs in --mode bench only", "--synthetic", "tiny", "--tp-shard-of", "2");
        refused("--tp-shard-of runs in --mode bench only", "--synthetic", "tiny", "--mode", "generate",
                "--tp-shard-of", "2");
        refused("leave out --tp 2", "--synthetic", "tiny", "--mode", "bench", "--tp", "2", "--tp-shard-of", "2");
        refused("--tp-shard-of must be 2..64, got 1", "--synthetic", "tiny", "--mode", "bench", "--tp-shard-of", "1");
        refused("--tp-shard-of needs a value", "--synthetic", "tiny", "--mode", "bench", "--tp-shard-of");
        refused("--tp-shard-of: 'x' is not a whole number", "--synthetic", "tiny", "--mode", "bench",
                "--tp-shard-of", "x");
        refused("--devices names 2 GPUs but --tp is 1", "--synthetic", "tiny", "--mode", "bench", "--tp-shard-of", "2",
                "--devices", "0,1");
        // The record itself refuses what the parser refuses.
        assertThrows(IllegalArgumentException.class, () -> new LlamaOptions(null, "tiny", 2, RunMode.BENCH,
                new int[] {1}, 1, 1, List.of(CommMode.AR4J), false, null, 0, 0, 2, false));
        assertThrows(IllegalArgumentException.class, () -> new LlamaOptions(null, "tiny", 1, RunMode.GENERATE,
                new int[] {1}, 1, 0, List.of(CommMode.AR4J), false, null, 0, 0, 2, false));
        assertThrows(IllegalArgumentException.class, () -> new LlamaOptions(null, "tiny", 1, RunMode.BENCH,
                new int[] {1}, 1, 1, List.of(CommMode.AR4J), false, null, 0, 0, 1, false));
    }

    @Test
    void aModelFolderWithoutAParentBecomesAbsolute() {
        Path here = Path.of("").toAbsolutePath();
        assertEquals(here, LlamaCommand.parse("--model", ".").model());
        LlamaOptions named = LlamaCommand.parse("--model", "model");
        assertEquals(here.resolve("model"), named.model());
        assertEquals(here, named.model().getParent());
        assertEquals(here.resolve("b"), LlamaCommand.parse("--model", "a/../b").model());
    }

    @Test
    void errorsNameTheOption() {
        refused("give --model DIR or --synthetic NAME");
        refused("exclude each other", "--model", "/m", "--synthetic", "tiny");
        refused("--synthetic: unknown model 'huge'; accepted: " + String.join(", ", SyntheticModels.NAMES),
                "--synthetic", "huge");
        refused("unknown option --tpp", "--synthetic", "tiny", "--tpp", "2");
        refused("unexpected argument 'tiny'", "--synthetic", "tiny", "tiny");
        refused("--tp needs a value", "--synthetic", "tiny", "--tp");
        refused("--tp needs a value", "--synthetic", "tiny", "--tp", "--mode", "bench");
        refused("--tp: 'two' is not a whole number", "--synthetic", "tiny", "--tp", "two");
        refused("--tp must be 1..64, got 0", "--synthetic", "tiny", "--tp", "0");
        refused("--tp is given twice", "--synthetic", "tiny", "--tp", "1", "--tp=2");
        refused("--mode: unknown mode 'serve'", "--synthetic", "tiny", "--mode", "serve");
        refused("--comm: unknown value 'mpi'", "--synthetic", "tiny", "--comm", "mpi");
        refused("in --mode bench only", "--synthetic", "tiny", "--comm", "ar4j,nccl");
        refused("--comm names nccl twice", "--synthetic", "tiny", "--mode", "bench", "--comm", "nccl,nccl");
        refused("--prompt value 2", "--synthetic", "tiny", "--prompt", "1,x,3");
        refused("--prompt: value 2 of '1,,3' is empty", "--synthetic", "tiny", "--prompt", "1,,3");
        refused("--prompt value 1 must be 0..", "--synthetic", "tiny", "--prompt", "-1");
        refused("--draft must be 1..64", "--synthetic", "tiny", "--mode", "bench", "--draft", "0");
        refused("--draft must be 0..64", "--synthetic", "tiny", "--draft", "65");
        refused("--devices names 1 GPUs but --tp is 2", "--synthetic", "tiny", "--tp", "2", "--devices", "0");
        refused("--devices and --share-gpu exclude each other", "--synthetic", "tiny", "--share-gpu", "--devices", "0");
        refused("--share-gpu takes no value", "--synthetic", "tiny", "--share-gpu=yes");
        refused("--profile takes no value", "--synthetic", "tiny", "--mode", "bench", "--profile=1");
        refused("unknown option --tpp (try --help)", "--synthetic", "tiny", "--tpp=2");
        refused("unexpected argument 'x' (options start with --; try --help)", "--synthetic", "tiny", "x", "y");
    }

    @Test
    void checksAgainstTheModel() {
        var tiny = SyntheticModels.byName("tiny");
        LlamaCommand.parse("--synthetic", "tiny", "--context", "64", "--steps", "60").checkAgainst(tiny);
        UsageException room = assertThrows(UsageException.class, () -> LlamaCommand.parse("--synthetic", "tiny",
                "--context", "64", "--steps", "61").checkAgainst(tiny));
        assertTrue(room.getMessage().contains("need 65 positions, more than --context 64"), room.getMessage());
        UsageException max = assertThrows(UsageException.class, () -> LlamaCommand.parse("--synthetic", "tiny",
                "--context", "4096").checkAgainst(tiny));
        assertTrue(max.getMessage().contains("max_position_embeddings 2048"), max.getMessage());
        // Without --context: 2048, or the model's max_position_embeddings where that is smaller.
        LlamaOptions unset = LlamaCommand.parse("--synthetic", "tiny");
        assertEquals(0, unset.context());
        assertEquals(2048, unset.forModel(tiny).context());
        var small = new dev.ar4j.examples.llama.config.LlamaConfig(tiny.hiddenSize(), tiny.intermediateSize(),
                tiny.numHiddenLayers(), tiny.numAttentionHeads(), tiny.numKeyValueHeads(), tiny.headDim(),
                tiny.vocabSize(), 256, tiny.rmsNormEps(), tiny.ropeTheta(), tiny.ropeScaling(),
                tiny.tieWordEmbeddings(), tiny.torchDtype());
        LlamaOptions resolved = unset.forModel(small);
        assertEquals(256, resolved.context());
        resolved.checkAgainst(small);
        assertEquals(100, LlamaCommand.parse("--synthetic", "tiny", "--context", "100").forModel(small).context());
        assertEquals(4, LlamaCommand.parse("--synthetic", "tiny", "--mode", "bench", "--tp-shard-of", "4")
                .forModel(small).tpShardOf());
        UsageException vocab = assertThrows(UsageException.class, () -> LlamaCommand.parse("--synthetic", "tiny",
                "--prompt", "1,4096").forModel(tiny).checkAgainst(tiny));
        assertTrue(vocab.getMessage().contains("token 1 is 4096, outside the vocabulary of 4096"), vocab.getMessage());
    }
}
