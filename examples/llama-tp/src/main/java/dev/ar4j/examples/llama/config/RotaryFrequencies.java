package dev.ar4j.examples.llama.config;

/**
 * The rotary embedding's inverse frequencies, as transformers computes them in fp32
 * ({@code _compute_default_rope_parameters}, then {@code _compute_llama3_parameters} when the
 * config has a Llama-3 {@code rope_scaling}): {@code head_dim / 2} values, element {@code i}
 * pairing rotary elements {@code i} and {@code i + head_dim / 2}.
 */
public final class RotaryFrequencies {

    private RotaryFrequencies() {
    }

    /**
     * The inverse frequencies of a config.
     *
     * @param config the model's config
     * @return {@code head_dim / 2} fp32 values
     */
    public static float[] of(LlamaConfig config) {
        float[] inv = defaults(config.headDim(), config.ropeTheta());
        RopeScaling s = config.ropeScaling();
        return s == null ? inv : llama3(inv, s);
    }

    /**
     * {@code 1 / theta^(2i / dim)} in fp32 for {@code i < dim / 2}.
     *
     * @param dim   the head dimension, even and positive
     * @param theta the rope base
     * @return the default inverse frequencies
     */
    static float[] defaults(int dim, double theta) {
        float[] inv = new float[dim / 2];
        float base = (float) theta;
        for (int i = 0; i < inv.length; i++) {
            float exponent = (float) (2 * i) / (float) dim;
            float power = (float) Math.pow(base, exponent);
            inv[i] = 1.0f / power;
        }
        return inv;
    }

    /**
     * The Llama-3 scaling of default inverse frequencies (fp32 arithmetic, as transformers'
     * tensor operations).
     *
     * @param inv the default inverse frequencies
     * @param s   the scaling
     * @return the scaled inverse frequencies
     */
    static float[] llama3(float[] inv, RopeScaling s) {
        float factor = (float) s.factor();
        float low = (float) s.lowFreqFactor();
        float high = (float) s.highFreqFactor();
        float oldContext = s.originalMaxPositionEmbeddings();
        double lowFreqWavelen = s.originalMaxPositionEmbeddings() / s.lowFreqFactor();
        double highFreqWavelen = s.originalMaxPositionEmbeddings() / s.highFreqFactor();
        float twoPi = (float) (2 * Math.PI);
        float[] out = new float[inv.length];
        for (int i = 0; i < inv.length; i++) {
            float wavelen = twoPi / inv[i];
            float scaled = wavelen > lowFreqWavelen ? inv[i] / factor : inv[i];
            boolean medium = !(wavelen < highFreqWavelen) && !(wavelen > lowFreqWavelen);
            if (medium) {
                float smooth = (oldContext / wavelen - low) / (high - low);
                scaled = (1 - smooth) * scaled / factor + smooth * scaled;
            }
            out[i] = scaled;
        }
        return out;
    }
}
