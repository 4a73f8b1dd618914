package dev.ar4j.examples.llama;

import dev.ar4j.examples.llama.engine.EngineSettings;

import java.util.ArrayList;
import java.util.List;

/**
 * The all-reduces a bench's steps make, by size: each layer's two (after the attention and after the MLP) and the
 * first layer's input norm, each an all-reduce + residual add + RMSNorm of {@code rows x hidden} bf16 elements. The
 * bench prints what ar4j runs for each size ({@code Communicator.explainResidualRmsNorm}).
 */
final class AllReduceSizes {

    /**
     * One size of all-reduce.
     *
     * @param step         the step that makes it: decode, verify, or a prefill chunk
     * @param rows         the rows (tokens) of each call
     * @param bytes        each call's bytes
     * @param callsPerStep the calls of this size in one step (one chunk for a prefill)
     */
    record Size(String step, int rows, long bytes, int callsPerStep) {
    }

    private AllReduceSizes() {
    }

    /**
     * The sizes of a bench of a prompt of {@code prompt} tokens: the prefill's chunks (each distinct chunk length of
     * {@link EngineSettings#prefillChunks}), the decode step and, with a draft, the verify step.
     *
     * @param s      the engine's settings
     * @param prompt the prompt's tokens, positive
     * @return the sizes, in that order
     */
    static List<Size> of(EngineSettings s, int prompt) {
        int hidden = s.layout().config().hiddenSize();
        int calls = 2 * s.layout().config().numHiddenLayers() + 1;
        List<Size> sizes = new ArrayList<>();
        int[] chunks = s.prefillChunks(prompt);
        for (int i = 0; i < chunks.length; i++) {
            if (i == 0 || chunks[i] != chunks[i - 1]) {
                sizes.add(new Size("prefill chunk", chunks[i], 2L * chunks[i] * hidden, calls));
            }
        }
        int decode = s.stepTokens(false);
        sizes.add(new Size("decode", decode, 2L * decode * hidden, calls));
        if (s.draft() > 0) {
            int verify = s.stepTokens(true);
            sizes.add(new Size("verify", verify, 2L * verify * hidden, calls));
        }
        return sizes;
    }
}
