package dev.ar4j.examples.llama.model;


/**
 * How a model is split over {@code tp} ranks, Megatron style: the query, key and value
 * projections and the MLP's gate and up projections column-parallel (each rank computes whole
 * heads and a slice of the MLP's width), the output and down projections row-parallel (each rank
 * contributes a partial sum, all-reduced), the embedding and the LM head vocabulary-parallel
 * (each rank holds {@link #vocabPerRank()} rows of the padded vocabulary; partial embeddings and
 * partial logits are all-reduced). Norm weights are replicated.
 *
 * <p>With more ranks than KV heads ({@code tp} a multiple of {@code num_key_value_heads}), each
 * KV head is replicated on {@link #kvReplicas()} consecutive ranks, as vLLM's
 * {@code QKVParallelLinear} does: each rank holds the one KV head its query heads read (a rank's
 * query heads lie in one group, since {@code heads / tp} divides {@code heads / kv}).
 *
 * <p>A vocabulary that {@code tp} does not divide is padded: each rank holds
 * {@link #vocabPerRank()} rows, the real ones first and zero rows after the last id; the logits
 * of the padding columns are zero after the all-reduce and are never read (the argmax and
 * {@code RankEngine.logits} stop at {@code vocab_size}). A rank must hold at least one real row.
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
        int kv = config.numKeyValueHeads();
        if (kv % tp != 0 && tp % kv != 0) {
            throw new IllegalArgumentException("--tp " + tp + " and num_key_value_heads " + kv + ": the degree must "
                    + "divide the KV heads (each rank holds whole KV heads with their query groups) or be a multiple "
                    + "of them (each KV head replicated on tp / " + kv + " ranks, as vLLM does)");
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
     * @return {@code num_key_value_heads / tp}, or 1 when the heads are replicated
     */
    public int kvHeadsPerRank() {
        return Math.max(1, config.numKeyValueHeads() / tp);
    }

    /**
     * Ranks that hold each KV head.
     *
     * @return 1, or {@code tp / num_key_value_heads} when the degree is larger than the KV heads
     */
    public int kvReplicas() {
        return Math.max(1, tp / config.numKeyValueHeads());
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
     * The first KV head of a rank: the KV head of its first query head.
     *
     * @param rank the rank
     * @return {@code rank * kvHeadsPerRank}, or {@code rank / kvReplicas} when the heads are replicated
     */
    public int firstKvHead(int rank) {
        checkRank(rank);
        return rank / kvReplicas() * kvHeadsPerRank();
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
