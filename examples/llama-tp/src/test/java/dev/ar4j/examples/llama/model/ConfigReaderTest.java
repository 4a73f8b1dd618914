package dev.ar4j.examples.llama.model;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ConfigReaderTest {

    static final String SMALL = """
            {"architectures": ["LlamaForCausalLM"], "hidden_size": 512, "intermediate_size": 1408,
             "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 4, "vocab_size": 4096,
             "max_position_embeddings": 2048, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
             "tie_word_embeddings": true, "torch_dtype": "bfloat16", "hidden_act": "silu",
             "attention_bias": false, "mlp_bias": false, "model_type": "llama"}""";

    private static ModelFileException refused(String json) {
        return assertThrows(ModelFileException.class, () -> ConfigReader.parse(json, "cfg.json"));
    }

    private static void mentions(Exception e, String... parts) {
        for (String p : parts) {
            assertTrue(e.getMessage().contains(p), () -> "'" + e.getMessage() + "' does not mention '" + p + "'");
        }
    }

    /** Issue 29: float16 and float32 checkpoints load (converted to bfloat16 by the loader). */
    @Test
    void halfAndSingleCheckpointsAreRead() {
        assertEquals("float16", ConfigReader.parse(SMALL.replace("\"bfloat16\"", "\"float16\""), "cfg.json").torchDtype());
        assertEquals("float32", ConfigReader.parse(SMALL.replace("\"bfloat16\"", "\"float32\""), "cfg.json").torchDtype());
    }

    @Test
    void readsEveryField() {
        LlamaConfig c = ConfigReader.parse(SMALL, "cfg.json");
        assertEquals(512, c.hiddenSize());
        assertEquals(1408, c.intermediateSize());
        assertEquals(4, c.numHiddenLayers());
        assertEquals(8, c.numAttentionHeads());
        assertEquals(4, c.numKeyValueHeads());
        assertEquals(64, c.headDim());
        assertEquals(4096, c.vocabSize());
        assertEquals(2048, c.maxPositionEmbeddings());
        assertEquals(1e-5, c.rmsNormEps());
        assertEquals(500000.0, c.ropeTheta());
        assertTrue(c.tieWordEmbeddings());
        assertNull(c.ropeScaling());
        assertEquals("bfloat16", c.torchDtype());
    }

    @Test
    void appliesTransformersDefaults() {
        LlamaConfig c = ConfigReader.parse("""
                {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 1, "num_attention_heads": 4,
                 "vocab_size": 100}""", "cfg.json");
        assertEquals(4, c.numKeyValueHeads());
        assertEquals(16, c.headDim());
        assertEquals(10000.0, c.ropeTheta());
        assertEquals(1e-6, c.rmsNormEps());
        assertEquals(2048, c.maxPositionEmbeddings());
        assertFalse(c.tieWordEmbeddings());
    }

    @Test
    void explicitHeadDimWins() {
        LlamaConfig c = ConfigReader.parse(SMALL.replace("\"vocab_size\"", "\"head_dim\": 128, \"vocab_size\""), "c");
        assertEquals(128, c.headDim());
        assertEquals(1024, c.queryWidth());
        assertEquals(512, c.keyValueWidth());
    }

    @Test
    void readsLlama3RopeScaling() {
        LlamaConfig c = ConfigReader.parse(SMALL.replace("\"rope_theta\"", """
                "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                 "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}, "rope_theta\""""), "c");
        assertEquals(new RopeScaling(8.0, 1.0, 4.0, 8192), c.ropeScaling());
        LlamaConfig legacyKey = ConfigReader.parse(SMALL.replace("\"rope_theta\"", """
                "rope_scaling": {"type": "llama3", "factor": 2, "low_freq_factor": 1,
                 "high_freq_factor": 2, "original_max_position_embeddings": 64}, "rope_theta\""""), "c");
        assertEquals(new RopeScaling(2, 1, 2, 64), legacyKey.ropeScaling());
    }

    @Test
    void readsTransformers5RopeParameters() {
        LlamaConfig plain = ConfigReader.parse(SMALL.replace("\"rope_theta\": 500000.0",
                "\"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 10000.0}"), "c");
        assertEquals(10000.0, plain.ropeTheta());
        assertNull(plain.ropeScaling());
        LlamaConfig scaled = ConfigReader.parse(SMALL.replace("\"rope_theta\": 500000.0", """
                "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                 "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 64}"""), "c");
        assertEquals(500000.0, scaled.ropeTheta());
        assertEquals(new RopeScaling(8.0, 1.0, 4.0, 64), scaled.ropeScaling());
        mentions(refused(SMALL.replace("\"rope_theta\": 500000.0",
                "\"rope_parameters\": {\"rope_type\": \"dynamic\", \"factor\": 2.0}")),
                "rope_parameters.rope_type is 'dynamic'");
    }

    @Test
    void refusesWhatTheEngineDoesNotImplement() {
        mentions(refused(SMALL.replace("\"bfloat16\"", "\"float64\"")), "cfg.json", "torch_dtype is 'float64'",
                "float16 and float32 checkpoints converted");
        mentions(refused(SMALL.replace("LlamaForCausalLM", "MistralForCausalLM")), "LlamaForCausalLM only");
        mentions(refused(SMALL.replace("\"silu\"", "\"gelu\"")), "hidden_act is 'gelu'");
        mentions(refused(SMALL.replace("\"attention_bias\": false", "\"attention_bias\": true")), "biases");
        mentions(refused(SMALL.replace("\"rope_theta\"", "\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4},"
                + " \"rope_theta\"")), "rope_scaling.rope_type is 'yarn'");
        mentions(refused(SMALL.replace("\"rope_theta\"", "\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8},"
                + " \"rope_theta\"")), "rope_scaling: low_freq_factor is missing");
    }

    @Test
    void namesTheBadField() {
        mentions(refused(SMALL.replace("\"hidden_size\": 512,", "")), "cfg.json", "hidden_size is missing");
        mentions(refused(SMALL.replace("\"hidden_size\": 512", "\"hidden_size\": \"512\"")), "hidden_size",
                "expected a whole number");
        mentions(refused(SMALL.replace("\"hidden_size\": 512", "\"hidden_size\": 5000000000")), "hidden_size",
                "does not fit a 32-bit integer");
        mentions(refused(SMALL.replace("\"num_key_value_heads\": 4", "\"num_key_value_heads\": 3")),
                "not a multiple of num_key_value_heads");
        mentions(refused(SMALL.replace("\"vocab_size\": 4096", "\"vocab_size\": 0")), "vocab_size must be positive");
        mentions(refused(SMALL.replace("\"rms_norm_eps\": 1e-05", "\"rms_norm_eps\": -1")), "rms_norm_eps");
        mentions(refused(SMALL.replace("\"tie_word_embeddings\": true", "\"tie_word_embeddings\": 1")),
                "tie_word_embeddings", "expected true or false");
        mentions(refused("{\"hidden_size\": 64, \"intermediate_size\": 1, \"num_hidden_layers\": 1, "
                + "\"num_attention_heads\": 3, \"vocab_size\": 1}"), "no head_dim", "not a multiple");
        mentions(refused("[1]"), "expected an object");
        mentions(refused("{\"a\": "), "not valid JSON");
    }

    @Test
    void readsFromAFolder(@TempDir Path dir) throws IOException {
        mentions(assertThrows(ModelFileException.class, () -> ConfigReader.read(dir)), "no config.json");
        Files.writeString(dir.resolve("config.json"), SMALL);
        assertEquals(512, ConfigReader.read(dir).hiddenSize());
    }
}
