package dev.ar4j.examples.llama.model;

import dev.ar4j.examples.llama.model.WeightName.Kind;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Which blocks of which checkpoint tensors one rank holds, and the shapes of its weights
 * ({@link TensorParallelLayout} says why they are split so). The same plan drives loading from
 * safetensors and making synthetic weights, so both shard the same way.
 */
public final class ShardPlan {

    private final TensorParallelLayout layout;
    private final int rank;
    private final List<ShardPiece> pieces;
    private final Map<WeightName, long[]> shapes;

    private ShardPlan(TensorParallelLayout layout, int rank, List<ShardPiece> pieces, Map<WeightName, long[]> shapes) {
        this.layout = layout;
        this.rank = rank;
        this.pieces = pieces;
        this.shapes = shapes;
    }

    /**
     * The plan of one rank.
     *
     * @param layout the split
     * @param rank   the rank, 0 to {@code tp - 1}
     * @return its pieces and weight shapes
     */
    public static ShardPlan forRank(TensorParallelLayout layout, int rank) {
        layout.checkRank(rank);
        LlamaConfig c = layout.config();
        long h = c.hiddenSize();
        List<ShardPiece> pieces = new ArrayList<>();
        Map<WeightName, long[]> shapes = new LinkedHashMap<>();

        WeightName embedding = WeightName.model(Kind.EMBEDDING);
        shapes.put(embedding, new long[] {layout.vocabPerRank(), h});
        vocabRows(pieces, layout, rank, LlamaTensors.EMBED, embedding);

        long q = layout.queryWidthPerRank();
        long kv = layout.keyValueWidthPerRank();
        long inter = layout.intermediatePerRank();
        // The rank's KV heads (replicated ones included): the rows of k_proj and v_proj its query heads read.
        long kvRow = (long) layout.firstKvHead(rank) * c.headDim();
        for (int l = 0; l < c.numHiddenLayers(); l++) {
            WeightName inNorm = WeightName.of(Kind.INPUT_NORM, l);
            shapes.put(inNorm, new long[] {h});
            pieces.add(new ShardPiece(LlamaTensors.layer(l, "input_layernorm.weight"), inNorm, 0, 1, 0, h, h, 0));

            WeightName qkv = WeightName.of(Kind.QKV, l);
            shapes.put(qkv, new long[] {layout.qkvWidthPerRank(), h});
            pieces.add(new ShardPiece(LlamaTensors.layer(l, "self_attn.q_proj.weight"), qkv, rank * q, q, 0, h, h, 0));
            pieces.add(new ShardPiece(LlamaTensors.layer(l, "self_attn.k_proj.weight"), qkv, kvRow, kv, 0, h, h, q));
            pieces.add(new ShardPiece(LlamaTensors.layer(l, "self_attn.v_proj.weight"), qkv, kvRow, kv, 0, h, h,
                    q + kv));

            WeightName out = WeightName.of(Kind.OUT_PROJ, l);
            shapes.put(out, new long[] {h, q});
            pieces.add(new ShardPiece(LlamaTensors.layer(l, "self_attn.o_proj.weight"), out, 0, h, rank * q, q,
                    c.queryWidth(), 0));

            WeightName postNorm = WeightName.of(Kind.POST_NORM, l);
            shapes.put(postNorm, new long[] {h});
            pieces.add(new ShardPiece(LlamaTensors.layer(l, "post_attention_layernorm.weight"), postNorm, 0, 1, 0, h, h,
                    0));

            WeightName gateUp = WeightName.of(Kind.GATE_UP, l);
            shapes.put(gateUp, new long[] {2 * inter, h});
            pieces.add(new ShardPiece(LlamaTensors.layer(l, "mlp.gate_proj.weight"), gateUp, rank * inter, inter, 0, h,
                    h, 0));
            pieces.add(new ShardPiece(LlamaTensors.layer(l, "mlp.up_proj.weight"), gateUp, rank * inter, inter, 0, h, h,
                    inter));

            WeightName down = WeightName.of(Kind.DOWN_PROJ, l);
            shapes.put(down, new long[] {h, inter});
            pieces.add(new ShardPiece(LlamaTensors.layer(l, "mlp.down_proj.weight"), down, 0, h, rank * inter, inter,
                    c.intermediateSize(), 0));
        }
        WeightName finalNorm = WeightName.model(Kind.FINAL_NORM);
        shapes.put(finalNorm, new long[] {h});
        pieces.add(new ShardPiece(LlamaTensors.FINAL_NORM, finalNorm, 0, 1, 0, h, h, 0));
        if (!c.tieWordEmbeddings()) {
            WeightName head = WeightName.model(Kind.LM_HEAD);
            shapes.put(head, new long[] {layout.vocabPerRank(), h});
            vocabRows(pieces, layout, rank, LlamaTensors.LM_HEAD, head);
        }
        return new ShardPlan(layout, rank, List.copyOf(pieces), java.util.Collections.unmodifiableMap(shapes));
    }

    private static void vocabRows(List<ShardPiece> pieces, TensorParallelLayout layout, int rank, String tensor,
                                  WeightName target) {
        long h = layout.config().hiddenSize();
        long start = layout.vocabStart(rank);
        long real = layout.vocabEnd(rank) - start;
        if (real > 0) {
            pieces.add(new ShardPiece(tensor, target, start, real, 0, h, h, 0));
        }
    }

    /**
     * The split this plan is part of.
     *
     * @return the layout
     */
    public TensorParallelLayout layout() {
        return layout;
    }

    /**
     * The rank.
     *
     * @return the rank this plan is for
     */
    public int rank() {
        return rank;
    }

    /**
     * The blocks to copy, in checkpoint order (embedding, layers, final norm, LM head).
     *
     * @return the pieces
     */
    public List<ShardPiece> pieces() {
        return pieces;
    }

    /**
     * The rank's weights and their row-major shapes. Rows no piece fills (the vocabulary's padding) are zero.
     *
     * @return weight to shape, in load order
     */
    public Map<WeightName, long[]> shapes() {
        return shapes;
    }

    /**
     * Elements of one of the rank's weights.
     *
     * @param name the weight
     * @return the product of its shape
     * @throws IllegalArgumentException if the rank holds no such weight
     */
    public long elements(WeightName name) {
        long[] s = shapes.get(name);
        if (s == null) {
            throw new IllegalArgumentException("rank " + rank + " holds no weight " + name);
        }
        long n = 1;
        for (long d : s) {
            n *= d;
        }
        return n;
    }

    /**
     * The weight the LM head reads: {@code LM_HEAD}, or {@code EMBEDDING} when the embeddings are tied.
     *
     * @return the LM head's weight
     */
    public WeightName lmHead() {
        return WeightName.model(layout.config().tieWordEmbeddings() ? Kind.EMBEDDING : Kind.LM_HEAD);
    }

    /**
     * Bytes of bf16 weights this rank holds.
     *
     * @return the sum over its weights of {@code 2 * elements}
     */
    public long bf16Bytes() {
        long total = 0;
        for (WeightName w : shapes.keySet()) {
            total += 2 * elements(w);
        }
        return total;
    }
}
