package dev.ar4j.examples.llama.model;

import dev.ar4j.examples.llama.model.WeightName.Kind;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The sharding arithmetic on values: each tensor element is its own global index, every rank's
 * weights are filled from the plan, and the result is checked against the Megatron split written
 * out by hand.
 */
class ShardPlanTest {

    static final LlamaConfig C = new LlamaConfig(16, 24, 2, 4, 2, 4, 37, 64, 1e-5, 10000, null, false, "bfloat16");

    /** Fills the rank's weights from tensors whose element (r, c) is {@code r * cols + c}; unfilled = -1. */
    static Map<WeightName, long[]> materialise(ShardPlan plan) {
        Map<WeightName, long[]> out = new HashMap<>();
        plan.shapes().forEach((w, s) -> {
            long[] a = new long[(int) plan.elements(w)];
            java.util.Arrays.fill(a, -1);
            out.put(w, a);
        });
        for (ShardPiece p : plan.pieces()) {
            long[] t = out.get(p.target());
            for (long r = 0; r < p.rows(); r++) {
                for (long c = 0; c < p.cols(); c++) {
                    long source = p.sourceOffset(r, 1) + c;
                    long target = p.targetOffset(r, 1) + c;
                    assertEquals(-1, t[(int) target], "target element written twice: " + p);
                    t[(int) target] = source;
                }
            }
        }
        return out;
    }

    @Test
    void columnParallelQkvHoldsTheRanksHeads() {
        // TP 4 replicates C's 2 KV heads: ranks 0 and 1 hold KV head 0, ranks 2 and 3 KV head 1.
        for (int tp : new int[] {1, 2, 4}) {
            TensorParallelLayout l = new TensorParallelLayout(C, tp);
            for (int rank = 0; rank < tp; rank++) {
                long[] qkv = materialise(ShardPlan.forRank(l, rank)).get(WeightName.of(Kind.QKV, 1));
                int h = C.hiddenSize();
                int q = l.queryWidthPerRank();
                int kv = l.keyValueWidthPerRank();
                int kvFirst = (tp <= C.numKeyValueHeads() ? rank * l.kvHeadsPerRank() : rank / (tp / 2)) * C.headDim();
                for (int row = 0; row < l.qkvWidthPerRank(); row++) {
                    long expectedRow = row < q ? rank * q + row
                            : row < q + kv ? kvFirst + (row - q) : kvFirst + (row - q - kv);
                    for (int c = 0; c < h; c++) {
                        assertEquals(expectedRow * h + c, qkv[row * h + c], "tp " + tp + " rank " + rank + " row " + row);
                    }
                }
            }
        }
    }

    @Test
    void rowParallelOutAndDownHoldTheRanksColumns() {
        TensorParallelLayout l = new TensorParallelLayout(C, 2);
        for (int rank = 0; rank < 2; rank++) {
            Map<WeightName, long[]> w = materialise(ShardPlan.forRank(l, rank));
            long[] o = w.get(WeightName.of(Kind.OUT_PROJ, 0));
            long[] down = w.get(WeightName.of(Kind.DOWN_PROJ, 0));
            int q = l.queryWidthPerRank();
            int inter = l.intermediatePerRank();
            for (int row = 0; row < C.hiddenSize(); row++) {
                for (int c = 0; c < q; c++) {
                    assertEquals((long) row * C.queryWidth() + rank * q + c, o[row * q + c]);
                }
                for (int c = 0; c < inter; c++) {
                    assertEquals((long) row * C.intermediateSize() + rank * inter + c, down[row * inter + c]);
                }
            }
        }
    }

    @Test
    void gateThenUpRowsOfTheRank() {
        TensorParallelLayout l = new TensorParallelLayout(C, 2);
        long[] gu = materialise(ShardPlan.forRank(l, 1)).get(WeightName.of(Kind.GATE_UP, 0));
        int inter = l.intermediatePerRank();
        int h = C.hiddenSize();
        assertEquals((long) inter * h, gu[0], "gate row 0 of rank 1 is global row 12");
        assertEquals((long) inter * h, gu[inter * h], "up row 0 of rank 1 is global row 12 of up");
        assertEquals(2L * inter * h, gu.length);
    }

