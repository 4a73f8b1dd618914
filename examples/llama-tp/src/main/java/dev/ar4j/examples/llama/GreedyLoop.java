package dev.ar4j.examples.llama;

import java.util.Arrays;
import java.util.function.IntConsumer;
import java.util.function.LongSupplier;

/**
 * Generation on one rank (each token the engine's choice: the argmax, or a draw on the GPU): the prefill,
 * then a decode step per token until an end-of-sequence token comes or the token limit is reached; every
 * new token (the stopping one included) goes to the listener as soon as its step returns. Each rank of a
 * group runs its own loop: the ranks' tokens are the same, so they stop at the same step.
 */
public final class GreedyLoop {

    private final GreedySteps steps;
    private final int[] stopTokens;
    private final IntConsumer listener;
    private final LongSupplier clock;

    /**
     * A loop.
     *
     * @param steps      the prefill and decode steps
     * @param stopTokens the end-of-sequence token ids (none: run to the limit)
     * @param listener   receives each new token as it comes
     * @param clock      nanoseconds ({@code System::nanoTime})
     */
    public GreedyLoop(GreedySteps steps, int[] stopTokens, IntConsumer listener, LongSupplier clock) {
        this.steps = steps;
        this.stopTokens = stopTokens.clone();
        this.listener = listener;
        this.clock = clock;
    }

    /**
     * Generates.
     *
     * @param prompt    the prompt's token ids
     * @param maxTokens the most new tokens, at least 1
     * @return the new tokens and their times
     */
    public Generated run(int[] prompt, int maxTokens) {
        if (maxTokens < 1) {
            throw new IllegalArgumentException("at least one new token is made; asked for " + maxTokens);
        }
        int[] out = new int[maxTokens];
        long start = clock.getAsLong();
        out[0] = steps.prefill(prompt);
        long first = clock.getAsLong();
        listener.accept(out[0]);
        int n = 1;
        int position = prompt.length;
        while (n < maxTokens && !isStop(out[n - 1])) {
            out[n] = steps.decode(out[n - 1], position++);
            listener.accept(out[n]);
            n++;
        }
        long end = clock.getAsLong();
        int last = out[n - 1];
        return new Generated(Arrays.copyOf(out, n), prompt.length, isStop(last) ? last : -1, first - start,
                end - first);
    }

    private boolean isStop(int token) {
        return isStop(stopTokens, token);
    }

    /** Whether {@code token} is one of {@code stopTokens} (the end-of-sequence ids); shared with {@link BatchLoop}. */
    static boolean isStop(int[] stopTokens, int token) {
        for (int s : stopTokens) {
            if (s == token) {
                return true;
            }
        }
        return false;
    }
}
