package dev.ar4j.examples.llama.engine;

import org.junit.jupiter.api.Test;

import java.util.function.IntUnaryOperator;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** The serving loop's heap measure ({@link StepTiming#allocatedBySteps}): warm-up excluded, steady allocation counted. */
class StepAllocationTest {

    /** Where a step's arrays escape to, so that no compiler removes their allocation. */
    static volatile Object escaped;

    @Test
    void allocationsOfTheWarmUpAreNotCounted() {
        int[] calls = {0};
        // Allocates 1 KiB in each of its first 50 calls only (as first-use linkage would), then nothing.
        IntUnaryOperator step = sink -> {
            if (calls[0]++ < 50) {
                escaped = new byte[1024];
            }
            return sink + 1;
        };
        long counted = StepTiming.allocatedBySteps(step, 100, 1000);
        assertTrue(counted < 4096, "the first 50 calls' 50 KiB fall in the warm-up; counted " + counted + " B");
    }

    @Test
    void aSteadyAllocationIsCounted() {
        IntUnaryOperator step = sink -> {
            escaped = new long[16];  // 144 bytes a call with the header
            return sink + 1;
        };
        long counted = StepTiming.allocatedBySteps(step, 100, 1000);
        assertTrue(counted >= 1000 * 128L, "1000 calls of at least 128 B each; counted " + counted + " B");
    }
}
