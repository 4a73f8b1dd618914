package dev.ar4j.examples.llama.engine;

import dev.ar4j.examples.llama.model.SyntheticModels;
import dev.ar4j.examples.llama.model.TensorParallelLayout;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class ChunkedPrefillTest {

    @Test
    void onlyTheLastChunkComputesLogits() {
        int[] chunks = {1024, 1024, 5};
        assertEquals(0, ChunkedPrefill.logitRows(chunks, 0, false));
        assertEquals(0, ChunkedPrefill.logitRows(chunks, 1, true), "a chunk before the last: none, kept or not");
        assertEquals(1, ChunkedPrefill.logitRows(chunks, 2, false), "the prompt's last position");
        assertEquals(5, ChunkedPrefill.logitRows(chunks, 2, true), "kept: the last chunk's 5 tokens, fewer than 8");
        assertEquals(EngineSettings.KEPT_PROMPT_LOGIT_ROWS, ChunkedPrefill.logitRows(new int[] {300}, 0, true));
    }

    @Test
    void aBadSequenceOrPromptIsRefusedBeforeAnyLaunch() {
        TensorParallelLayout l = new TensorParallelLayout(SyntheticModels.byName("tiny"), 1);
        EngineSettings s = new EngineSettings(l, 64, 8, 3, false, true, 1).withBatch(2);
        // No forward pass, I/O or communicator: a refusal must come before any of them is touched.
        ChunkedPrefill prefill = new ChunkedPrefill(s, null, null, null, (t, rows, start, sequence) -> {
            throw new AssertionError("no chunk may be made");
        }, step -> {
            throw new AssertionError("nothing to finish");
        });
        IllegalArgumentException sequence = assertThrows(IllegalArgumentException.class,
                () -> prefill.run(2, new int[] {1}, null));
        assertEquals("sequence 2 of a batch of 2: need 0..1", sequence.getMessage());
        assertThrows(IllegalArgumentException.class, () -> prefill.run(-1, new int[] {1}, null));
        IllegalArgumentException empty = assertThrows(IllegalArgumentException.class,
                () -> prefill.run(0, new int[0], null));
        assertEquals("a prompt of 0 tokens; this engine takes 1..8", empty.getMessage());
        assertThrows(IllegalArgumentException.class, () -> prefill.run(1, new int[9], null));
    }
}
