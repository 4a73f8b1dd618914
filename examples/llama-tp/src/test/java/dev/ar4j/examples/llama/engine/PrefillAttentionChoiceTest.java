package dev.ar4j.examples.llama.engine;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ar4j.examples.llama.model.LlamaConfig;
import dev.ar4j.examples.llama.model.TensorParallelLayout;
import org.junit.jupiter.api.Test;

/**
 * A prefill chunk's attention is the one tensor-core kernel where the head dimension is 64 or 128 (unless
 * {@code -Dar4j.llama.prefill.attention=gemm}), the batched GEMMs elsewhere; a bad value names the accepted ones.
 */
class PrefillAttentionChoiceTest {

    private static TensorParallelLayout withHeadDim(int headDim) {
        return new TensorParallelLayout(new LlamaConfig(4 * headDim, 256, 2, 4, 2, headDim, 512, 4096, 1e-5, 10000,
                null, false, "bfloat16"), 1);
    }

    @Test
    void headDimensionsOf64And128RunTheOneKernel() {
        assertTrue(PrefillAttention.inOneKernel(withHeadDim(128), null));
        assertTrue(PrefillAttention.inOneKernel(withHeadDim(64), "auto"));
        assertFalse(PrefillAttention.inOneKernel(withHeadDim(96), null), "the kernel is built for 64 and 128");
        assertFalse(PrefillAttention.inOneKernel(withHeadDim(128), "gemm"), "asked for the batched GEMMs");
    }

    @Test
    void anotherValueIsRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> PrefillAttention.inOneKernel(withHeadDim(128), "flash"));
        assertTrue(e.getMessage().contains("-Dar4j.llama.prefill.attention=flash") && e.getMessage().contains("gemm"),
                e.getMessage());
    }
}
