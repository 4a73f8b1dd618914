package dev.ar4j.examples.llama.model;

/**
 * The Llama-3 {@code rope_scaling} of a config ({@code "rope_type": "llama3"}): rotary frequencies
 * with wavelengths above {@code originalMaxPositionEmbeddings / lowFreqFactor} divided by
 * {@code factor}, those below {@code originalMaxPositionEmbeddings / highFreqFactor} kept, and a
 * smooth blend between.
 *
 * @param factor                        the divisor of the low frequencies, at least 1
 * @param lowFreqFactor                 the low-frequency bound's divisor, positive
 * @param highFreqFactor                the high-frequency bound's divisor, greater than {@code lowFreqFactor}
 * @param originalMaxPositionEmbeddings the context the model was trained with, positive
 */
public record RopeScaling(double factor, double lowFreqFactor, double highFreqFactor,
                          int originalMaxPositionEmbeddings) {

    /**
     * Checks the values.
     *
     * @throws IllegalArgumentException naming the value that is out of range
     */
    public RopeScaling {
        if (!(factor >= 1.0) || !Double.isFinite(factor)) {
            throw new IllegalArgumentException("rope_scaling.factor must be finite and at least 1, got " + factor);
        }
        if (!(lowFreqFactor > 0) || !Double.isFinite(lowFreqFactor)) {
            throw new IllegalArgumentException("rope_scaling.low_freq_factor must be finite and positive, got "
                    + lowFreqFactor);
        }
        if (!(highFreqFactor > lowFreqFactor) || !Double.isFinite(highFreqFactor)) {
            throw new IllegalArgumentException("rope_scaling.high_freq_factor must be finite and greater than "
                    + "low_freq_factor (" + lowFreqFactor + "), got " + highFreqFactor);
        }
        if (originalMaxPositionEmbeddings <= 0) {
            throw new IllegalArgumentException("rope_scaling.original_max_position_embeddings must be positive, got "
                    + originalMaxPositionEmbeddings);
        }
    }
}
