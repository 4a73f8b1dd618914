package dev.ar4j.examples.llama.cli;

import dev.ar4j.examples.llama.engine.Sampling;
import dev.ar4j.examples.llama.model.SyntheticModels;
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

    private static final PromptInput DEFAULT = new PromptInput(PromptInput.Source.DEFAULT, null);

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
        assertEquals(AnswerFormat.IDS, o.output());
        assertEquals(PromptInput.Source.DEFAULT, o.promptInput().source());
    }

    @Test
    void benchWithEveryOption() {
        LlamaOptions o = LlamaCommand.parse("--model=/m", "--tp", "2", "--mode", "bench", "--prompt-ids", "5,6,7",
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
        assertNull(o.output());
    }

    @Test
    void promptRule() {
        // Without a tokenizer (synthetic models): --prompt is token ids, checked at once.
        LlamaOptions ids = LlamaCommand.parse("--synthetic", "tiny", "--prompt", "7, 8,9");
        assertArrayEquals(new int[] {7, 8, 9}, ids.prompt());
        assertEquals(PromptInput.Source.TEXT_OR_IDS, ids.promptInput().source());
        refused("--prompt 'Hello world': a text prompt needs a tokenizer, and synthetic models have none; give token "
                + "ids, e.g. --prompt-ids 1,2,3", "--synthetic", "tiny", "--prompt", "Hello world");
        refused("--output text needs the model's tokenizer", "--synthetic", "tiny", "--output", "text");
        // A model folder may have a tokenizer: --prompt waits for it (text there), --prompt-ids does not.
        LlamaOptions folder = LlamaCommand.parse("--model", "/m", "--prompt", "1,2,3");
        assertNull(folder.prompt());
        assertEquals(new PromptInput(PromptInput.Source.TEXT_OR_IDS, "1,2,3"), folder.promptInput());
        assertArrayEquals(new int[] {1, 2}, LlamaCommand.parse("--model", "/m", "--prompt-ids", "1,2").prompt());
        assertArrayEquals(new int[] {1, 2, 3, 4}, LlamaCommand.parse("--model", "/m").prompt());
        // --prompt - reads standard input, later.
        LlamaOptions stdin = LlamaCommand.parse("--synthetic", "tiny", "--prompt", "-");
        assertNull(stdin.prompt());
        assertEquals(PromptInput.Source.STDIN, stdin.promptInput().source());
        // Text may start with '-' or '@': it is neither an option nor an argument file.
        assertEquals("-h is not help", LlamaCommand.parse("--model", "/m", "--prompt", "-h is not help").promptInput()
                .value());
        assertEquals("-Version", LlamaCommand.parse("--model", "/m", "--prompt=-Version").promptInput().value());
        assertEquals("@pom.xml", LlamaCommand.parse("--model", "/m", "--prompt", "@pom.xml").promptInput().value());
        refused("--prompt and --prompt-ids exclude each other", "--synthetic", "tiny", "--prompt", "1", "--prompt-ids",
                "2");
    }

    @Test
    void maxNewTokensIsGeneratesStepsAndOutputPicksTheFormat() {
        assertEquals(7, LlamaCommand.parse("--synthetic", "tiny", "--max-new-tokens", "7").steps());
        assertEquals(7, LlamaCommand.parse("--synthetic", "tiny", "--steps=7").steps());
        refused("--max-new-tokens must be 1..16777216, got 0", "--synthetic", "tiny", "--max-new-tokens", "0");
        refused("--max-new-tokens is --steps by another name: give one of them", "--synthetic", "tiny", "--steps", "3",
                "--max-new-tokens", "4");
        refused("--max-new-tokens is generate's: bench times --steps N replays", "--synthetic", "tiny", "--mode",
                "bench", "--max-new-tokens", "4");
        assertEquals(AnswerFormat.IDS, LlamaCommand.parse("--synthetic", "tiny", "--output", "ids").output());
        assertEquals(AnswerFormat.TEXT, LlamaCommand.parse("--model", "/m", "--output", "text").output());
        assertNull(LlamaCommand.parse("--model", "/m").output());
        refused("--output: unknown format 'json'; accepted: text, ids", "--synthetic", "tiny", "--output", "json");
        refused("--output is how generate prints the answer; bench prints a table", "--synthetic", "tiny", "--mode",
                "bench", "--output", "ids");
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
        assertThrows(IllegalArgumentException.class, () -> new LlamaOptions(null, "tiny", 2, RunMode.BENCH, DEFAULT,
                new int[] {1}, 1, 1, List.of(CommMode.AR4J), false, null, 0, 0, 2, false, null, Sampling.GREEDY));
        assertThrows(IllegalArgumentException.class, () -> new LlamaOptions(null, "tiny", 1, RunMode.GENERATE, DEFAULT,
                new int[] {1}, 1, 0, List.of(CommMode.AR4J), false, null, 0, 0, 2, false, null, Sampling.GREEDY));
        assertThrows(IllegalArgumentException.class, () -> new LlamaOptions(null, "tiny", 1, RunMode.BENCH, DEFAULT,
                new int[] {1}, 1, 1, List.of(CommMode.AR4J), false, null, 0, 0, 1, false, null, Sampling.GREEDY));
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
        refused("--prompt-ids value 2: 'x' is not a whole number", "--synthetic", "tiny", "--prompt-ids", "1,x,3");
        refused("--prompt value 2 must be 0..2147483647, got 99999999999", "--synthetic", "tiny", "--prompt",
                "1,99999999999");
        refused("--prompt-ids is empty", "--synthetic", "tiny", "--prompt-ids", " ");
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
        var small = new dev.ar4j.examples.llama.model.LlamaConfig(tiny.hiddenSize(), tiny.intermediateSize(),
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
        assertTrue(vocab.getMessage().contains("--prompt: token 1 is 4096, outside the vocabulary of 4096"),
                vocab.getMessage());
    }

    @Test
    void samplingOptions() {
        assertEquals(Sampling.GREEDY, LlamaCommand.parse("--synthetic", "tiny").sampling());
        assertEquals(Sampling.GREEDY, LlamaCommand.parse("--synthetic", "tiny", "--temperature", "0").sampling());
        assertEquals(new Sampling(0.7, 50, 0.9, 99), LlamaCommand.parse("--synthetic", "tiny", "--temperature", "0.7",
                "--top-k", "50", "--top-p", "0.9", "--seed", "99").sampling());
        // The seed defaults to --seed's default; top-k and top-p to every token.
        assertEquals(new Sampling(1.5, 0, 1, 1234), LlamaCommand.parse("--synthetic", "tiny", "--temperature=1.5")
                .sampling());
        assertEquals(new Sampling(1, 0, 0.5, 1234), LlamaCommand.parse("--synthetic", "tiny", "--temperature", "1",
                "--top-p", "0.5").sampling());
    }

    @Test
    void samplingRefusals() {
        refused("--temperature must be a finite number >= 0 (0: greedy), got -1", "--synthetic", "tiny",
                "--temperature", "-1");
        refused("--temperature must be a finite number >= 0 (0: greedy), got NaN", "--synthetic", "tiny",
                "--temperature", "NaN");
        refused("--temperature must be a finite number >= 0 (0: greedy), got Infinity", "--synthetic", "tiny",
                "--temperature", "Infinity");
        refused("--temperature: 'warm' is not a number", "--synthetic", "tiny", "--temperature", "warm");
        refused("--temperature 1e-300: temperature 1.0E-300: outside the range of a float", "--synthetic", "tiny",
                "--temperature", "1e-300");
        refused("--top-k must be 0..2147483647, got -5", "--synthetic", "tiny", "--temperature", "1", "--top-k", "-5");
        refused("--top-p must be a number in (0, 1] (1: every token), got 0", "--synthetic", "tiny", "--temperature",
                "1", "--top-p", "0");
        refused("--top-p must be a number in (0, 1] (1: every token), got 1.01", "--synthetic", "tiny",
                "--temperature", "1", "--top-p", "1.01");
        refused("--top-k narrows the draw of --temperature T > 0", "--synthetic", "tiny", "--top-k", "5");
        refused("--top-p narrows the draw of --temperature T > 0", "--synthetic", "tiny", "--temperature", "0",
                "--top-p", "0.9");
        refused("bench times the greedy steps: leave them out", "--synthetic", "tiny", "--mode", "bench",
                "--temperature", "0.8");
        refused("--draft 2 checks the verify step against greedy decoding", "--synthetic", "tiny", "--temperature",
                "0.8", "--draft", "2");
        // The record itself refuses sampling outside generate or with a verify step.
        Sampling warm = new Sampling(0.8, 0, 1, 1);
        assertThrows(IllegalArgumentException.class, () -> new LlamaOptions(null, "tiny", 1, RunMode.BENCH, DEFAULT,
                new int[] {1}, 1, 1, List.of(CommMode.AR4J), false, null, 0, 0, 0, false, null, warm));
        assertThrows(IllegalArgumentException.class, () -> new LlamaOptions(null, "tiny", 1, RunMode.GENERATE, DEFAULT,
                new int[] {1}, 1, 2, List.of(CommMode.AR4J), false, null, 0, 0, 0, false, null, warm));
    }

    @Test
    void aBatchsSizeIsCheckedAndGenerateTakesItGreedilyWithoutVerify() {
        assertEquals(1, LlamaCommand.parse("--synthetic", "tiny", "--mode", "bench").batch());
        assertEquals(8, LlamaCommand.parse("--synthetic", "tiny", "--mode", "bench", "--batch", "8").batch());
        LlamaOptions generate = LlamaCommand.parse("--synthetic", "tiny", "--batch", "2", "--prompt-ids", "1,2;3");
        assertEquals(2, generate.batch());
        assertNull(generate.prompt(), "generate's batch prompts are resolved with the model (LlamaMain)");
        refused("a batch is generated greedily, without a verify step; leave out --draft", "--synthetic", "tiny",
                "--batch", "2", "--draft", "2");
        refused("leave out --temperature", "--synthetic", "tiny", "--batch", "2", "--temperature", "0.7");
        refused("--batch", "--synthetic", "tiny", "--mode", "bench", "--batch", "0");
        refused("--batch", "--synthetic", "tiny", "--mode", "bench", "--batch", "257");
    }
}
