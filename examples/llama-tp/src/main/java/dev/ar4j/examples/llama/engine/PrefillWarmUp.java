package dev.ar4j.examples.llama.engine;

import java.util.HashSet;
import java.util.Set;
import java.util.function.IntUnaryOperator;

/**
 * Which prefill chunk shapes an engine has run its first-use launches for ({@link ForwardPass#warmUp}): a chunk of
 * {@code t} tokens with {@code rows} logit rows is warmed once per engine, before its first collective. The shapes
 * are the cuBLAS products' and the attention's, a function of (tokens, logit rows) alone; the position of the chunk
 * changes no shape.
 */
final class PrefillWarmUp {

    /** The launches of one chunk shape. */
    @FunctionalInterface
    interface Chunk {
        /**
         * Enqueues them.
         *
         * @param tokens the chunk's tokens
         * @param rows   its logit rows (0: none)
         * @param start  its first position
         */
        void warm(int tokens, int rows, int start);
    }

    private final Set<Long> warmed = new HashSet<>();

    /**
     * Warms each chunk of a prefill whose shape this engine has not warmed yet, in order.
     *
     * @param chunks the chunks' token counts, each 1 or more
     * @param rowsOf the logit rows of chunk {@code c} (by index)
     * @param chunk  the launches of one chunk
     * @return whether any chunk was warmed (then the caller waits for them and meets the other ranks)
     */
    boolean warmNew(int[] chunks, IntUnaryOperator rowsOf, Chunk chunk) {
        boolean any = false;
        int start = 0;
        for (int c = 0; c < chunks.length; c++) {
            int rows = rowsOf.applyAsInt(c);
            if (warmed.add(((long) chunks[c] << 32) | rows)) {
                chunk.warm(chunks[c], rows, start);
                any = true;
            }
            start += chunks[c];
        }
        return any;
    }
}
