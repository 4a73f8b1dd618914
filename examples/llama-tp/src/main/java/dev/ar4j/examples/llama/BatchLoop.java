package dev.ar4j.examples.llama;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.function.LongSupplier;

/**
 * Generation of a batch of sequences on one rank: each prompt's prefill into its own sequence of the batch, then
 * decode steps of every sequence at once, each sequence at its own position, until every sequence has stopped (an
 * end-of-sequence token, or the token limit). A sequence that has stopped still takes part in the batch's steps
 * (the step has a fixed shape): it is fed its last token at the position after its end, which it never reads again,
 * and what the step returns for it is dropped. A sequence's logits are those of its prompt alone up to the
 * summation order of the batch's kernels (products of B rows, attention split for B sequences), so where two logits
 * are within rounding of each other its greedy token may differ from the one its prompt gets alone.
 */
public final class BatchLoop {

    /** The steps of a batch on one rank ({@code RankEngine}'s {@code prefill(sequence, prompt)} and {@code decodeBatch}). */
    public interface Steps {
        /**
         * Runs sequence {@code sequence}'s prompt at positions {@code 0 .. n-1} of its cache.
         *
         * @param sequence the sequence of the batch
         * @param prompt   its token ids
         * @return the next token after the prompt
         */
        int prefill(int sequence, int[] prompt);

        /**
         * One decode step of every sequence.
         *
         * @param ids       each sequence's input token
         * @param positions each token's position in its sequence
         * @param next      receives each sequence's next token
         */
        void decode(int[] ids, int[] positions, int[] next);
    }

    private final Steps steps;
    private final int[] stopTokens;
    private final LongSupplier clock;

    /**
     * A loop.
     *
     * @param steps      the prefill and batch decode steps
     * @param stopTokens the end-of-sequence token ids (none: every sequence runs to the limit)
     * @param clock      nanoseconds ({@code System::nanoTime})
     */
    public BatchLoop(Steps steps, int[] stopTokens, LongSupplier clock) {
        this.steps = steps;
        this.stopTokens = stopTokens.clone();
        this.clock = clock;
    }

    /**
     * Generates.
     *
     * @param prompts   one prompt per sequence of the batch, each at least one token
     * @param maxTokens the most new tokens of each sequence, at least 1
     * @return each sequence's new tokens and times: the first-token time is the whole batch's prefill, the decode
     *         time the batch's decode steps (shared by the sequences)
     */
    public List<Generated> run(int[][] prompts, int maxTokens) {
        if (maxTokens < 1) {
            throw new IllegalArgumentException("at least one new token is made; asked for " + maxTokens);
        }
        int b = prompts.length;
        if (b < 1) {
            throw new IllegalArgumentException("a batch of no prompts");
        }
        int[][] out = new int[b][maxTokens];
        int[] made = new int[b];
        int[] positions = new int[b];
        boolean[] done = new boolean[b];
        long start = clock.getAsLong();
        for (int s = 0; s < b; s++) {
            out[s][0] = steps.prefill(s, prompts[s]);
            made[s] = 1;
            positions[s] = prompts[s].length;
            done[s] = maxTokens == 1 || isStop(out[s][0]);
        }
        long first = clock.getAsLong();
        int[] ids = new int[b];
        int[] next = new int[b];
        while (!allDone(done)) {
            for (int s = 0; s < b; s++) {
                ids[s] = out[s][made[s] - 1];
            }
            steps.decode(ids, positions, next);  // read-only to the steps
            for (int s = 0; s < b; s++) {
                if (done[s]) {
                    continue;  // its position stays the one after its end
                }
                out[s][made[s]++] = next[s];
                positions[s]++;
                done[s] = made[s] == maxTokens || isStop(next[s]);
            }
        }
        long end = clock.getAsLong();
        List<Generated> result = new ArrayList<>(b);
        for (int s = 0; s < b; s++) {
            int last = out[s][made[s] - 1];
            result.add(new Generated(Arrays.copyOf(out[s], made[s]), prompts[s].length, isStop(last) ? last : -1,
                    first - start, end - first));
        }
        return result;
    }

    private static boolean allDone(boolean[] done) {
        for (boolean d : done) {
            if (!d) {
                return false;
            }
        }
        return true;
    }

    private boolean isStop(int token) {
        return GreedyLoop.isStop(stopTokens, token);
    }

    /**
     * One line for the end of a batch run.
     *
     * @param made each sequence's result ({@link #run})
     * @return {@code batch of B: prompts P tokens in all, generated N (S stopped at end-of-sequence), first tokens T ms,
     *         decode R tokens/s over the batch}
     */
    public static String summary(List<Generated> made) {
        long prompt = 0;
        long tokens = 0;
        long decoded = 0;
        int stopped = 0;
        for (Generated g : made) {
            prompt += g.promptTokens();
            tokens += g.tokens().length;
            decoded += g.tokens().length - 1;
            stopped += g.stopToken() >= 0 ? 1 : 0;
        }
        Generated any = made.get(0);
        double seconds = any.decodeNanos() / 1e9;
        String rate = decoded == 0 || seconds <= 0 ? "no decode step"
                : String.format(Locale.ROOT, "decode %.1f tokens/s over the batch", decoded / seconds);
        return String.format(Locale.ROOT,
                "batch of %d: prompts %d tokens in all, generated %d (%d stopped at end-of-sequence), first tokens "
                        + "%.1f ms, %s", made.size(), prompt, tokens, stopped, any.firstTokenNanos() / 1e6, rate);
    }
}
