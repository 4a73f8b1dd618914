package dev.ar4j.examples.llama.engine;

import dev.ar4j.Communicator;
import dev.ar4j.examples.llama.model.SyntheticModels;
import dev.ar4j.examples.llama.model.TensorParallelLayout;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class EngineSettingsTest {

    @Test
    void stagingHoldsTheLargestAllReduceOfAStep() {
        TensorParallelLayout l8b = new TensorParallelLayout(SyntheticModels.byName("llama3-8b"), 2);
        // 512-token prompt: 512 x 4096 bf16 = 4 MiB of hidden rows; 3 verify rows of logits = 0.73 MiB.
        assertEquals(Communicator.DEFAULT_STAGING_BYTES, new EngineSettings(l8b, 2048, 512, 3, false, true, 1)
                .stagingBytes());
        // Keeping logits keeps the prompt's last 8 rows only: 8 x 128256 bf16 = 1.96 MiB.
        assertEquals(Communicator.DEFAULT_STAGING_BYTES, new EngineSettings(l8b, 2048, 512, 3, true, true, 1)
                .stagingBytes());
        // A prompt of 8192 in chunks of 1024: the hidden rows of one chunk, 8 MiB.
        assertEquals(Math.max(Communicator.DEFAULT_STAGING_BYTES, 8L << 20),
                new EngineSettings(l8b, 8200, 8192, 3, false, true, 1, false, 1024).stagingBytes());
        // The same prompt in one chunk of the default 8192 tokens: 8192 x 4096 bf16 = 64 MiB.
        assertEquals(64L << 20, new EngineSettings(l8b, 8200, 8192, 3, false, true, 1).stagingBytes());
        TensorParallelLayout v = new TensorParallelLayout(SyntheticModels.byName("verify-7168"), 2);
        // 1024-token prompt: 1024 x 7168 bf16 = 14 MiB.
        assertEquals(14L << 20, new EngineSettings(v, 2048, 1024, 3, false, true, 1).stagingBytes());
    }

    @Test
    void aBatchSizesTheStepsAndIsChecked() {
        TensorParallelLayout l = new TensorParallelLayout(SyntheticModels.byName("tiny"), 1);
        EngineSettings one = new EngineSettings(l, 64, 8, 3, false, true, 1);
        assertEquals(1, one.batch());
        EngineSettings eight = one.withBatch(8);
        assertEquals(8, eight.stepTokens(false), "decode: one token of each sequence");
        assertEquals(24, eight.stepTokens(true), "verify: the draft of each sequence");
        assertEquals(24, eight.maxTokens(), "the verify step is the longest");
        assertEquals(24, eight.logitRows(), "every token of a verify step gets its logits");
        assertEquals(64, new EngineSettings(l, 64, 8, 0, false, true, 1).withBatch(64).maxTokens());
        IllegalArgumentException none = assertThrows(IllegalArgumentException.class, () -> one.withBatch(0));
        assertTrue(none.getMessage().contains("a batch of 0 sequences") && none.getMessage().contains("1.."
                + EngineSettings.MAX_BATCH), none.getMessage());
        assertThrows(IllegalArgumentException.class, () -> one.withBatch(EngineSettings.MAX_BATCH + 1));
    }

    @Test
    void sizesAreChecked() {
        TensorParallelLayout l = new TensorParallelLayout(SyntheticModels.byName("tiny"), 1);
        assertEquals(8, new EngineSettings(l, 64, 8, 3, false, true, 1).maxTokens());
        assertEquals(5, new EngineSettings(l, 64, 2, 5, false, true, 1).maxTokens());
        assertThrows(IllegalArgumentException.class, () -> new EngineSettings(l, 64, 65, 3, false, true, 1));
        assertThrows(IllegalArgumentException.class, () -> new EngineSettings(l, 64, 8, -1, false, true, 1));
    }

    @Test
    void promptsRunInChunksOfAboutEqualSize() {
        TensorParallelLayout l = new TensorParallelLayout(SyntheticModels.byName("tiny"), 1);
        EngineSettings s = new EngineSettings(l, 2048, 2048, 3, true, true, 1, false, 1024);
        assertEquals(1024, s.maxTokens());
        assertEquals(8, s.logitRows());
        org.junit.jupiter.api.Assertions.assertArrayEquals(new int[] {1000}, s.prefillChunks(1000));
        org.junit.jupiter.api.Assertions.assertArrayEquals(new int[] {1024}, s.prefillChunks(1024));
        org.junit.jupiter.api.Assertions.assertArrayEquals(new int[] {513, 512}, s.prefillChunks(1025));
        org.junit.jupiter.api.Assertions.assertArrayEquals(new int[] {1024, 1024}, s.prefillChunks(2048));
        EngineSettings small = new EngineSettings(l, 64, 40, 0, false, true, 1, false, 16);
        org.junit.jupiter.api.Assertions.assertArrayEquals(new int[] {14, 13, 13}, small.prefillChunks(40));
        assertEquals(16, small.maxTokens());
        assertEquals(1, small.logitRows());
        assertThrows(IllegalArgumentException.class, () -> new EngineSettings(l, 64, 40, 0, false, true, 1, false, 15));
    }

    @Test
    void aShardAloneRunsOnACommunicatorOfOneRank() {
        TensorParallelLayout l8b = new TensorParallelLayout(SyntheticModels.byName("llama3-8b"), 4);
        EngineSettings whole = new EngineSettings(l8b, 2048, 512, 3, false, true, 1);
        assertFalse(whole.shardAlone());
        assertEquals(4, whole.worldSize());
        EngineSettings shard = new EngineSettings(l8b, 2048, 512, 3, false, true, 1, true);
        assertTrue(shard.shardAlone());
        assertEquals(1, shard.worldSize());
        // The same buffers as rank 0 of the TP 4 step: staging for the padded vocabulary's logits and the hidden rows.
        assertEquals(whole.stagingBytes(), shard.stagingBytes());
        assertEquals(whole.maxTokens(), shard.maxTokens());
        TensorParallelLayout one = new TensorParallelLayout(SyntheticModels.byName("tiny"), 1);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new EngineSettings(one, 64, 8, 3, false, true, 1, true));
        assertTrue(e.getMessage().contains("at least 2 ranks"), e.getMessage());
    }
}
