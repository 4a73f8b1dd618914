package dev.ar4j.examples.llama.it;

import dev.ar4j.dispatch.Algorithm;
import dev.ar4j.examples.llama.model.ConfigReader;
import dev.ar4j.examples.llama.model.LlamaConfig;
import dev.ar4j.examples.llama.model.RopeScaling;
import dev.ar4j.examples.llama.model.RotaryFrequencies;
import dev.ar4j.examples.llama.engine.EngineSettings;
import dev.ar4j.examples.llama.engine.RankEngine;
import dev.ar4j.examples.llama.engine.RankGroup;
import dev.ar4j.examples.llama.model.ModelFolder;
import dev.ar4j.examples.llama.model.LlamaTensors;
import dev.ar4j.examples.llama.model.TensorParallelLayout;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The engine against Hugging Face transformers: the folders {@code reference/make_reference.py}
 * writes (path: {@code -Dar4j.llama.reference=DIR} or {@code AR4J_LLAMA_REFERENCE}), loaded at
 * TP 1, 2, 4 and 8 (those its config splits into; KV heads replicated and the vocabulary padded
 * where the degree needs it) with every rank on GPU 0 (ar4j's custom kernels without NCCL; TP 1
 * runs NCCL's one-rank all-reduce); fp16 and fp32 checkpoints converted to bf16 while loading.
 * For each model and degree:
 * <ul>
 *   <li>the rotary inverse frequencies equal the model's buffer ({@link #checkFrequencies});</li>
 *   <li>the 33 greedy tokens (prefill, then 32 decode steps fed the reference's tokens) equal
 *       transformers' exactly;</li>
 *   <li>every logit of every recorded prompt position (format 2: the last 8, the rows the engine's
 *       chunked prefill keeps; a format-1 reference of a longer prompt is refused) and of every decode step is within {@link #TOLERANCE} of the row's largest |reference
 *       logit| (max abs and relative error printed per step);</li>
 *   <li>every rank's logits (every prompt position's included) are bitwise the same;</li>
 *   <li>verify steps of 3 draft tokens give the logits of the 3 decode steps within the same tolerance
 *       and the same greedy tokens;</li>
 *   <li>a token id outside the vocabulary is refused and the engine goes on (the last decode step
 *       again matches the reference);</li>
 *   <li>at TP 1, the run with every all-reduce forced to NCCL ({@code --comm nccl}) gives bitwise
 *       the logits of the default run;</li>
 *   <li>at TP &gt; 1, a run that keeps no logits (its greedy steps exchange each rank's (max, index)
 *       instead of all-reducing the logits) gives every rank the tokens of the default run.</li>
 * </ul>
 * The KV cache holds {@link #contextFor} positions: at least the prompt and the decode steps (the
 * {@code long} model's prompt of 2048 tokens runs as one prefill chunk with the default chunk, and in chunks of
 * {@link #SMALL_CHUNK} in {@link #longPromptInChunks}).
 */
@Tag("gpu")
class LlamaReferenceIT {

    /** Logit error allowed, as a fraction of the row's largest |reference logit|: bf16 rounding
     *  differences (RMSNorm rounded once instead of twice, fp32 sums in another order) over 4 layers. */
    static final double TOLERANCE = 0.03;
    static final int DRAFT = 3;
    /** The fewest KV-cache positions an engine gets (the short prompts' models). */
    static final int CONTEXT = 64;
    static final Duration STEP = Duration.ofMinutes(5);

    /** What one rank saw. */
    record RankRun(int[] tokens, float[][] prefill, float[][] decode, float[][] verify, int[] verifyTokens) {
    }

    static Path root() {
        String dir = System.getProperty("ar4j.llama.reference", System.getenv("AR4J_LLAMA_REFERENCE"));
        if (dir == null || !Files.isRegularFile(Path.of(dir, "index.json"))) {
            fail("set -Dar4j.llama.reference (or AR4J_LLAMA_REFERENCE) to the OUT_DIR of reference/make_reference.py "
                    + "(an index.json there); got " + dir);
        }
        return Path.of(dir);
    }

    /** The degrees each model runs at. */
    static final int[] DEGREES = {1, 2, 4, 8};

    /**
     * Every model at every degree of {@link #DEGREES} its config splits into (TP divides the heads and the MLP,
     * divides the KV heads or is a multiple of them; every rank holds some of the vocabulary): TP 4 and 8
     * replicate the {@code kvrep} model's 2 KV heads and pad its vocabulary of 4001.
     */
    static Stream<Arguments> cases() throws IOException {
        List<Arguments> out = new ArrayList<>();
        for (String name : ReferenceModel.names(root())) {
            LlamaConfig c = ConfigReader.read(ReferenceModel.read(root(), name).modelDir());
            for (int tp : DEGREES) {
                if (splits(c, tp)) {
                    out.add(Arguments.of(name, tp));
                } else {
                    System.out.println(name + ": TP " + tp + " does not split this model; not run");
                }
            }
        }
        return out.stream();
    }

    static boolean splits(LlamaConfig c, int tp) {
        try {
            TensorParallelLayout l = new TensorParallelLayout(c, tp);
            return l.vocabEnd(tp - 1) > l.vocabStart(tp - 1);
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    @ParameterizedTest(name = "{0} at TP {1}")
    @MethodSource("cases")
    void matchesTransformers(String name, int tp) throws IOException {
        ReferenceModel ref = ReferenceModel.read(root(), name);
        LlamaConfig c = ConfigReader.read(ref.modelDir());
        checkFrequencies(ref, c);
        if (!ref.marginOk()) {
            System.out.println(name + ": the reference says margin_ok=false: a near tie may flip a greedy token");
        }
        List<RankRun> ranks = run(ref, c, tp, Algorithm.AUTO);
        RankRun r0 = ranks.get(0);
        for (int r = 1; r < ranks.size(); r++) {
            RankRun other = ranks.get(r);
            assertArrayEquals(r0.tokens(), other.tokens(), "rank " + r + " tokens");
            for (int s = 0; s < r0.decode().length; s++) {
                assertArrayEquals(r0.decode()[s], other.decode()[s], "rank " + r + " decode step " + s + " logits bits");
            }
            for (int s = 0; s < r0.prefill().length; s++) {
                assertArrayEquals(r0.prefill()[s], other.prefill()[s], "rank " + r + " prefill row " + s);
            }
            for (int s = 0; s < r0.verify().length; s++) {
                assertArrayEquals(r0.verify()[s], other.verify()[s], "rank " + r + " verify row " + s);
            }
        }
        String label = name + " tp " + tp;
        double worst = compareWithReference(label, ref, r0);
        for (int s = 0; s < r0.verify().length; s++) {
            worst = Math.max(worst, compare(label + " verify row " + s + " vs decode", r0.decode()[s], r0.verify()[s]));
            assertEquals(r0.tokens()[s + 1], r0.verifyTokens()[s], label + " verify greedy token " + s);
        }
        System.out.printf(Locale.ROOT, "%s: worst relative logit error %.5f (tolerance %.3f)%n", label, worst, TOLERANCE);
        assertArrayEquals(ref.tokens(), r0.tokens(), label + " greedy tokens (prefill + 32 decode steps)");
        if (tp > 1) {
            // Without kept logits greedy steps exchange each rank's (max, index) instead of all-reducing the logits:
            // the same tokens as the argmax of the all-reduced logits, near ties included, on every rank.
            List<RankRun> exchanged = run(ref, c, tp, Algorithm.AUTO, false);
            for (int r = 0; r < exchanged.size(); r++) {
                assertArrayEquals(r0.tokens(), exchanged.get(r).tokens(), label + " rank " + r
                        + ": tokens through the argmax exchange");
                assertArrayEquals(r0.verifyTokens(), exchanged.get(r).verifyTokens(), label + " rank " + r
                        + ": verify tokens through the argmax exchange");
            }
        }
        if (tp == 1) {
            RankRun nccl = run(ref, c, 1, Algorithm.NCCL).get(0);
            assertArrayEquals(r0.tokens(), nccl.tokens(), label + " --comm nccl tokens");
            for (int s = 0; s < r0.decode().length; s++) {
                assertArrayEquals(r0.decode()[s], nccl.decode()[s], label + " --comm nccl decode step " + s + " bits");
            }
        }
    }

    /** The chunk of {@link #longPromptInChunks}: the {@code long} model's prompt of 2048 tokens in 8 chunks. */
    static final int SMALL_CHUNK = 256;

    /**
     * The {@code long} model's prompt in chunks of {@link #SMALL_CHUNK} tokens, each appending to the KV cache and
     * attending every earlier position (the default chunk runs it as one): transformers' greedy tokens, the kept prompt
     * rows' and every decode step's logits within {@link #TOLERANCE}, every rank's tokens the same, at TP 1 and 2.
     */
    @ParameterizedTest(name = "long in chunks of 256 at TP {0}")
    @ValueSource(ints = {1, 2})
    void longPromptInChunks(int tp) throws IOException {
        if (!ReferenceModel.names(root()).contains("long")) {
            fail("no 'long' model under " + root() + ": remake the reference with make_reference.py");
        }
        ReferenceModel ref = ReferenceModel.read(root(), "long");
        LlamaConfig c = ConfigReader.read(ref.modelDir());
        assertTrue(ref.prompt().length > 2 * SMALL_CHUNK, "the long prompt has " + ref.prompt().length + " tokens");
        List<RankRun> ranks = run(ref, c, tp, Algorithm.AUTO, true, SMALL_CHUNK);
        RankRun r0 = ranks.get(0);
        String label = "long tp " + tp + " in chunks of " + SMALL_CHUNK;
        for (int r = 1; r < ranks.size(); r++) {
            assertArrayEquals(r0.tokens(), ranks.get(r).tokens(), label + ": rank " + r + " tokens");
        }
        double worst = compareWithReference(label, ref, r0);
        System.out.printf(Locale.ROOT, "%s: worst relative logit error %.5f (tolerance %.3f)%n", label, worst, TOLERANCE);
        assertArrayEquals(ref.tokens(), r0.tokens(), label + ": greedy tokens (prefill + 32 decode steps)");
    }

    /**
     * The rotary frequencies. Format 3 records transformers' unscaled frequencies as the script computed them on
     * the CPU (where transformers computes the buffer when it builds the model). When they are the buffer's inputs
     * (they equal it wherever the buffer is unscaled: every element without rope scaling, the high-frequency band
     * with it), the engine's llama3 scaling of them must give the buffer bit for bit (the medium band in
     * transformers' order of operations, issue 29), and the engine's own frequencies must equal the buffer bit for
     * bit wherever its unscaled ones equal transformers' (the power is another pow: torch's CPU pow is Sleef's
     * 1-ulp powf, the engine's correctly rounded; where they differ by an ulp the final value may differ by 2,
     * counted). Otherwise (the buffer computed elsewhere, or a format before 3): within 2 ulps, and the reason
     * printed.
     */
    static void checkFrequencies(ReferenceModel ref, LlamaConfig c) {
        String name = ref.name();
        float[] inv = RotaryFrequencies.of(c);
        float[] buffer = ref.invFreq();
        assertEquals(buffer.length, inv.length, "inv_freq length");
        float[] theirs = ref.defaultInvFreq();
        boolean inputs = theirs != null && theirs.length == inv.length;
        if (inputs) {
            RopeScaling s = c.ropeScaling();
            float high = s == null ? Float.POSITIVE_INFINITY
                    : (float) (s.originalMaxPositionEmbeddings() / s.highFreqFactor());
            for (int i = 0; i < theirs.length; i++) {
                float wavelen = (1.0f / theirs[i]) * (float) (2 * Math.PI);
                if (wavelen < high && Float.floatToIntBits(theirs[i]) != Float.floatToIntBits(buffer[i])) {
                    inputs = false;
                }
            }
        }
        if (!inputs) {
            System.out.println(name + ": " + (theirs == null ? "no default_inv_freq (format < 3)"
                    : "the recorded default_inv_freq is not the buffer's input (computed on another device?)")
                    + ": inv_freq checked within 2 ulps");
            for (int i = 0; i < inv.length; i++) {
                assertEquals(buffer[i], inv[i], 2 * Math.ulp(buffer[i]), name + " inv_freq[" + i + "]");
            }
            return;
        }
        if (c.ropeScaling() != null) {
            float[] scaled = RotaryFrequencies.llama3(theirs, c.ropeScaling());
            for (int i = 0; i < scaled.length; i++) {
                assertEquals(Float.floatToIntBits(buffer[i]), Float.floatToIntBits(scaled[i]), name
                        + " llama3 scaling of transformers' default inv_freq[" + i + "]: " + scaled[i] + " vs "
                        + buffer[i]);
            }
        }
        float[] ours = RotaryFrequencies.defaults(c.headDim(), c.ropeTheta());
        int powDiffers = 0;
        for (int i = 0; i < inv.length; i++) {
            assertEquals(theirs[i], ours[i], Math.ulp(theirs[i]), name + " default inv_freq[" + i + "]");
            if (Float.floatToIntBits(theirs[i]) != Float.floatToIntBits(ours[i])) {
                powDiffers++;
                assertEquals(buffer[i], inv[i], 2 * Math.ulp(buffer[i]), name + " inv_freq[" + i + "]");
            } else {
                assertEquals(Float.floatToIntBits(buffer[i]), Float.floatToIntBits(inv[i]), name + " inv_freq[" + i
                        + "]: " + inv[i] + " vs " + buffer[i]);
            }
        }
        System.out.printf(Locale.ROOT, "%s: inv_freq bit-exact where the unscaled powers agree (%d of %d differ by an "
                + "ulp)%n", name, powDiffers, inv.length);
    }

    /**
     * The recorded prompt rows' and every decode step's logits of rank 0 against the reference's, each within
     * {@link #TOLERANCE}.
     *
     * @return the worst relative error
     */
    static double compareWithReference(String label, ReferenceModel ref, RankRun r0) {
        double worst = 0;
        for (int s = 0; s < ref.prefillLogits().length; s++) {
            int position = ref.prefillFirst() + s;
            if (r0.prefill()[position] == null) {
                fail(label + ": the reference records prompt position " + position + " but the engine keeps the logits "
                        + "of the last " + EngineSettings.KEPT_PROMPT_LOGIT_ROWS + " prompt positions only: remake the "
                        + "reference with make_reference.py (format 2)");
            }
            worst = Math.max(worst, compare(label + " prefill position " + position, ref.prefillLogits()[s],
                    r0.prefill()[position]));
        }
        for (int s = 0; s < ref.decodeLogits().length; s++) {
            worst = Math.max(worst, compare(label + " decode step " + s, ref.decodeLogits()[s], r0.decode()[s]));
        }
        return worst;
    }

    /** Prints and checks one row; returns its relative error. */
    static double compare(String what, float[] expected, float[] actual) {
        assertEquals(expected.length, actual.length, what + ": vocabulary");
        double maxRef = 0;
        double maxAbs = 0;
        for (int i = 0; i < expected.length; i++) {
            maxRef = Math.max(maxRef, Math.abs(expected[i]));
            maxAbs = Math.max(maxAbs, Math.abs((double) expected[i] - actual[i]));
        }
        double rel = maxRef == 0 ? maxAbs : maxAbs / maxRef;
        System.out.printf(Locale.ROOT, "%s: max abs error %.6f, max |logit| %.4f, relative %.5f%n", what, maxAbs, maxRef,
                rel);
        assertTrue(rel <= TOLERANCE, what + ": max abs error " + maxAbs + " is more than " + TOLERANCE
                + " of the largest |logit| " + maxRef);
        return rel;
    }

    /**
     * The KV-cache positions for a prompt and its decode steps: {@link #CONTEXT}, or the prompt and
     * the decode steps where they need more (the last decode and verify steps write position
     * {@code prompt + steps - 1}).
     */
    static int contextFor(LlamaConfig c, int prompt, int steps) {
        int need = prompt + steps;
        assertTrue(need <= c.maxPositionEmbeddings(), "a prompt of " + prompt + " and " + steps
                + " decode steps need " + need + " positions; max_position_embeddings is " + c.maxPositionEmbeddings());
        return Math.max(CONTEXT, need);
    }

    static List<RankRun> run(ReferenceModel ref, LlamaConfig c, int tp, Algorithm policy) {
        return run(ref, c, tp, policy, true);
    }

    /** Every rank's run; with {@code keepLogits} false only the tokens (the logits are not copied out). */
    static List<RankRun> run(ReferenceModel ref, LlamaConfig c, int tp, Algorithm policy, boolean keepLogits) {
        return run(ref, c, tp, policy, keepLogits, EngineSettings.DEFAULT_PREFILL_CHUNK);
    }

    /** Every rank's run, the prompt in chunks of at most {@code chunk} tokens. */
    static List<RankRun> run(ReferenceModel ref, LlamaConfig c, int tp, Algorithm policy, boolean keepLogits,
                             int chunk) {
        TensorParallelLayout layout = new TensorParallelLayout(c, tp);
        int p = ref.prompt().length;
        int steps = ref.decodeLogits().length;
        EngineSettings settings = new EngineSettings(layout, contextFor(c, p, steps), p, DRAFT, keepLogits, true, 1,
                false, chunk);
        try (ModelFolder folder = ModelFolder.open(ref.modelDir());
             RankGroup group = RankGroup.threads(new int[tp], b -> b.nccl(tp == 1).algorithmPolicy(policy)
                     .stagingBytes(settings.stagingBytes()))) {
            LlamaTensors.check(folder, c);
            List<RankEngine> engines = group.onEveryRank("open", STEP, (i, comm) -> RankEngine.open(comm, settings,
                    folder, null));
            try {
                return group.onEveryRank("reference run", STEP, (i, comm) -> keepLogits
                        ? runRank(engines.get(i), ref, p, steps) : runRankTokens(engines.get(i), ref, p, steps));
            } finally {
                group.onEveryRank("close", STEP, (i, comm) -> {
                    engines.get(i).close();
                    return null;
                });
            }
        }
    }

    /** The steps of {@link #runRank} (teacher-forced decode, verify) for their tokens only. */
    static RankRun runRankTokens(RankEngine e, ReferenceModel ref, int p, int steps) {
        int[] tokens = new int[steps + 1];
        tokens[0] = e.prefill(ref.prompt());
        e.captureGraphs();
        for (int s = 0; s < steps; s++) {
            tokens[s + 1] = e.decode(ref.tokens()[s], p + s);
        }
        int rows = steps / DRAFT * DRAFT;
        int[] verifyTokens = new int[rows];
        int[] next = new int[DRAFT];
        for (int j = 0; j + DRAFT <= steps; j += DRAFT) {
            e.verify(Arrays.copyOfRange(ref.tokens(), j, j + DRAFT), p + j, next);
            System.arraycopy(next, 0, verifyTokens, j, DRAFT);
        }
        return new RankRun(tokens, new float[0][], new float[0][], new float[0][], verifyTokens);
    }

    static RankRun runRank(RankEngine e, ReferenceModel ref, int p, int steps) {
        int[] tokens = new int[steps + 1];
        float[][] prefill = new float[p][];
        tokens[0] = e.prefill(ref.prompt());
        // The engine keeps the logits of the prompt's last rows only (EngineSettings.KEPT_PROMPT_LOGIT_ROWS).
        int kept = e.prefillLogitsFirst();
        for (int r = kept; r < p; r++) {
            prefill[r] = e.logits(r - kept);
        }
        e.captureGraphs();
        float[][] decode = new float[steps][];
        for (int s = 0; s < steps; s++) {
            // Teacher forcing: feed the reference's token, so that one flipped token does not derail the rest.
            tokens[s + 1] = e.decode(ref.tokens()[s], p + s);
            decode[s] = e.logits(0);
        }
        int rows = steps / DRAFT * DRAFT;
        float[][] verify = new float[rows][];
        int[] verifyTokens = new int[rows];
        int[] next = new int[DRAFT];
        for (int j = 0; j + DRAFT <= steps; j += DRAFT) {
            e.verify(Arrays.copyOfRange(ref.tokens(), j, j + DRAFT), p + j, next);
            for (int i = 0; i < DRAFT; i++) {
                verify[j + i] = e.logits(i);
                verifyTokens[j + i] = next[i];
            }
        }
        // Issue 29: a token outside the vocabulary fails its step only (refused on the host, named); the engine goes
        // on: the last decode step again gives the reference's logits and token.
        int vocab = e.settings().layout().config().vocabSize();
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class, () -> e.decode(vocab, p + steps - 1));
        assertTrue(bad.getMessage().contains("id " + vocab), bad.getMessage());
        assertThrows(IllegalArgumentException.class, () -> e.verify(new int[] {0, -1, 0}, p, new int[DRAFT]));
        int again = e.decode(ref.tokens()[steps - 1], p + steps - 1);
        assertEquals(ref.tokens()[steps], again, ref.name() + ": the last decode step after a refused token");
        compare(ref.name() + ": the last decode step after a refused token", ref.decodeLogits()[steps - 1], e.logits(0));
        return new RankRun(tokens, prefill, decode, verify, verifyTokens);
    }
}
