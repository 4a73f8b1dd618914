package dev.ar4j.examples.llama;

import dev.ar4j.examples.llama.engine.RankEngine;

/** A rank's engine as the greedy loop's steps, and the check of verify steps against decode steps. */
final class Generation {

    private Generation() {
    }

    /** The engine's prefill and decode steps. */
    static GreedySteps steps(RankEngine e) {
        return new GreedySteps() {
            @Override
            public int prefill(int[] prompt) {
                return e.prefill(prompt);
            }

            @Override
            public int decode(int id, int position) {
                return e.decode(id, position);
            }
        };
    }

    /** The engine's per-sequence prefill and batch decode step. */
    static BatchLoop.Steps batchSteps(RankEngine e) {
        return new BatchLoop.Steps() {
            @Override
            public int prefill(int sequence, int[] prompt) {
                return e.prefill(sequence, prompt);
            }

            @Override
            public void decode(int[] ids, int[] positions, int[] next) {
                e.decodeBatch(ids, positions, next);
            }
        };
    }

    /**
     * Feeds the generated tokens again, {@code draft} at a time, through the verify step and counts
     * the positions where its greedy token is the decode step's.
     */
    static String verifyAgainstDecode(RankEngine e, int promptLength, int[] tokens) {
        int k = e.settings().draft();
        int[] draft = new int[k];
        int[] next = new int[k];
        int agree = 0;
        int checked = 0;
        for (int j = 0; j + k < tokens.length; j += k) {
            System.arraycopy(tokens, j, draft, 0, k);
            e.verify(draft, promptLength + j, next);
            for (int i = 0; i < k; i++) {
                checked++;
                if (next[i] == tokens[j + i + 1]) {
                    agree++;
                }
            }
        }
        return agree + "/" + checked + " greedy tokens equal to the decode steps'";
    }
}