    @Test
    void vocabularyShardsCoverEveryRowOnceAndPadWithZeros() {
        // 37 rows: TP 2 pads 3 rows (2 x 24 = 48), TP 4 has a last rank of padding only (16 rows a rank).
        for (int tp : new int[] {1, 2, 4}) {
            TensorParallelLayout l = new TensorParallelLayout(C, tp);
            boolean[] seen = new boolean[C.vocabSize()];
            for (int rank = 0; rank < tp; rank++) {
                Map<WeightName, long[]> w = materialise(ShardPlan.forRank(l, rank));
                long[] e = w.get(WeightName.model(Kind.EMBEDDING));
                long[] head = w.get(WeightName.model(Kind.LM_HEAD));
                assertArrayEquals(e, head, "untied LM head is sharded as the embedding");
                for (int row = 0; row < l.vocabPerRank(); row++) {
                    long first = e[row * C.hiddenSize()];
                    int id = l.vocabStart(rank) + row;
                    if (id < C.vocabSize()) {
                        assertEquals((long) id * C.hiddenSize(), first);
                        seen[id] = true;
                    } else {
                        assertEquals(-1, first, "padding row " + id + " is left to the zero fill");
                    }
                }
            }
            for (int id = 0; id < seen.length; id++) {
                assertTrue(seen[id], "vocabulary row " + id + " at tp " + tp);
            }
        }
    }

    @Test
    void replicatedNormsAndTiedHead() {
        LlamaConfig tied = new LlamaConfig(16, 24, 1, 4, 2, 4, 37, 64, 1e-5, 10000, null, true, "bfloat16");
        TensorParallelLayout l = new TensorParallelLayout(tied, 2);
        ShardPlan p = ShardPlan.forRank(l, 1);
        assertEquals(WeightName.model(Kind.EMBEDDING), p.lmHead());
        assertTrue(p.shapes().keySet().stream().noneMatch(w -> w.kind() == Kind.LM_HEAD));
        assertTrue(p.pieces().stream().noneMatch(x -> x.tensor().equals(LlamaTensors.LM_HEAD)));
        long[] norm = materialise(p).get(WeightName.model(Kind.FINAL_NORM));
        for (int i = 0; i < 16; i++) {
            assertEquals(i, norm[i]);
        }
        List<String> used = p.pieces().stream().map(ShardPiece::tensor).distinct().toList();
        assertEquals(LlamaTensors.expected(tied).size(), used.size(), "every expected tensor is read: " + used);
    }

    /**
     * What {@code --tp-shard-of N} loads: rank 0's plan of the TP N split, whose matrices are those
     * of the whole model cut N ways, whose vocabulary is the first shard, and whose norms are whole.
     */
    @Test
    void rankZerosShardOfTpNHoldsAnNthOfEverySplitMatrix() {
        LlamaConfig c = dev.ar4j.examples.llama.model.SyntheticModels.byName("llama3-8b");
        ShardPlan whole = ShardPlan.forRank(new TensorParallelLayout(c, 1), 0);
        for (int n : new int[] {2, 4, 8}) {
            TensorParallelLayout l = new TensorParallelLayout(c, n);
            ShardPlan shard = ShardPlan.forRank(l, 0);
            assertEquals(0, shard.rank());
            assertEquals(n, shard.layout().tp());
            for (Kind k : new Kind[] {Kind.QKV, Kind.OUT_PROJ, Kind.GATE_UP, Kind.DOWN_PROJ}) {
                WeightName w = WeightName.of(k, 0);
                assertEquals(whole.elements(w), n * shard.elements(w), "tp " + n + " " + w);
            }
            WeightName norm = WeightName.of(Kind.INPUT_NORM, 3);
            assertEquals(whole.elements(norm), shard.elements(norm));
            assertEquals(0, l.vocabStart(0));
            assertEquals(l.vocabPerRank(), l.vocabEnd(0));
            assertArrayEquals(new long[] {l.vocabPerRank(), c.hiddenSize()}, shard.shapes().get(shard.lmHead()));
            // The weights the shard streams per step: an Nth of the model's, plus the replicated norms.
            long norms = 2L * (2L * c.numHiddenLayers() + 1) * c.hiddenSize();
            long padding = 2L * 2 * (l.paddedVocab() - c.vocabSize()) * c.hiddenSize();
            assertEquals(whole.bf16Bytes() - norms + padding, n * (shard.bf16Bytes() - norms), "tp " + n);
        }
    }

    @Test
    void bytesPerRankSumToTheModelPlusPadding() {
        TensorParallelLayout l = new TensorParallelLayout(C, 2);
        long total = ShardPlan.forRank(l, 0).bf16Bytes() + ShardPlan.forRank(l, 1).bf16Bytes();
        long norms = 2L * C.hiddenSize() * (2L * C.numHiddenLayers() + 1);
        long padding = 2L * 2 * (l.paddedVocab() - C.vocabSize()) * C.hiddenSize();
        assertEquals(2 * C.parameterCount() + norms + padding, total);
    }
}
