package dev.ar4j.examples.llama.model;

/**
 * A weight as one rank holds it: its kind and layer (-1 for the model-level ones).
 *
 * @param kind  what the weight is
 * @param layer the layer, from 0, or -1 for the embedding, the final norm and the LM head
 */
public record WeightName(Kind kind, int layer) {

    /** The kinds of weight a rank holds, with their row-major shapes on one rank. */
    public enum Kind {
        /** {@code [vocabPerRank, hidden]}: this rank's rows of the embedding (zero padding rows). */
        EMBEDDING,
        /** {@code [hidden]}, replicated: a layer's input RMSNorm. */
        INPUT_NORM,
        /** {@code [qkvWidthPerRank, hidden]}: this rank's query, key and value rows, fused. */
        QKV,
        /** {@code [hidden, queryWidthPerRank]}: this rank's columns of the output projection. */
        OUT_PROJ,
        /** {@code [hidden]}, replicated: a layer's post-attention RMSNorm. */
        POST_NORM,
        /** {@code [gateUpWidthPerRank, hidden]}: this rank's gate rows then up rows, fused. */
        GATE_UP,
        /** {@code [hidden, intermediatePerRank]}: this rank's columns of the down projection. */
        DOWN_PROJ,
        /** {@code [hidden]}, replicated: the final RMSNorm. */
        FINAL_NORM,
        /** {@code [vocabPerRank, hidden]}: this rank's rows of the LM head (the embedding's when tied). */
        LM_HEAD
    }

    /**
     * A model-level weight.
     *
     * @param kind the kind
     * @return the weight
     */
    public static WeightName model(Kind kind) {
        return new WeightName(kind, -1);
    }

    /**
     * A layer's weight.
     *
     * @param kind  the kind
     * @param layer the layer
     * @return the weight
     */
    public static WeightName of(Kind kind, int layer) {
        return new WeightName(kind, layer);
    }
}
