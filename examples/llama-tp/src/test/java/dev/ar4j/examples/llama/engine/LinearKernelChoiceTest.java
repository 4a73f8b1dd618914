package dev.ar4j.examples.llama.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * The {@code -Dar4j.llama.linear.kernel} values name the header's {@code AR4J_LLAMA_LINEAR_ROWS_*} kernels
 * (auto by default), and {@code -Dar4j.llama.linear} bounds the steps the rows kernel takes; another value of either
 * is refused saying which are accepted.
 */
class LinearKernelChoiceTest {

    @Test
    void eachValueNamesTheHeadersKernel() {
        assertEquals(0, StepChoices.linearRowsKernel(null), "the default is automatic");
        assertEquals(0, StepChoices.linearRowsKernel("auto"));
        assertEquals(1, StepChoices.linearRowsKernel("registers"));
        assertEquals(2, StepChoices.linearRowsKernel("ring"));
    }

    @Test
    void anotherValueIsRefusedWithTheAcceptedOnes() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> StepChoices.linearRowsKernel("tma"));
        assertTrue(e.getMessage().contains("-Dar4j.llama.linear.kernel=tma"), e.getMessage());
        assertTrue(e.getMessage().contains("auto") && e.getMessage().contains("registers")
                && e.getMessage().contains("ring"), e.getMessage());
    }

    @Test
    void theProductsLibraryChoiceBoundsTheRowsKernelsTokens() {
        assertEquals(1, StepChoices.rowsKernelMaxTokens(null, 8), "auto: one-token steps");
        assertEquals(1, StepChoices.rowsKernelMaxTokens("auto", 8));
        assertEquals(8, StepChoices.rowsKernelMaxTokens("rows", 8));
        assertEquals(0, StepChoices.rowsKernelMaxTokens("cublas", 8));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> StepChoices.rowsKernelMaxTokens("gemv", 8));
        assertTrue(e.getMessage().contains("-Dar4j.llama.linear=gemv") && e.getMessage().contains("cublas"),
                e.getMessage());
    }
}
