package dev.ar4j.examples.llama.model;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TensorParallelLayoutTest {

    static LlamaConfig small(int heads, int kvHeads, int inter, int vocab) {
        return new LlamaConfig(64, inter, 2, heads, kvHeads, 8, vocab, 128, 1e-5, 10000, null, false, "bfloat16");
    }

    @Test
    void splitsHeadsKvHeadsAndTheMlp() {
        TensorParallelLayout l = new TensorParallelLayout(SyntheticModels.byName("llama3-8b"), 4);
        assertEquals(8, l.headsPerRank());
        assertEquals(2, l.kvHeadsPerRank());
        assertEquals(3584, l.intermediatePerRank());
        assertEquals(1024, l.queryWidthPerRank());
        assertEquals(256, l.keyValueWidthPerRank());
        assertEquals(1536, l.qkvWidthPerRank());
        assertEquals(7168, l.gateUpWidthPerRank());
        assertEquals(32064, l.vocabPerRank());
        assertEquals(128256, l.paddedVocab());
        assertEquals(96192, l.vocabStart(3));
        assertEquals(128256, l.vocabEnd(3));
    }

    @Test
    void padsTheVocabularyToAlignedEqualShards() {
        TensorParallelLayout l = new TensorParallelLayout(small(4, 2, 16, 1001), 2);
        assertEquals(504, l.vocabPerRank());
        assertEquals(1008, l.paddedVocab());
        assertEquals(0, l.paddedVocab() % 2);
        assertEquals(0, l.vocabPerRank() % TensorParallelLayout.VOCAB_ALIGNMENT);
        assertEquals(504, l.vocabEnd(0));
        assertEquals(504, l.vocabStart(1));
        assertEquals(1001, l.vocabEnd(1));
        // More ranks than vocabulary rows: a rank may hold only padding.
        TensorParallelLayout tiny = new TensorParallelLayout(small(4, 4, 16, 5), 4);
        assertEquals(8, tiny.vocabPerRank());
        assertEquals(5, tiny.vocabEnd(0));
        assertEquals(8, tiny.vocabStart(1));
        assertEquals(8, tiny.vocabEnd(1));
        assertThrows(IllegalArgumentException.class, () -> tiny.vocabStart(4));
    }

    @Test
    void refusesADegreeThatDoesNotDivideWithTheReason() {
        IllegalArgumentException heads = assertThrows(IllegalArgumentException.class,
                () -> new TensorParallelLayout(small(6, 6, 12, 10), 4));
        assertTrue(heads.getMessage().contains("num_attention_heads 6"), heads.getMessage());
        assertTrue(heads.getMessage().contains("whole attention heads"), heads.getMessage());
        // 6 divides the 12 heads but neither divides nor is a multiple of the 4 KV heads.
        IllegalArgumentException kv = assertThrows(IllegalArgumentException.class,
                () -> new TensorParallelLayout(small(12, 4, 12, 10), 6));
        assertTrue(kv.getMessage().contains("num_key_value_heads 4"), kv.getMessage());
        assertTrue(kv.getMessage().contains("replicated"), kv.getMessage());
        IllegalArgumentException mlp = assertThrows(IllegalArgumentException.class,
                () -> new TensorParallelLayout(small(4, 4, 18, 10), 4));
        assertTrue(mlp.getMessage().contains("intermediate_size 18"), mlp.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new TensorParallelLayout(small(4, 4, 16, 10), 0));
    }

    @Test
    void everyRanksQueryHeadsReadItsOwnKvHeads() {
        LlamaConfig c = small(16, 4, 16, 10);
        for (int tp : new int[] {1, 2, 4, 8, 16}) {
            TensorParallelLayout l = new TensorParallelLayout(c, tp);
            int group = l.headsPerRank() / l.kvHeadsPerRank();
            for (int rank = 0; rank < tp; rank++) {
                for (int local = 0; local < l.headsPerRank(); local++) {
                    int globalKv = l.kvHeadOf(l.firstHead(rank) + local);
                    assertEquals(l.firstKvHead(rank) + local / group, globalKv, "tp " + tp + " rank " + rank);
                }
            }
        }
    }

    @Test
    void replicatesKvHeadsWhenTheDegreeIsAMultipleOfThem() {
        // llama3-8b (32 heads, 8 KV heads) at TP 16: each KV head on 2 ranks, each rank 2 query heads of one group.
        TensorParallelLayout l = new TensorParallelLayout(SyntheticModels.byName("llama3-8b"), 16);
        assertEquals(2, l.headsPerRank());
        assertEquals(1, l.kvHeadsPerRank());
        assertEquals(2, l.kvReplicas());
        assertEquals(128, l.keyValueWidthPerRank());
        assertEquals(2 * 128 + 2 * 128, l.qkvWidthPerRank());
        for (int rank = 0; rank < 16; rank++) {
            assertEquals(rank / 2, l.firstKvHead(rank), "rank " + rank);
        }
        // vLLM's rule: 4 KV heads at TP 8 (8 heads): ranks 2k and 2k + 1 hold KV head k.
        TensorParallelLayout small = new TensorParallelLayout(small(8, 4, 16, 4001), 8);
        assertEquals(1, small.headsPerRank());
        assertEquals(1, small.kvHeadsPerRank());
        assertEquals(2, small.kvReplicas());
        assertEquals(3, small.firstKvHead(7));
        // Without replication nothing changes.
        TensorParallelLayout four = new TensorParallelLayout(small(8, 4, 16, 4001), 4);
        assertEquals(1, four.kvReplicas());
        assertEquals(3, four.firstKvHead(3));
        // MHA (KV heads = heads) at any degree that divides the heads.
        TensorParallelLayout mha = new TensorParallelLayout(small(8, 8, 16, 10), 8);
        assertEquals(1, mha.kvHeadsPerRank());
        assertEquals(1, mha.kvReplicas());
        assertEquals(5, mha.firstKvHead(5));
    }

    @Test
    void padsAVocabularyTheDegreeDoesNotDivide() {
        // 4001 = 4 * 1000 + 1 = 8 * 500 + 1: every rank holds real rows, the last ones fewer, padding zero rows.
        for (int tp : new int[] {4, 8}) {
            TensorParallelLayout l = new TensorParallelLayout(small(8, 2, 16, 4001), tp);
            assertEquals(0, l.vocabPerRank() % TensorParallelLayout.VOCAB_ALIGNMENT);
            assertTrue((long) l.vocabPerRank() * tp >= 4001);
            int covered = 0;
            for (int rank = 0; rank < tp; rank++) {
                assertEquals(covered, l.vocabStart(rank), "tp " + tp + " rank " + rank + " starts where the last ended");
                assertTrue(l.vocabEnd(rank) > l.vocabStart(rank), "tp " + tp + " rank " + rank + " holds real rows");
                covered = l.vocabEnd(rank);
                if (rank < tp - 1) {
                    assertEquals(l.vocabStart(rank) + l.vocabPerRank(), l.vocabEnd(rank));
                }
            }
            assertEquals(4001, covered);
            assertTrue(l.paddedVocab() > 4001, "tp " + tp + " pads");
        }
        assertEquals(1008, new TensorParallelLayout(small(8, 2, 16, 4001), 4).vocabPerRank());
        assertEquals(504, new TensorParallelLayout(small(8, 2, 16, 4001), 8).vocabPerRank());
    }

    @Test
    void verifyShapeMakesTheStatedAllReduces() {
        LlamaConfig c = SyntheticModels.byName("verify-7168");
        assertEquals(43008, 3L * c.hiddenSize() * 2);
        assertEquals(122, 2 * c.numHiddenLayers());
        TensorParallelLayout l = new TensorParallelLayout(c, 2);
        assertEquals(28, l.headsPerRank());
        assertEquals(4, l.kvHeadsPerRank());
    }
}
