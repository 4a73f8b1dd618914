package dev.ar4j.examples.llama;

import java.util.Locale;

/**
 * What one greedy generation made, and its times.
 *
 * @param tokens          the new tokens, the end-of-sequence token that stopped it included
 * @param promptTokens    the prompt's length
 * @param stopToken       the end-of-sequence token that stopped it, or -1 when the token limit did
 * @param firstTokenNanos from the start of the prefill to the first token
 * @param decodeNanos     from the first token to the last (the decode steps)
 */
public record Generated(int[] tokens, int promptTokens, int stopToken, long firstTokenNanos, long decodeNanos) {

    /**
     * Copies the tokens.
     */
    public Generated {
        tokens = tokens.clone();
    }

    /**
     * The new tokens.
     *
     * @return a copy, the stopping end-of-sequence token included
     */
    @Override
    public int[] tokens() {
        return tokens.clone();
    }

    /**
     * The decode speed.
     *
     * @return tokens after the first per second of decode, or NaN when there was no decode step
     */
    public double decodeTokensPerSecond() {
        return tokens.length < 2 || decodeNanos <= 0 ? Double.NaN : (tokens.length - 1) / (decodeNanos / 1e9);
    }

    /**
     * One line for the end of a run.
     *
     * @return {@code prompt P tokens, generated N (the token limit | stopped at end-of-sequence token ID),
     *         first token T ms, decode R tokens/s}
     */
    public String summary() {
        String why = stopToken >= 0 ? "stopped at end-of-sequence token " + stopToken : "the token limit";
        double rate = decodeTokensPerSecond();
        return String.format(Locale.ROOT, "prompt %d tokens, generated %d (%s), first token %.1f ms, %s",
                promptTokens, tokens.length, why, firstTokenNanos / 1e6,
                Double.isNaN(rate) ? "no decode step" : String.format(Locale.ROOT, "decode %.1f tokens/s", rate));
    }
}
