package dev.ar4j.examples.llama.engine;

import dev.ar4j.Communicator;
import dev.ar4j.examples.llama.config.SyntheticModels;
import dev.ar4j.examples.llama.weights.TensorParallelLayout;
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
        // Keeping every prompt position's logits: 512 x 128256 bf16 = 125.25 MiB, rounded up to 126 MiB.
        assertEquals(126L << 20, new EngineSettings(l8b, 2048, 512, 3, true, true, 1).stagingBytes());
        TensorParallelLayout v = new TensorParallelLayout(SyntheticModels.byName("verify-7168"), 2);
        // 1024-token prompt: 1024 x 7168 bf16 = 14 MiB.
        assertEquals(14L << 20, new EngineSettings(v, 2048, 1024, 3, false, true, 1).stagingBytes());
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
