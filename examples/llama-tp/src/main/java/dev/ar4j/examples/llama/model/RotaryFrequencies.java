package dev.ar4j.examples.llama.model;

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
     * {@code 1 / theta^(2i / dim)} in fp32 for {@code i < dim / 2}, as transformers'
     * {@code 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))}: the exponent and the base
     * rounded to fp32, the power rounded once to fp32 (computed in double; torch's CPU pow is
     * Sleef's powf, within 1 ulp, so an element may differ from transformers' buffer by an ulp),
     * then the fp32 reciprocal.
     *
     * @param dim   the head dimension, even and positive
     * @param theta the rope base
     * @return the default inverse frequencies
     */
    public static float[] defaults(int dim, double theta) {
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
     * The Llama-3 scaling of default inverse frequencies, bit for bit as transformers'
     * {@code _compute_llama3_parameters} computes it on the CPU: every tensor operation in fp32, each
     * Python scalar operand rounded to fp32 first, and a scalar divided by a tensor computed as
     * {@code tensor.reciprocal() * scalar} (what {@code Tensor.__rtruediv__} does):
     * <pre>
     * wavelen  = fl(fl(1 / inv) * fl32(2 pi))                      # 2 * math.pi / inv_freq
     * llama    = wavelen &gt; fl32(old / low) ? fl(inv / fl32(factor)) : inv
     * smooth   = fl(fl(fl(fl(1 / wavelen) * fl32(old)) - fl32(low)) / fl32(high - low))
     * smoothed = fl(fl(fl(fl(1 - smooth) * llama) / fl32(factor)) + fl(smooth * llama))
     * medium   = !(wavelen &lt; fl32(old / high)) &amp;&amp; !(wavelen &gt; fl32(old / low))
     * </pre>
     * ({@code old / low}, {@code old / high} and {@code high - low} are Python float arithmetic, in
     * double, then rounded to fp32 where they meet the fp32 tensor.) Dividing 2&pi; by the frequency
     * directly, as this class did before, differs by an ulp of the wavelength, which the blend
     * turns into 2 fp32 ulps of the frequency (issue 29: 0.028718496 instead of transformers'
     * 0.028718501).
     *
     * @param inv the default inverse frequencies
     * @param s   the scaling
     * @return the scaled inverse frequencies
     */
    public static float[] llama3(float[] inv, RopeScaling s) {
        float factor = (float) s.factor();
        float low = (float) s.lowFreqFactor();
        float oldContext = (float) s.originalMaxPositionEmbeddings();
        float lowFreqWavelen = (float) (s.originalMaxPositionEmbeddings() / s.lowFreqFactor());
        float highFreqWavelen = (float) (s.originalMaxPositionEmbeddings() / s.highFreqFactor());
        float band = (float) (s.highFreqFactor() - s.lowFreqFactor());
        float twoPi = (float) (2 * Math.PI);
        float[] out = new float[inv.length];
        for (int i = 0; i < inv.length; i++) {
            float wavelen = (1.0f / inv[i]) * twoPi;
            float llama = wavelen > lowFreqWavelen ? inv[i] / factor : inv[i];
            boolean medium = !(wavelen < highFreqWavelen) && !(wavelen > lowFreqWavelen);
            if (medium) {
                float smooth = ((1.0f / wavelen) * oldContext - low) / band;
                llama = (1.0f - smooth) * llama / factor + smooth * llama;
            }
            out[i] = llama;
        }
        return out;
    }
}
