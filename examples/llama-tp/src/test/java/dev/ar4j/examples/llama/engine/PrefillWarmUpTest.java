package dev.ar4j.examples.llama.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A chunk shape (tokens, logit rows) is warmed once per engine, at its first chunk's position, in chunk order. */
class PrefillWarmUpTest {

    private static List<String> warm(PrefillWarmUp w, int[] chunks, boolean[] result) {
        List<String> calls = new ArrayList<>();
        result[0] = w.warmNew(chunks, c -> c == chunks.length - 1 ? 1 : 0,
                (t, rows, start) -> calls.add(t + "x" + rows + "@" + start));
        return calls;
    }

    @Test
    void eachNewShapeOnceAtItsFirstPosition() {
        PrefillWarmUp w = new PrefillWarmUp();
        boolean[] any = new boolean[1];
        // 2500 tokens in chunks of 1024: two chunks of one shape (no logits), then the last (its row of logits).
        assertEquals(List.of("1024x0@0", "452x1@2048"), warm(w, new int[] {1024, 1024, 452}, any));
        assertTrue(any[0]);
        // The same prompt length again: nothing new, so no wait and no barrier.
        assertEquals(List.of(), warm(w, new int[] {1024, 1024, 452}, any));
        assertFalse(any[0]);
        // A chunk of 1024 that is now the last keeps logits: another shape; 1024 without logits is known.
        assertEquals(List.of("1024x1@1024"), warm(w, new int[] {1024, 1024}, any));
        assertTrue(any[0]);
        // One short prompt: its own shape.
        assertEquals(List.of("7x1@0"), warm(w, new int[] {7}, any));
    }

    @Test
    void anotherEngineStartsFromNothing() {
        boolean[] any = new boolean[1];
        warm(new PrefillWarmUp(), new int[] {16}, any);
        assertEquals(List.of("16x1@0"), warm(new PrefillWarmUp(), new int[] {16}, any));
        assertTrue(any[0]);
    }
}
