package dev.ar4j.examples.llama;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ar4j.examples.llama.engine.EngineSettings;
import dev.ar4j.examples.llama.model.SyntheticModels;
import dev.ar4j.examples.llama.model.TensorParallelLayout;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The all-reduce sizes a bench explains: one per distinct prefill chunk length, the decode and the verify step. */
class AllReduceSizesTest {

    private static EngineSettings llama3(int prompt, int draft) {
        return new EngineSettings(new TensorParallelLayout(SyntheticModels.byName("llama3-8b"), 2), prompt + 8, prompt,
                draft, false, true, 1, false, 1024);
    }

    @Test
    void aPromptOfWholeChunksHasOneChunkSize() {
        List<AllReduceSizes.Size> sizes = AllReduceSizes.of(llama3(4096, 3), 4096);
        assertEquals(List.of(
                new AllReduceSizes.Size("prefill chunk", 1024, 1024L * 4096 * 2, 65),
                new AllReduceSizes.Size("decode", 1, 4096L * 2, 65),
                new AllReduceSizes.Size("verify", 3, 3L * 4096 * 2, 65)), sizes);
    }

    @Test
    void unevenChunksGiveEachLengthOnceAndNoVerifyWithoutADraft() {
        // 2500 tokens in chunks of at most 1024: 834, 833, 833.
        List<AllReduceSizes.Size> sizes = AllReduceSizes.of(llama3(2500, 0), 2500);
        assertEquals(List.of(
                new AllReduceSizes.Size("prefill chunk", 834, 834L * 4096 * 2, 65),
                new AllReduceSizes.Size("prefill chunk", 833, 833L * 4096 * 2, 65),
                new AllReduceSizes.Size("decode", 1, 4096L * 2, 65)), sizes);
    }
}
