package dev.ar4j.examples.llama.engine;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ar4j.examples.llama.model.LlamaConfig;
import dev.ar4j.examples.llama.model.SyntheticModels;
import dev.ar4j.examples.llama.model.TensorParallelLayout;
import org.junit.jupiter.api.Test;

/**
 * When a step's greedy choice at TP > 1 exchanges the ranks' (max, index) pairs instead of all-reducing the
 * logits: greedy, logits not kept, ids exact in fp32, a real token in every shard, and not turned off by the
 * property; a bad property value is refused with what is accepted.
 */
class ArgmaxExchangeChoiceTest {

    private static final Sampling SAMPLED = new Sampling(0.8, 40, 0.9, 7);

    private static TensorParallelLayout llama3(int tp) {
        return new TensorParallelLayout(SyntheticModels.byName("llama3-8b"), tp);
    }

    private static LlamaConfig withVocab(int vocab) {
        return new LlamaConfig(64, 16, 2, 4, 4, 8, vocab, 128, 1e-5, 10000, null, false, "bfloat16");
    }

    @Test
    void greedyStepsAtSeveralRanksExchangeUnlessTheLogitsAreWanted() {
        assertTrue(StepChoices.exchangesArgmax(llama3(2), Sampling.GREEDY, false, null));
        assertTrue(StepChoices.exchangesArgmax(llama3(8), Sampling.GREEDY, false, "true"));
        assertFalse(StepChoices.exchangesArgmax(llama3(1), Sampling.GREEDY, false, null), "TP 1: the fused argmax");
        assertFalse(StepChoices.exchangesArgmax(llama3(2), SAMPLED, false, null), "sampling needs every logit");
        assertFalse(StepChoices.exchangesArgmax(llama3(2), Sampling.GREEDY, true, null), "kept logits are whole rows");
        assertFalse(StepChoices.exchangesArgmax(llama3(2), Sampling.GREEDY, false, "false"), "turned off");
    }

    @Test
    void vocabulariesTheExchangeCannotCarryAllReduceTheLogits() {
        // 5 ids at TP 4: shards of 8, the second to fourth only padding.
        assertFalse(StepChoices.exchangesArgmax(new TensorParallelLayout(withVocab(5), 4), Sampling.GREEDY, false,
                null));
        assertTrue(StepChoices.exchangesArgmax(new TensorParallelLayout(withVocab(4001), 4), Sampling.GREEDY, false,
                null));
        int tooMany = StepChoices.MAX_EXCHANGED_VOCAB + 1;  // an id above 2^24 is not exact in fp32
        assertFalse(StepChoices.exchangesArgmax(new TensorParallelLayout(withVocab(tooMany), 2), Sampling.GREEDY,
                false, null));
    }

    @Test
    void aBadPropertyValueIsRefusedWithWhatIsAccepted() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> StepChoices.exchangesArgmax(llama3(2), Sampling.GREEDY, false, "yes"));
        assertTrue(e.getMessage().contains("-D" + StepChoices.ARGMAX_EXCHANGE_PROPERTY + "=yes")
                && e.getMessage().contains("expected true") && e.getMessage().contains("false"), e.getMessage());
    }
}
