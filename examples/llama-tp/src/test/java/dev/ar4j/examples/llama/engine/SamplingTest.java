package dev.ar4j.examples.llama.engine;

import dev.ar4j.examples.llama.model.SyntheticModels;
import dev.ar4j.examples.llama.model.TensorParallelLayout;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SamplingTest {

    private static void refused(String expected, Runnable make) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, make::run);
        assertTrue(e.getMessage().contains(expected), () -> "'" + e.getMessage() + "' does not say '" + expected + "'");
    }

    @Test
    void greedyIsTemperatureZero() {
        assertTrue(Sampling.GREEDY.greedy());
        assertEquals("greedy", Sampling.GREEDY.describe());
        assertTrue(new Sampling(0, 0, 1, 42).greedy());
        Sampling s = new Sampling(0.7, 50, 0.9, 1234);
        assertFalse(s.greedy());
        assertEquals("sampling: temperature 0.7, top-k 50, top-p 0.9, seed 1234", s.describe());
        // The edges of the ranges are accepted.
        new Sampling(1e-30, 0, 1e-30, -1);
        new Sampling(3e38, Integer.MAX_VALUE, 1, Long.MIN_VALUE);
    }

    @Test
    void refusesValuesOutsideTheirRanges() {
        refused("temperature -0.5: need a finite value >= 0 (0: greedy, the argmax)", () -> new Sampling(-0.5, 0, 1, 0));
        refused("temperature NaN: need a finite value >= 0", () -> new Sampling(Double.NaN, 0, 1, 0));
        refused("temperature Infinity: need a finite value >= 0", () -> new Sampling(Double.POSITIVE_INFINITY, 0, 1, 0));
        refused("outside the range of a float", () -> new Sampling(1e-50, 0, 1, 0));
        refused("outside the range of a float", () -> new Sampling(1e39, 0, 1, 0));
        refused("top-k -1: need k >= 0 (0: every logit)", () -> new Sampling(1, -1, 1, 0));
        refused("top-p 0.0: need 0 < p <= 1 (1: every logit)", () -> new Sampling(1, 0, 0, 0));
        refused("top-p 1.5: need 0 < p <= 1", () -> new Sampling(1, 0, 1.5, 0));
        refused("top-p 1.0E-50: below the smallest float", () -> new Sampling(1, 0, 1e-50, 0));
        refused("top-p NaN: need 0 < p <= 1", () -> new Sampling(1, 0, Double.NaN, 0));
        refused("with temperature 0: greedy decoding takes the argmax", () -> new Sampling(0, 5, 1, 0));
        refused("with temperature 0: greedy decoding takes the argmax", () -> new Sampling(0, 0, 0.9, 0));
    }

    @Test
    void engineSettingsCarrySamplingWithoutAVerifyStep() {
        TensorParallelLayout l = new TensorParallelLayout(SyntheticModels.byName("tiny"), 1);
        Sampling s = new Sampling(0.8, 40, 0.95, 7);
        assertEquals(Sampling.GREEDY, new EngineSettings(l, 64, 8, 3, false, true, 1).sampling());
        assertEquals(s, new EngineSettings(l, 64, 8, 0, false, true, 1, false, 1024, s).sampling());
        refused("a verify step of 3 draft tokens with sampling: temperature 0.8",
                () -> new EngineSettings(l, 64, 8, 3, false, true, 1, false, 1024, s));
        refused("no sampling settings", () -> new EngineSettings(l, 64, 8, 0, false, true, 1, false, 1024, null));
    }
}
