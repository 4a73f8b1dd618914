package dev.ar4j.examples.llama;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The loop over a step function that needs no GPU: where it stops, what it streams, what it times. */
class GreedyLoopTest {

    /** Steps whose next token is the input + 1, recording the positions; the clock advances 10 ms per step. */
    private static final class CountingSteps implements GreedySteps {
        final List<Integer> positions = new ArrayList<>();
        long now;

        @Override
        public int prefill(int[] prompt) {
            now += 50_000_000L;
            return prompt[prompt.length - 1] + 1;
        }

        @Override
        public int decode(int id, int position) {
            positions.add(position);
            now += 10_000_000L;
            return id + 1;
        }
    }

    @Test
    void stopsAtAnyEndOfSequenceTokenAndStreamsEachTokenAsItComes() {
        CountingSteps steps = new CountingSteps();
        List<Integer> streamed = new ArrayList<>();
        Generated g = new GreedyLoop(steps, new int[] {99, 13}, t -> {
            // Each token reaches the listener before the next step runs.
            assertEquals(streamed.size(), steps.positions.size());
            streamed.add(t);
        }, () -> steps.now).run(new int[] {7, 8, 9}, 100);
        assertArrayEquals(new int[] {10, 11, 12, 13}, g.tokens());
        assertEquals(List.of(10, 11, 12, 13), streamed);
        assertEquals(List.of(3, 4, 5), steps.positions);
        assertEquals(13, g.stopToken());
        assertEquals(3, g.promptTokens());
        assertEquals(50_000_000L, g.firstTokenNanos());
        assertEquals(30_000_000L, g.decodeNanos());
        assertEquals(100.0, g.decodeTokensPerSecond(), 1e-9);
    }

    @Test
    void runsToTheLimitWithoutAnEndOfSequenceToken() {
        CountingSteps steps = new CountingSteps();
        Generated g = new GreedyLoop(steps, new int[0], t -> { }, () -> steps.now).run(new int[] {1}, 5);
        assertArrayEquals(new int[] {2, 3, 4, 5, 6}, g.tokens());
        assertEquals(-1, g.stopToken());
        // The first token an end-of-sequence token: no decode step.
        CountingSteps once = new CountingSteps();
        Generated first = new GreedyLoop(once, new int[] {2}, t -> { }, () -> once.now).run(new int[] {1}, 5);
        assertArrayEquals(new int[] {2}, first.tokens());
        assertEquals(List.of(), once.positions);
        assertEquals(Double.NaN, first.decodeTokensPerSecond());
        assertThrows(IllegalArgumentException.class, () -> new GreedyLoop(once, new int[0], t -> { }, () -> 0)
                .run(new int[] {1}, 0));
    }

    @Test
    void theSummaryIsOneLineWithTheCountsAndTimes() {
        assertEquals("prompt 3 tokens, generated 4 (stopped at end-of-sequence token 13), first token 50.0 ms, "
                + "decode 100.0 tokens/s", new Generated(new int[] {10, 11, 12, 13}, 3, 13, 50_000_000L, 30_000_000L)
                .summary());
        assertEquals("prompt 1 tokens, generated 32 (the token limit), first token 1.5 ms, decode 2000.0 tokens/s",
                new Generated(new int[32], 1, -1, 1_500_000L, 15_500_000L).summary());
        assertEquals("prompt 1 tokens, generated 1 (the token limit), first token 0.0 ms, no decode step",
                new Generated(new int[1], 1, -1, 0, 0).summary());
    }
}
