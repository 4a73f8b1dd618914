package dev.ar4j.examples.llama.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
        assertEquals(ForwardPass.MAX_EXCHANGED_VOCAB, LlamaKernels.MAX_EXCHANGED_VOCAB, "the Java copy of the limit");
    }
}
