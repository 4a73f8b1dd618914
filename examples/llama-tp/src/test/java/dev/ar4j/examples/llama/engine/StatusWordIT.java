package dev.ar4j.examples.llama.engine;

import dev.ar4j.examples.llama.model.SyntheticModels;
import dev.ar4j.examples.llama.model.TensorParallelLayout;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 29: one bad token id fails its own step only. The host refuses an id outside the vocabulary
 * before launching anything; an id that reaches the device anyway (written into the pinned input
 * behind the check, as a caller's bug would) makes the embedding kernel report through the status
 * word, the step fails with the kernel's error named, the word is reset, and the same decode step
 * run again gives bitwise the logits it gave before. The synthetic {@code tiny} model at TP 1 and 2
 * (ranks sharing GPU 0).
 */
@Tag("gpu")
class StatusWordIT {

    static final Duration STEP = Duration.ofMinutes(5);

    @ParameterizedTest(name = "TP {0}")
    @ValueSource(ints = {1, 2})
    void aBadTokenFailsItsStepOnly(int tp) {
        TensorParallelLayout layout = new TensorParallelLayout(SyntheticModels.byName("tiny"), tp);
        EngineSettings settings = new EngineSettings(layout, 64, 8, 0, true, true, 29);
        int vocab = layout.config().vocabSize();
        try (RankGroup group = RankGroup.threads(new int[tp], b -> b.nccl(tp == 1).stagingBytes(settings.stagingBytes()))) {
            List<RankEngine> engines = group.onEveryRank("open", STEP, (i, comm) -> RankEngine.open(comm, settings, null,
                    null));
            try {
                group.onEveryRank("bad token", STEP, (i, comm) -> {
                    RankEngine e = engines.get(i);
                    e.prefill(new int[] {1, 2, 3, 4, 5});
                    e.captureGraphs();
                    int before = e.decode(7, 5);
                    float[] logits = e.logits(0);

                    // Refused on the host: nothing launched, the engine goes on.
                    IllegalArgumentException host = assertThrows(IllegalArgumentException.class,
                            () -> e.decode(vocab, 6));
                    assertTrue(host.getMessage().contains("id " + vocab), host.getMessage());

                    // Past the host check: the kernel reports it, this step fails, the word is reset.
                    e.timing().io().setInput(0, vocab + 5, 5);
                    e.timing().captured(StepKind.DECODE).replay();
                    EngineException device = assertThrows(EngineException.class, () -> e.timing().finish("decode"));
                    assertTrue(device.getMessage().contains("token id is outside"), device.getMessage());
                    assertEquals(0, e.timing().io().statusWord(), "the host copy of the status word is reset");

                    // The same step again: it runs, and (position 5 rewritten with token 7) gives the same logits.
                    assertEquals(before, e.decode(7, 5), "rank " + i + " token after the error");
                    assertArrayEquals(logits, e.logits(0), "rank " + i + " logits after the error");
                    assertEquals(e.decode(before, 6), e.decode(before, 6), "later steps run");
                    return null;
                });
            } finally {
                group.onEveryRank("close", STEP, (i, comm) -> {
                    engines.get(i).close();
                    return null;
                });
            }
        }
    }
}
