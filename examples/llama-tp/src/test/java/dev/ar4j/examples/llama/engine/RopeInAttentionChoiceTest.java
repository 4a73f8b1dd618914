package dev.ar4j.examples.llama.engine;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import org.junit.jupiter.api.Test;

/**
 * {@code -Dar4j.llama.attention.rope} turns the RoPE + KV append inside the decode attention on or off (the default);
 * another value is refused saying which are accepted. The steps the fused call takes are the header's: at most
 * {@code AR4J_LLAMA_MAX_ATTENTION_STORED_TOKENS} tokens and {@code AR4J_LLAMA_MAX_ROPE_ATTENTION_ROWS} query rows a
 * sequence (LlamaKernels, which loads the kernels library first).
 */
class RopeInAttentionChoiceTest {

    @Test
    void theDefaultIsOffAndTrueTurnsItOn() {
        assertFalse(StepChoices.ropeInAttention(null));
        assertTrue(StepChoices.ropeInAttention("true"));
        assertFalse(StepChoices.ropeInAttention("false"));
    }

    @Test
    void anotherValueIsRefusedWithTheAcceptedOnes() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> StepChoices.ropeInAttention("yes"));
        assertTrue(e.getMessage().contains("-Dar4j.llama.attention.rope=yes"), e.getMessage());
        assertTrue(e.getMessage().contains("true") && e.getMessage().contains("false"), e.getMessage());
    }

    @Test
    void decodeAndVerifyStepsOfOneBlocksRowsTakeIt() {
        assumeTrue(RopeInAttentionChoiceTest.class.getResource("/META-INF/native/linux-x86_64/libar4j_llama_kernels.so")
                != null, "the kernels library was not built (-Dar4j.native.skip=true)");
        assertTrue(LlamaKernels.ropeAttentionApplies(1, 4), "llama3-8b decode: 4 rows");
        assertTrue(LlamaKernels.ropeAttentionApplies(8, 4), "a verify of 8: 32 rows");
        assertTrue(LlamaKernels.ropeAttentionApplies(4, 8), "GQA 8, 4 tokens: 32 rows");
        assertFalse(LlamaKernels.ropeAttentionApplies(8, 8), "64 rows: more than one block's");
        assertFalse(LlamaKernels.ropeAttentionApplies(9, 1), "9 tokens: the scores are not kept");
        assertFalse(LlamaKernels.ropeAttentionApplies(0, 4));
    }
}
