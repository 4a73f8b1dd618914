package dev.ar4j.examples.llama.model;

/**
 * The shape of a Llama model, as Hugging Face's {@code LlamaConfig} names it. Only what the
 * decoder needs; every value is checked when the record is made.
 *
 * @param hiddenSize            {@code hidden_size}
 * @param intermediateSize      {@code intermediate_size} (the SwiGLU MLP's width)
 * @param numHiddenLayers       {@code num_hidden_layers}
 * @param numAttentionHeads     {@code num_attention_heads}
 * @param numKeyValueHeads      {@code num_key_value_heads} (grouped-query attention), divides the heads
 * @param headDim               {@code head_dim} (default {@code hidden_size / num_attention_heads}), even
 * @param vocabSize             {@code vocab_size}
 * @param maxPositionEmbeddings {@code max_position_embeddings}
 * @param rmsNormEps            {@code rms_norm_eps}
 * @param ropeTheta             {@code rope_theta}
 * @param ropeScaling           the Llama-3 {@code rope_scaling}, or {@code null} for none
 * @param tieWordEmbeddings     {@code tie_word_embeddings}: the LM head is the embedding table
 * @param torchDtype            {@code torch_dtype} as written (the engine runs {@code bfloat16}; float16
 *                              and float32 checkpoints are converted to it while loading)
 */
public record LlamaConfig(int hiddenSize, int intermediateSize, int numHiddenLayers, int numAttentionHeads,
                          int numKeyValueHeads, int headDim, int vocabSize, int maxPositionEmbeddings,
                          double rmsNormEps, double ropeTheta, RopeScaling ropeScaling,
                          boolean tieWordEmbeddings, String torchDtype) {

    /** The largest head dimension the attention kernels take. */
    public static final int MAX_HEAD_DIM = 256;

    /**
     * Checks every value.
     *
     * @throws IllegalArgumentException naming the field that is out of range and why
     */
    public LlamaConfig {
        positive("hidden_size", hiddenSize);
        positive("intermediate_size", intermediateSize);
        positive("num_hidden_layers", numHiddenLayers);
        positive("num_attention_heads", numAttentionHeads);
        positive("num_key_value_heads", numKeyValueHeads);
        positive("head_dim", headDim);
        positive("vocab_size", vocabSize);
        positive("max_position_embeddings", maxPositionEmbeddings);
        if (numAttentionHeads % numKeyValueHeads != 0) {
            throw new IllegalArgumentException("num_attention_heads (" + numAttentionHeads
                    + ") is not a multiple of num_key_value_heads (" + numKeyValueHeads
                    + "): grouped-query attention needs whole groups");
        }
        if (headDim % 2 != 0 || headDim > MAX_HEAD_DIM) {
            throw new IllegalArgumentException("head_dim " + headDim + " must be even and at most " + MAX_HEAD_DIM
                    + " (rotary pairs; the attention kernels' limit)");
        }
        if (!(rmsNormEps > 0) || !Double.isFinite(rmsNormEps)) {
            throw new IllegalArgumentException("rms_norm_eps must be finite and positive, got " + rmsNormEps);
        }
        if (!(ropeTheta > 0) || !Double.isFinite(ropeTheta)) {
            throw new IllegalArgumentException("rope_theta must be finite and positive, got " + ropeTheta);
        }
        if (torchDtype == null || torchDtype.isBlank()) {
            throw new IllegalArgumentException("torch_dtype is missing");
        }
    }

    private static void positive(String field, int value) {
        if (value <= 0) {
            throw new IllegalArgumentException(field + " must be positive, got " + value);
        }
    }

    /**
     * Columns of the query projection: {@code num_attention_heads * head_dim}.
     *
     * @return the query projection's output features
     */
    public int queryWidth() {
        return numAttentionHeads * headDim;
    }

    /**
     * Columns of the key (and of the value) projection: {@code num_key_value_heads * head_dim}.
     *
     * @return the key projection's output features
     */
    public int keyValueWidth() {
        return numKeyValueHeads * headDim;
    }

    /**
     * The weights' element count (embedding, layers, final norm and, unless tied, the LM head).
     *
     * @return the number of parameters
     */
    public long parameterCount() {
        long h = hiddenSize;
        long perLayer = 2 * h + h * queryWidth() + 2 * h * keyValueWidth() + (long) queryWidth() * h
                + 3 * h * intermediateSize;
        long embedding = (long) vocabSize * h;
        return embedding + numHiddenLayers * perLayer + h + (tieWordEmbeddings ? 0 : embedding);
    }
}
