package dev.ar4j.examples.llama.engine;

import dev.ar4j.examples.llama.model.SyntheticModels;
import dev.ar4j.examples.llama.model.TensorParallelLayout;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 29 item 3: sampling on the GPU inside the captured step. The synthetic {@code tiny} model at TP 1 and 2
 * (ranks sharing GPU 0) with temperature 0.8, top-k 20, top-p 0.9: every rank draws the same tokens (the logits'
 * all-reduce gives them the same bits, and they share the seed and the step counter), every token is in the
 * vocabulary, and a second engine with the same settings draws the same tokens again (the counter starts at 0).
 */
@Tag("gpu")
class SamplingIT {

    private static final int STEPS = 16;

    @ParameterizedTest(name = "TP {0}")
    @ValueSource(ints = {1, 2})
    void everyRankDrawsTheSameTokensAndARunRepeats(int tp) {
        TensorParallelLayout layout = new TensorParallelLayout(SyntheticModels.byName("tiny"), tp);
        EngineSettings settings = new EngineSettings(layout, 64, 8, 0, false, true, 29, false,
                EngineSettings.DEFAULT_PREFILL_CHUNK, new Sampling(0.8, 20, 0.9, 5));
        List<int[]> first = run(settings, tp);
        List<int[]> second = run(settings, tp);
        int vocab = layout.config().vocabSize();
        for (int r = 0; r < tp; r++) {
            assertArrayEquals(first.get(0), first.get(r), "rank " + r + "'s tokens against rank 0's");
            assertArrayEquals(first.get(r), second.get(r), "rank " + r + ": a second engine, same seed");
            for (int t : first.get(r)) {
                assertTrue(t >= 0 && t < vocab, "token " + t + " outside the vocabulary of " + vocab);
            }
        }
    }

    /** Opens an engine per rank, prefills a prompt and decodes STEPS tokens through the captured graph. */
    private static List<int[]> run(EngineSettings settings, int tp) {
        try (RankGroup group = RankGroup.threads(new int[tp],
                b -> b.nccl(tp == 1).stagingBytes(settings.stagingBytes()))) {
            List<RankEngine> engines = group.onEveryRank("open", StatusWordIT.STEP,
                    (i, comm) -> RankEngine.open(comm, settings, null, null));
            try {
                return new ArrayList<>(group.onEveryRank("sample", StatusWordIT.STEP, (i, comm) -> {
                    RankEngine e = engines.get(i);
                    e.captureGraphs();
                    int[] tokens = new int[STEPS + 1];
                    tokens[0] = e.prefill(new int[] {1, 2, 3, 4, 5});
                    for (int s = 1; s <= STEPS; s++) {
                        tokens[s] = e.decode(tokens[s - 1], 4 + s);
                    }
                    return tokens;
                }));
            } finally {
                group.onEveryRank("close", StatusWordIT.STEP, (i, comm) -> {
                    engines.get(i).close();
                    return null;
                });
            }
        }
    }
}
