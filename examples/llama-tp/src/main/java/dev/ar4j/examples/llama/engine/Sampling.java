package dev.ar4j.examples.llama.engine;

/**
 * How the engine chooses each token from the logits: greedy (temperature 0, the default: the argmax, the
 * path the engine has always taken) or a draw from {@code softmax(logits / temperature)} restricted to the
 * {@code topK} largest logits and then to the {@code topP} nucleus, on the GPU inside the captured step
 * ({@code ar4j_llama_sample}). The draws come from {@code seed} and a step counter in device memory that every
 * sampling launch advances: the same seed, model, prompt and settings give the same tokens, and every rank of a
 * group draws the same token (its logits, seed and counter are the same; see {@code ForwardPass}).
 *
 * @param temperature 0 (greedy) or a finite value &gt; 0 that divides the logits
 * @param topK        keep the logits &gt;= the k-th largest (ties kept), 0 for all
 * @param topP        keep the smallest set of largest logits whose probability reaches it (ties kept), in
 *                    {@code (0, 1]}; 1 for all
 * @param seed        the draws' seed
 */
public record Sampling(double temperature, int topK, double topP, long seed) {

    /** Greedy decoding: the argmax of the logits. */
    public static final Sampling GREEDY = new Sampling(0, 0, 1, 0);

    /**
     * Checks the values.
     *
     * @throws IllegalArgumentException naming the value that is out of range and what is accepted
     */
    public Sampling {
        if (!(temperature >= 0) || !Double.isFinite(temperature)) {
            throw new IllegalArgumentException("temperature " + temperature
                    + ": need a finite value >= 0 (0: greedy, the argmax)");
        }
        if (temperature > 0 && !((float) temperature > 0 && Float.isFinite((float) temperature))) {
            throw new IllegalArgumentException("temperature " + temperature
                    + ": outside the range of a float (the kernel divides in fp32); need about 1e-38 .. 3e38");
        }
        if (topK < 0) {
            throw new IllegalArgumentException("top-k " + topK + ": need k >= 0 (0: every logit)");
        }
        if (!(topP > 0 && topP <= 1)) {
            throw new IllegalArgumentException("top-p " + topP + ": need 0 < p <= 1 (1: every logit)");
        }
        if (!((float) topP > 0)) {
            throw new IllegalArgumentException("top-p " + topP + ": below the smallest float (the kernel takes fp32); "
                    + "need about 1e-38 or more");
        }
        if (temperature == 0 && (topK != 0 || topP != 1)) {
            throw new IllegalArgumentException("top-k " + topK + ", top-p " + topP
                    + " with temperature 0: greedy decoding takes the argmax; give a temperature > 0 to sample");
        }
    }

    /**
     * Whether this is greedy decoding (temperature 0).
     *
     * @return {@code temperature == 0}
     */
    public boolean greedy() {
        return temperature == 0;
    }

    /**
     * The settings in words, for the run's information line.
     *
     * @return e.g. {@code greedy} or {@code sampling: temperature 0.7, top-k 50, top-p 0.9, seed 1234}
     */
    public String describe() {
        return greedy() ? "greedy" : "sampling: temperature " + temperature + ", top-k " + topK + ", top-p " + topP
                + ", seed " + seed;
    }
}
