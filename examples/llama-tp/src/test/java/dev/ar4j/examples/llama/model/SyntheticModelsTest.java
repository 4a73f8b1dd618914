package dev.ar4j.examples.llama.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import org.junit.jupiter.api.Test;

/** The long-context synthetic model is llama3-8b's shapes with Llama 3.1's positions and rope scaling. */
class SyntheticModelsTest {

    @Test
    void llama31HasTheShapesOfLlama3AndItsLongContext() {
        LlamaConfig base = SyntheticModels.byName("llama3-8b");
        LlamaConfig longer = SyntheticModels.byName("llama3.1-8b");
        assertEquals(8192, base.maxPositionEmbeddings());
        assertNull(base.ropeScaling());
        assertEquals(131072, longer.maxPositionEmbeddings());
        assertEquals(new RopeScaling(8.0, 1.0, 4.0, 8192), longer.ropeScaling());
        assertEquals(base.hiddenSize(), longer.hiddenSize());
        assertEquals(base.intermediateSize(), longer.intermediateSize());
        assertEquals(base.numHiddenLayers(), longer.numHiddenLayers());
        assertEquals(base.numKeyValueHeads(), longer.numKeyValueHeads());
        assertEquals(base.vocabSize(), longer.vocabSize());
        assertEquals(base.ropeTheta(), longer.ropeTheta());
    }
}
