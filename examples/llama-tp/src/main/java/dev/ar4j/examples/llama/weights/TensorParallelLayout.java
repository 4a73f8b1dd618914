package dev.ar4j.examples.llama.weights;

import dev.ar4j.examples.llama.config.LlamaConfig;

/**
 * How a model is split over {@code tp} ranks, Megatron style: the query, key and value
 * projections and the MLP's gate and up projections column-parallel (each rank computes whole
 * heads and a slice of the MLP's width), the output and down projections row-parallel (each rank
 * contributes a partial sum, all-reduced), the embedding and the LM head vocabulary-parallel
 * (each rank holds {@link #vocabPerRank()} rows of the padded vocabulary; partial embeddings and
 * partial logits are all-reduced). Norm weights are replicated.
 *
 * @param config the model
 * @param tp     the tensor-parallel degree
 */
public record TensorParallelLayout(LlamaConfig config, int tp) {

    /** Each rank's vocabulary rows are a multiple of this (16-byte aligned rows of logits and shards). */
    public static final int VOCAB_ALIGNMENT = 8;

    /**
     * Checks that the degree splits the model.
     *
     * @throws IllegalArgumentException naming the dimension the degree does not divide and why it must
     */
    public TensorParallelLayout {
        if (tp < 1) {
            throw new IllegalArgumentException("the tensor-parallel degree must be at least 1, got " + tp);
        }
        if (config.numAttentionHeads() % tp != 0) {
            throw new IllegalArgumentException("--tp " + tp + " does not divide num_attention_heads "
                    + config.numAttentionHeads() + ": each rank computes whole attention heads");
        }
        if (config.numKeyValueHeads() % tp != 0) {
            throw new IllegalArgumentException("--tp " + tp + " does not divide num_key_value_heads "
                    + config.numKeyValueHeads() + ": each rank holds whole KV heads (with their query group), "
                    + "so the degree can be at most " + config.numKeyValueHeads() + " and must divide it");
        }
        if (config.intermediateSize() % tp != 0) {
            throw new IllegalArgumentException("--tp " + tp + " does not divide intermediate_size "
                    + config.intermediateSize() + ": each rank computes an equal slice of the MLP");
        }
    }

    /**
     * Query heads per rank.
     *
     * @return {@code num_attention_heads / tp}
     */
    public int headsPerRank() {
        return config.numAttentionHeads() / tp;
    }

    /**
     * Key/value heads per rank.
     *
     * @return {@code num_key_value_heads / tp}
     */
    public int kvHeadsPerRank() {
        return config.numKeyValueHeads() / tp;
    }

    /**
     * The MLP's width per rank.
     *
     * @return {@code intermediate_size / tp}
     */
    public int intermediatePerRank() {
        return config.intermediateSize() / tp;
    }

    /**
     * Query features per rank.
     *
     * @return {@code headsPerRank * head_dim}
     */
    public int queryWidthPerRank() {
        return headsPerRank() * config.headDim();
    }

    /**
     * Key (and value) features per rank.
     *
     * @return {@code kvHeadsPerRank * head_dim}
     */
    public int keyValueWidthPerRank() {
        return kvHeadsPerRank() * config.headDim();
    }

    /**
     * Columns of a rank's fused QKV projection output: its queries, then its keys, then its values.
     *
     * @return {@code queryWidthPerRank + 2 * keyValueWidthPerRank}
     */
    public int qkvWidthPerRank() {
        return queryWidthPerRank() + 2 * keyValueWidthPerRank();
    }

    /**
     * Columns of a rank's fused gate/up projection output: its gate slice, then its up slice.
     *
     * @return {@code 2 * intermediatePerRank}
     */
    public int gateUpWidthPerRank() {
        return 2 * intermediatePerRank();
    }

    /**
     * Vocabulary rows per rank: {@code ceil(vocab / tp)} rounded up to {@link #VOCAB_ALIGNMENT}.
     *
     * @return rows of each rank's embedding and LM head shard
     */
    public int vocabPerRank() {
        int v = config.vocabSize();
        int per = (v + tp - 1) / tp;
        return (per + VOCAB_ALIGNMENT - 1) / VOCAB_ALIGNMENT * VOCAB_ALIGNMENT;
    }

    /**
     * The padded vocabulary, a multiple of {@code tp}: the columns of the all-reduced logits.
     *
     * @return {@code vocabPerRank * tp}
     */
    public int paddedVocab() {
        return vocabPerRank() * tp;
    }

    /**
     * The first vocabulary id of a rank's shard.
     *
     * @param rank the rank
     * @return {@code rank * vocabPerRank}
     */
    public int vocabStart(int rank) {
        checkRank(rank);
        return rank * vocabPerRank();
    }

    /**
     * One past the last real vocabulary id of a rank's shard (the rest of its rows are padding).
     *
     * @param rank the rank
     * @return {@code min(vocab, vocabStart + vocabPerRank)}, at least {@code vocabStart}
     */
    public int vocabEnd(int rank) {
        return Math.max(vocabStart(rank), Math.min(config.vocabSize(), vocabStart(rank) + vocabPerRank()));
    }

    /**
     * The first query head of a rank.
     *
     * @param rank the rank
     * @return {@code rank * headsPerRank}
     */
    public int firstHead(int rank) {
        checkRank(rank);
        return rank * headsPerRank();
    }

    /**
     * The first KV head of a rank.
     *
     * @param rank the rank
     * @return {@code rank * kvHeadsPerRank}
     */
    public int firstKvHead(int rank) {
        checkRank(rank);
        return rank * kvHeadsPerRank();
    }

    /**
     * The global KV head a global query head reads (grouped-query attention).
     *
     * @param head a query head, 0 to {@code num_attention_heads - 1}
     * @return {@code head / (num_attention_heads / num_key_value_heads)}
     */
    public int kvHeadOf(int head) {
        return head / (config.numAttentionHeads() / config.numKeyValueHeads());
    }

    void checkRank(int rank) {
        if (rank < 0 || rank >= tp) {
            throw new IllegalArgumentException("rank " + rank + " is outside 0.." + (tp - 1));
        }
    }
}
