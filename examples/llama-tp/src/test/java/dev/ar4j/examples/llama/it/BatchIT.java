package dev.ar4j.examples.llama.it;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ar4j.examples.llama.engine.EngineSettings;
import dev.ar4j.examples.llama.engine.RankEngine;
import dev.ar4j.examples.llama.engine.RankGroup;
import dev.ar4j.examples.llama.model.ConfigReader;
import dev.ar4j.examples.llama.model.LlamaConfig;
import dev.ar4j.examples.llama.model.LlamaTensors;
import dev.ar4j.examples.llama.model.ModelFolder;
import dev.ar4j.examples.llama.model.TensorParallelLayout;
import java.io.IOException;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A batch of sequences decoded at once against the transformers reference (issue 29): {@link #SEQUENCES} sequences,
 * the even ones with the reference's prompt, the odd ones with another, shorter prompt (other contents and other
 * positions in their own caches, so that a step that mixed the sequences' caches or positions would show). Every
 * even sequence's prefill token, teacher-forced decode tokens and verify tokens equal the reference's, its logits are
 * within {@link LlamaReferenceIT#TOLERANCE} of the reference's, and the even sequences' logits are bitwise equal (same
 * inputs, independent rows). At TP 1 and 2 (ranks sharing the GPU).
 */
@Tag("gpu")
class BatchIT {

    static final int SEQUENCES = 4;

    @ParameterizedTest(name = "{0} at TP {1}")
    @CsvSource({"llama3, 1", "llama3, 2", "long, 1", "kvrep, 2"})
    void everySequenceOfABatchDecodesAsAlone(String name, int tp) throws IOException {
        ReferenceModel ref = ReferenceModel.read(LlamaReferenceIT.root(), name);
        LlamaConfig c = ConfigReader.read(ref.modelDir());
        int p = ref.prompt().length;
        int steps = ref.decodeLogits().length;
        int[] other = new int[Math.max(1, p - 3)];
        for (int i = 0; i < other.length; i++) {
            other[i] = ref.prompt()[p - 1 - i];  // the prompt reversed and shorter: other keys, other positions
        }
        TensorParallelLayout layout = new TensorParallelLayout(c, tp);
        EngineSettings settings = new EngineSettings(layout, LlamaReferenceIT.contextFor(c, p, steps), p,
                LlamaReferenceIT.DRAFT, true, true, 1).withBatch(SEQUENCES);
        String label = name + " tp " + tp + " batch " + SEQUENCES;
        try (ModelFolder folder = ModelFolder.open(ref.modelDir());
             RankGroup group = RankGroup.threads(new int[tp], b -> b.nccl(tp == 1)
                     .stagingBytes(settings.stagingBytes()))) {
            LlamaTensors.check(folder, c);
            List<RankEngine> engines = group.onEveryRank("open", LlamaReferenceIT.STEP,
                    (i, comm) -> RankEngine.open(comm, settings, folder, null));
            try {
                List<int[]> tokens = group.onEveryRank("batch run", LlamaReferenceIT.STEP,
                        (i, comm) -> run(engines.get(i), ref, other, label));
                for (int r = 1; r < tokens.size(); r++) {
                    assertArrayEquals(tokens.get(0), tokens.get(r), label + ": rank " + r + "'s tokens");
                }
            } finally {
                group.onEveryRank("close", LlamaReferenceIT.STEP, (i, comm) -> {
                    engines.get(i).close();
                    return null;
                });
            }
        }
    }

    /** One rank's run; returns every sequence's tokens, step by step, for the ranks' comparison. */
    private static int[] run(RankEngine e, ReferenceModel ref, int[] other, String label) {
        int p = ref.prompt().length;
        int steps = ref.decodeLogits().length;
        int[] first = new int[SEQUENCES];
        for (int s = 0; s < SEQUENCES; s++) {
            first[s] = e.prefill(s, s % 2 == 0 ? ref.prompt() : other);
        }
        for (int s = 0; s < SEQUENCES; s += 2) {
            assertEquals(ref.tokens()[0], first[s], label + ": sequence " + s + "'s prefill token");
        }
        assertThrows(IllegalStateException.class, () -> e.decode(ref.tokens()[0], p), "one sequence of a batch");
        e.captureGraphs();
        int[] ids = new int[SEQUENCES];
        int[] positions = new int[SEQUENCES];
        int[] next = new int[SEQUENCES];
        int[] seen = new int[(steps + 1) * SEQUENCES];
        System.arraycopy(first, 0, seen, 0, SEQUENCES);
        int[] previous = first.clone();
        for (int step = 0; step < steps; step++) {
            for (int s = 0; s < SEQUENCES; s++) {
                boolean reference = s % 2 == 0;
                // Teacher forcing for the reference's sequences; the others go on from their own tokens.
                ids[s] = reference ? ref.tokens()[step] : previous[s];
                positions[s] = (reference ? p : other.length) + step;
            }
            e.decodeBatch(ids, positions, next);
            for (int s = 0; s < SEQUENCES; s += 2) {
                assertEquals(ref.tokens()[step + 1], next[s], label + ": sequence " + s + " decode step " + step);
                LlamaReferenceIT.compare(label + " sequence " + s + " decode step " + step, ref.decodeLogits()[step],
                        e.logits(s));
            }
            assertArrayEquals(e.logits(0), e.logits(2), label + ": decode step " + step + ": sequences 0 and 2 "
                    + "(same inputs) bitwise");
            previous = next.clone();
            System.arraycopy(next, 0, seen, (step + 1) * SEQUENCES, SEQUENCES);
        }
        int k = LlamaReferenceIT.DRAFT;
        int[] draft = new int[SEQUENCES * k];
        int[] starts = new int[SEQUENCES];
        int[] verified = new int[SEQUENCES * k];
        for (int j = 0; j + k <= steps; j += k) {
            for (int s = 0; s < SEQUENCES; s++) {
                int[] drafted = s % 2 == 0 ? Arrays.copyOfRange(ref.tokens(), j, j + k)
                        : Arrays.copyOfRange(seen, 0, k);
                System.arraycopy(drafted, 0, draft, s * k, k);
                starts[s] = (s % 2 == 0 ? p : other.length) + j;
            }
            e.verifyBatch(draft, starts, verified);
            for (int s = 0; s < SEQUENCES; s += 2) {
                for (int i = 0; i < k; i++) {
                    assertEquals(ref.tokens()[j + i + 1], verified[s * k + i], label + ": sequence " + s
                            + " verify at " + (j + i));
                }
            }
        }
        assertTrue(seen.length == (steps + 1) * SEQUENCES);
        return seen;
    }
}
