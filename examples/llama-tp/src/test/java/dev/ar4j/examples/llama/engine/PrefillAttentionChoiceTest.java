package dev.ar4j.examples.llama.engine;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ar4j.examples.llama.model.LlamaConfig;
import dev.ar4j.examples.llama.model.TensorParallelLayout;
import org.junit.jupiter.api.Test;

/**
 * A prefill chunk's attention is the one tensor-core kernel where the head dimension is 64 or 128, unless
 * {@code -Dar4j.llama.prefill.attention=gemm} asks for the batched GEMMs, which serve every head dimension; a bad
 * value names the accepted ones.
 */
class PrefillAttentionChoiceTest {

    private static TensorParallelLayout withHeadDim(int headDim) {
        return new TensorParallelLayout(new LlamaConfig(4 * headDim, 256, 2, 4, 2, headDim, 512, 4096, 1e-5, 10000,
                null, false, "bfloat16"), 1);
    }

    @Test
    void theOneKernelRunsByDefaultWhereBuilt() {
        assertTrue(PrefillAttention.inOneKernel(withHeadDim(128), null), "the default is the one kernel");
        assertTrue(PrefillAttention.inOneKernel(withHeadDim(64), null));
        assertFalse(PrefillAttention.inOneKernel(withHeadDim(96), null), "the GEMMs serve other head dimensions");
        assertFalse(PrefillAttention.inOneKernel(withHeadDim(128), "gemm"));
        assertTrue(PrefillAttention.inOneKernel(withHeadDim(128), "fused"));
        assertTrue(PrefillAttention.inOneKernel(withHeadDim(64), "fused"));
        assertFalse(PrefillAttention.inOneKernel(withHeadDim(96), "fused"), "the kernel is built for 64 and 128");
    }

    @Test
    void anotherValueIsRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> PrefillAttention.inOneKernel(withHeadDim(128), "flash"));
        assertTrue(e.getMessage().contains("-Dar4j.llama.prefill.attention=flash") && e.getMessage().contains("gemm")
                && e.getMessage().contains("fused"),
                e.getMessage());
    }
}
