package dev.ar4j.examples.llama.model;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

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

    /** The issue-29 config: transformers' buffer holds 0.028718501 at index 7 (the engine had 0.028718496). */
    @Test
    void mediumBandMatchesTransformersOnTheIssuesConfig() {
        LlamaConfig c = new LlamaConfig(512, 1536, 1, 8, 4, 64, 4096, 2048, 1e-5, 500000.0,
                new RopeScaling(8.0, 1.0, 4.0, 256), false, "bfloat16");
        float[] inv = RotaryFrequencies.of(c);
        assertEquals(0.028718501f, inv[7]);
        assertEquals(Float.floatToIntBits(0.028718501f), Float.floatToIntBits(inv[7]));
    }

    /**
     * Llama 3.1 8B's medium band (head_dim 128, theta 5e5, factor 8, low 1, high 4, original 8192) and one of a
     * context that is not a power of two: the values PyTorch 1.13.1 (Debian's build, on the CPU) gives for
     * transformers' {@code _default} + {@code _compute_llama3_parameters} arithmetic, run on the build machine.
     */
    @Test
    void mediumBandsMatchTorchsArithmetic() {
        float[] l31 = RotaryFrequencies.llama3(RotaryFrequencies.defaults(128, 500000.0), new RopeScaling(8, 1, 4, 8192));
        float[] torch = {0.0021665706299245358f, 0.0013718936825171113f, 0.0008567514596506953f,
            0.0005248460220173001f, 0.0003126936499029398f, 0.0001785077911335975f};
        for (int i = 0; i < torch.length; i++) {
            assertEquals(Float.floatToIntBits(torch[i]), Float.floatToIntBits(l31[29 + i]), "llama 3.1 inv_freq[" + (29 + i)
                    + "]");
        }
        float[] odd = RotaryFrequencies.llama3(RotaryFrequencies.defaults(128, 10000.0), new RopeScaling(4.5, 1.5, 3.7,
                3000));
        float[] torchOdd = {0.007182080764323473f, 0.005117646884173155f, 0.003605481004342437f,
            0.002502641174942255f, 0.0017025815322995186f, 0.0011259623570367694f, 0.0007137699867598712f};
        for (int i = 0; i < torchOdd.length; i++) {
            assertEquals(Float.floatToIntBits(torchOdd[i]), Float.floatToIntBits(odd[34 + i]), "inv_freq[" + (34 + i) + "]");
        }
    }

    /** fl32(a op b), computed in double and rounded once: exact for one fp32 operation (double holds 2 * 24 + 2 bits). */
    private static float fl(double v) {
        return (float) v;
    }

    /**
     * transformers' operations one by one, each rounded to fp32 from a double (an emulation independent of the
     * float arithmetic in RotaryFrequencies): {@code 2 * math.pi / inv} is {@code inv.reciprocal() * 2pi}, Python
     * scalars meet the fp32 tensor as fp32.
     */
    private static float transformersLlama3(float inv, RopeScaling s) {
        double old = s.originalMaxPositionEmbeddings();
        float wavelen = fl(fl(1.0 / inv) * (double) fl(2 * Math.PI));
        float lowWavelen = fl(old / s.lowFreqFactor());
        float highWavelen = fl(old / s.highFreqFactor());
        float llama = wavelen > lowWavelen ? fl(inv / (double) fl(s.factor())) : inv;
        if (!(wavelen < highWavelen) && !(wavelen > lowWavelen)) {
            float smooth = fl(fl(fl(fl(1.0 / wavelen) * (double) fl(old)) - (double) fl(s.lowFreqFactor()))
                    / (double) fl(s.highFreqFactor() - s.lowFreqFactor()));
            float left = fl(fl(fl(1.0 - smooth) * (double) llama) / (double) fl(s.factor()));
            llama = fl(left + (double) fl((double) smooth * llama));
        }
        return llama;
    }

    static Stream<Arguments> scalings() {
        return Stream.of(
                // Llama 3.1 8B, Llama 3.2 1B/3B (factor 32), the issue's small context, the reference's models.
                Arguments.of(128, 500000.0, new RopeScaling(8.0, 1.0, 4.0, 8192)),
                Arguments.of(64, 500000.0, new RopeScaling(32.0, 1.0, 4.0, 8192)),
                Arguments.of(64, 500000.0, new RopeScaling(8.0, 1.0, 4.0, 256)),
                Arguments.of(64, 500000.0, new RopeScaling(8.0, 1.0, 4.0, 64)),
                Arguments.of(128, 500000.0, new RopeScaling(8.0, 1.0, 4.0, 512)),
                // A context that is not a power of two and factors that are not small integers.
                Arguments.of(128, 10000.0, new RopeScaling(4.5, 1.5, 3.7, 3000)),
                Arguments.of(96, 1000000.0, new RopeScaling(16.0, 0.5, 6.0, 4000)));
    }

    @ParameterizedTest
    @MethodSource("scalings")
    void llama3IsTransformersOperationsBitForBit(int headDim, double theta, RopeScaling s) {
        float[] plain = RotaryFrequencies.defaults(headDim, theta);
        float[] scaled = RotaryFrequencies.llama3(plain, s);
        int medium = 0;
        for (int i = 0; i < plain.length; i++) {
            float expected = transformersLlama3(plain[i], s);
            assertEquals(Float.floatToIntBits(expected), Float.floatToIntBits(scaled[i]),
                    "inv_freq[" + i + "] " + expected + " vs " + scaled[i]);
            float wavelen = (1.0f / plain[i]) * (float) (2 * Math.PI);
            if (!(wavelen < (float) (s.originalMaxPositionEmbeddings() / s.highFreqFactor()))
                    && !(wavelen > (float) (s.originalMaxPositionEmbeddings() / s.lowFreqFactor()))) {
                medium++;
            }
        }
        assertTrue(medium > 0, "the config has a medium band");
    }

    /** The default frequencies: {@code 1 / fl32(fl32(theta) ** fl32(2i / dim))}, the power correctly rounded. */
    @Test
    void defaultsRoundThePowerOnceToFp32() {
        float[] inv = RotaryFrequencies.defaults(64, 500000.0);
        for (int i = 0; i < inv.length; i++) {
            float exponent = (float) (2 * i) / 64f;
            float power = (float) Math.pow(500000f, exponent);
            assertEquals(Float.floatToIntBits(1.0f / power), Float.floatToIntBits(inv[i]), "inv_freq[" + i + "]");
        }
    }
}
