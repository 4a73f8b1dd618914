package dev.ar4j.examples.llama.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * The {@code -Dar4j.llama.linear.kernel} values name the header's {@code AR4J_LLAMA_LINEAR_ROWS_*} kernels
 * (auto by default); another value is refused saying which are accepted.
 */
class LinearKernelChoiceTest {

    @Test
    void eachValueNamesTheHeadersKernel() {
        assertEquals(0, ForwardPass.linearRowsKernel(null), "the default is automatic");
        assertEquals(0, ForwardPass.linearRowsKernel("auto"));
        assertEquals(1, ForwardPass.linearRowsKernel("registers"));
        assertEquals(2, ForwardPass.linearRowsKernel("ring"));
    }

    @Test
    void anotherValueIsRefusedWithTheAcceptedOnes() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ForwardPass.linearRowsKernel("tma"));
        assertTrue(e.getMessage().contains("-Dar4j.llama.linear.kernel=tma"), e.getMessage());
        assertTrue(e.getMessage().contains("auto") && e.getMessage().contains("registers")
                && e.getMessage().contains("ring"), e.getMessage());
    }
}
