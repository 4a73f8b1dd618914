package dev.ar4j.examples.llama;

/**
 * The steps greedy generation takes on one rank: a prefill of the prompt and one decode step per
 * token, each returning the greedy next token ({@code RankEngine}'s {@code prefill} and
 * {@code decode}; in tests, a function of the tokens so far).
 */
public interface GreedySteps {

    /**
     * Runs the prompt at positions {@code 0 .. n-1}.
     *
     * @param prompt the token ids
     * @return the greedy token after the prompt
     */
    int prefill(int[] prompt);

    /**
     * Runs one token.
     *
     * @param id       the input token
     * @param position its position
     * @return the greedy next token
     */
    int decode(int id, int position);
}
