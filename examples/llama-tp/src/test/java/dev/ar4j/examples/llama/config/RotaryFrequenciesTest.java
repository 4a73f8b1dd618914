package dev.ar4j.examples.llama.config;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

class RotaryFrequenciesTest {

    private static LlamaConfig config(double theta, RopeScaling scaling) {
        return new LlamaConfig(4096, 14336, 1, 32, 8, 128, 128256, 131072, 1e-5, theta, scaling, false, "bfloat16");
    }

    @Test
    void defaultFrequenciesAreThePowersOfTheta() {
        float[] inv = RotaryFrequencies.of(config(500000.0, null));
        assertEquals(64, inv.length);
        assertEquals(1.0f, inv[0]);
        for (int i = 0; i < inv.length; i++) {
            double expected = 1.0 / Math.pow(500000.0, 2.0 * i / 128);
            assertEquals(expected, inv[i], expected * 1e-6, "inv_freq[" + i + "]");
        }
    }

    @Test
    void llama3ScalingKeepsHighDividesLowAndBlendsBetween() {
        RopeScaling s = new RopeScaling(8.0, 1.0, 4.0, 8192);
        float[] plain = RotaryFrequencies.of(config(500000.0, null));
        float[] scaled = RotaryFrequencies.of(config(500000.0, s));
        int kept = 0;
        int divided = 0;
        int blended = 0;
        for (int i = 0; i < plain.length; i++) {
            double wavelen = 2 * Math.PI / plain[i];
            if (wavelen < 8192 / 4.0) {
                assertEquals(plain[i], scaled[i], "high frequency " + i + " is kept");
                kept++;
            } else if (wavelen > 8192 / 1.0) {
                assertEquals(plain[i] / 8.0f, scaled[i], Math.ulp(plain[i] / 8.0f), "low frequency " + i + " / factor");
                divided++;
            } else {
                double smooth = (8192 / wavelen - 1.0) / (4.0 - 1.0);
                double expected = (1 - smooth) * plain[i] / 8.0 + smooth * plain[i];
                assertEquals(expected, scaled[i], expected * 1e-5, "medium frequency " + i + " is blended");
                blended++;
            }
        }
        // Llama 3.1's 128 head dims: all three bands are present.
        assertEquals(64, kept + divided + blended);
        assertEquals(true, kept > 0 && divided > 0 && blended > 0, kept + "/" + divided + "/" + blended);
    }
}
