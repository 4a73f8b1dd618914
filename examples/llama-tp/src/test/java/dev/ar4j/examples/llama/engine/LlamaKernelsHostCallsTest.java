package dev.ar4j.examples.llama.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import org.junit.jupiter.api.Test;

/**
 * The kernels library's host-only calls through {@link LlamaKernels}'s static helpers, before any
 * instance exists (the engine sizes its workspaces that way, before it binds the kernels to a
 * stream): they must load the library themselves. No GPU is needed for them.
 */
class LlamaKernelsHostCallsTest {

    @Test
    void staticHelpersWorkBeforeAnyInstance() {
        assumeTrue(LlamaKernelsHostCallsTest.class.getResource("/META-INF/native/linux-x86_64/libar4j_llama_kernels.so")
                != null, "the kernels library was not built (-Dar4j.native.skip=true)");
        int splits = LlamaKernels.attentionSplits(1, 32, 8, 4096, 132);
        assertTrue(splits >= 1 && splits <= 128, "splits " + splits);
        assertTrue(LlamaKernels.attentionWorkspaceBytes(1, 32, 8, 128, 4096, splits) > 0);
        assertEquals(16 + 8L * ((128256 + 7) / 8), LlamaKernels.linearRowsArgmaxWorkspaceBytes(1, 128256));
        assertEquals(0, LlamaKernels.linearRowsArgmaxWorkspaceBytes(9, 128256), "more rows than the kernel takes");
        assertEquals(4, LlamaKernels.argmaxExchangeFloats(1, 2), "one row at TP 2: 2 pairs");
        assertEquals(20, LlamaKernels.argmaxExchangeFloats(3, 3), "18 floats, padded to a multiple of 4");
        assertEquals(0, LlamaKernels.argmaxExchangeFloats(0, 2));
        assertEquals(StepChoices.MAX_EXCHANGED_VOCAB, LlamaKernels.MAX_EXCHANGED_VOCAB, "the Java copy of the limit");
    }

    @Test
    void batchedHelpersReachTheirOwnFunctions() {
        assumeTrue(LlamaKernelsHostCallsTest.class.getResource("/META-INF/native/linux-x86_64/libar4j_llama_kernels.so")
                != null, "the kernels library was not built (-Dar4j.native.skip=true)");
        // One sequence is the single-sequence call.
        assertEquals(LlamaKernels.attentionSplits(4, 32, 8, 4096, 132),
                LlamaKernels.attentionBatchedSplits(4, 1, 32, 8, 4096, 132));
        assertEquals(LlamaKernels.attentionWorkspaceBytes(4, 32, 8, 128, 4096, 7),
                LlamaKernels.attentionBatchedWorkspaceBytes(4, 1, 32, 8, 128, 4096, 7));
        // 64 decodes of 32/8 heads: 64 x 8 blocks per split, so ceil(4 x 132 / 512) = 2 splits; their
        // workspace: 512 counters, 2048 rows x 2 splits x (2 + 128) fp32, 2048 x 8192 bf16 scores.
        assertEquals(2, LlamaKernels.attentionBatchedSplits(64, 64, 32, 8, 8192, 132));
        assertEquals(2048 + 2048L * 2 * 2 * 4 + 2048L * 2 * 128 * 4 + 2048L * 8192 * 2,
                LlamaKernels.attentionBatchedWorkspaceBytes(64, 64, 32, 8, 128, 8192, 2));
        assertEquals(0, LlamaKernels.attentionBatchedWorkspaceBytes(3, 2, 32, 8, 128, 8192, 2), "n % sequences != 0");
        assertEquals(1, LlamaKernels.attentionBatchedSplits(3, 2, 32, 8, 8192, 132), "n % sequences != 0");
    }

    @Test
    void theRowsKernelChoiceRefusesAnUnknownKernel() {
        assumeTrue(LlamaKernelsHostCallsTest.class.getResource("/META-INF/native/linux-x86_64/libar4j_llama_kernels.so")
                != null, "the kernels library was not built (-Dar4j.native.skip=true)");
        EngineException e = assertThrows(EngineException.class, () -> LlamaKernels.chooseLinearRowsKernel(9));
        assertTrue(e.getMessage().contains("ar4j_llama_set_linear_rows_kernel(9)")
                && e.getMessage().contains("outside its documented range"), e.getMessage());
        LlamaKernels.chooseLinearRowsKernel(StepChoices.linearRowsKernel("registers"));
        LlamaKernels.chooseLinearRowsKernel(StepChoices.linearRowsKernel("auto"));
    }
}
