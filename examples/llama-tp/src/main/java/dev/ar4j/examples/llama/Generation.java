package dev.ar4j.examples.llama;

import dev.ar4j.examples.llama.engine.RankEngine;

import java.util.StringJoiner;

/** Greedy generation on one rank, and the check of verify steps against it. */
final class Generation {

    private Generation() {
    }

    /** Prefill, then {@code steps - 1} decode steps: {@code steps} greedy tokens. */
    static int[] generate(RankEngine e, int[] prompt, int steps) {
        int[] out = new int[steps];
        out[0] = e.prefill(prompt);
        int position = prompt.length;
        for (int s = 1; s < steps; s++) {
            out[s] = e.decode(out[s - 1], position++);
        }
        return out;
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

    static String join(int[] tokens) {
        StringJoiner j = new StringJoiner(",");
        for (int t : tokens) {
            j.add(Integer.toString(t));
        }
        return j.toString();
    }
}
