package dev.ar4j.examples.llama;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The batch loop over step functions that need no GPU: each sequence gets the tokens it gets alone, a sequence that
 * has stopped is fed at the position after its end without advancing, and the loop ends when every sequence has.
 */
class BatchLoopTest {

    /** The next token: a function of the sequence's last token and its position (as a model's would be). */
    private static int next(int id, int position) {
        return (id * 31 + position * 7) % 97;
    }

    /** One sequence alone, through the greedy loop, with the same step function. */
    private static int[] alone(int[] prompt, int[] stops, int max) {
        GreedySteps steps = new GreedySteps() {
            @Override
            public int prefill(int[] p) {
                return next(p[p.length - 1], p.length - 1);
            }

            @Override
            public int decode(int id, int position) {
                return next(id, position);
            }
        };
        return new GreedyLoop(steps, stops, t -> { }, () -> 0).run(prompt, max).tokens();
    }

    /** Batch steps with the same function, recording each step's positions; 1 ms per prefill, 10 per decode step. */
    private static final class Recording implements BatchLoop.Steps {
        final List<int[]> positions = new ArrayList<>();
        final List<Integer> prefilled = new ArrayList<>();
        long now;

        @Override
        public int prefill(int sequence, int[] prompt) {
            prefilled.add(sequence);
            now += 1_000_000L;
            return next(prompt[prompt.length - 1], prompt.length - 1);
        }

        @Override
        public void decode(int[] ids, int[] positions, int[] next) {
            this.positions.add(positions.clone());
            now += 10_000_000L;
            for (int s = 0; s < ids.length; s++) {
                next[s] = next(ids[s], positions[s]);
            }
        }
    }

    @Test
    void eachSequenceGetsItsOwnTokensAndStoppedOnesStayPut() {
        int[][] prompts = {{5, 6, 7}, {1}, {40, 41, 42, 43, 44}};
        // A stop token that some sequence reaches early: the first token of sequence 1 alone after a few steps.
        int[] probe = alone(prompts[1], new int[0], 6);
        int[] stops = {probe[2]};
        Recording steps = new Recording();
        List<Generated> made = new BatchLoop(steps, stops, () -> steps.now).run(prompts, 6);
        assertEquals(List.of(0, 1, 2), steps.prefilled);
        for (int s = 0; s < prompts.length; s++) {
            assertArrayEquals(alone(prompts[s], stops, 6), made.get(s).tokens(), "sequence " + s);
            assertEquals(prompts[s].length, made.get(s).promptTokens());
        }
        assertEquals(stops[0], made.get(1).stopToken(), "sequence 1 stops at the stop token");
        assertEquals(3, made.get(1).tokens().length);
        // Sequence 1 (prompt 1) stops after 2 decode steps: from then on it is fed at position 3 every step.
        for (int i = 0; i < steps.positions.size(); i++) {
            int[] p = steps.positions.get(i);
            assertEquals(1 + Math.min(i, 2), p[1], "step " + i + ": " + Arrays.toString(p));
            assertTrue(p[0] <= 3 + 5 && p[2] <= 5 + 5, "never past prompt + max - 1: " + Arrays.toString(p));
        }
        // The loop ran until the longest sequence made its 6 tokens: 5 decode steps.
        assertEquals(5, steps.positions.size());
        assertEquals(3_000_000L, made.get(0).firstTokenNanos());
        assertEquals(50_000_000L, made.get(0).decodeNanos());
    }

    @Test
    void oneTokenIsThePrefillsAndEveryStopEndsTheLoop() {
        Recording steps = new Recording();
        List<Generated> made = new BatchLoop(steps, new int[0], () -> steps.now).run(new int[][] {{1, 2}, {3}}, 1);
        assertEquals(0, steps.positions.size(), "no decode step for one token");
        assertEquals(1, made.get(0).tokens().length);
        assertEquals(-1, made.get(1).stopToken());
        String line = BatchLoop.summary(made);
        assertTrue(line.startsWith("batch of 2: prompts 3 tokens in all, generated 2 (0 stopped at end-of-sequence)"),
                line);
        assertTrue(line.endsWith("no decode step"), line);
    }

    @Test
    void theSummaryCountsTheBatchsTokensOverItsDecodeTime() {
        Recording steps = new Recording();
        List<Generated> made = new BatchLoop(steps, new int[0], () -> steps.now).run(new int[][] {{1}, {2}}, 3);
        // 2 decode steps of 10 ms, 2 sequences x 2 decoded tokens: 200 tokens/s.
        assertTrue(BatchLoop.summary(made).endsWith("decode 200.0 tokens/s over the batch"), BatchLoop.summary(made));
    }

    @Test
    void badArgumentsAreRefused() {
        Recording steps = new Recording();
        BatchLoop loop = new BatchLoop(steps, new int[0], () -> 0);
        assertThrows(IllegalArgumentException.class, () -> loop.run(new int[][] {{1}}, 0));
        assertThrows(IllegalArgumentException.class, () -> loop.run(new int[0][], 4));
    }
}
