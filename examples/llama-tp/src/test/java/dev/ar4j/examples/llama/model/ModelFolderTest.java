package dev.ar4j.examples.llama.model;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ModelFolderTest {

    static final LlamaConfig C = new LlamaConfig(8, 16, 1, 2, 1, 4, 10, 32, 1e-5, 10000, null, true, "bfloat16");

    @TempDir
    Path dir;

    private static List<TestFiles.Tensor> tensorsOf(LlamaConfig c) {
        List<TestFiles.Tensor> out = new ArrayList<>();
        for (LlamaTensors.Expected e : LlamaTensors.expected(c)) {
            long n = 1;
            for (long d : e.shape()) {
                n *= d;
            }
            out.add(new TestFiles.Tensor(e.name(), "BF16", e.shape(), TestFiles.counting((int) (2 * n))));
        }
        return out;
    }

    private static void mentions(Exception e, String... parts) {
        for (String p : parts) {
            assertTrue(e.getMessage().contains(p), () -> "'" + e.getMessage() + "' does not mention '" + p + "'");
        }
    }

    @Test
    void oneFileFolderPassesTheCheck() throws IOException {
        TestFiles.write(dir.resolve("model.safetensors"), tensorsOf(C));
        try (ModelFolder f = ModelFolder.open(dir)) {
            LlamaTensors.check(f, C);
            assertNotNull(f.find(LlamaTensors.EMBED));
            assertEquals(LlamaTensors.expected(C).size(), f.tensors().size());
        }
    }

    @Test
    void shardedFolderWithIndex() throws IOException {
        List<TestFiles.Tensor> all = tensorsOf(C);
        TestFiles.write(dir.resolve("model-00001-of-00002.safetensors"), all.subList(0, 3));
        TestFiles.write(dir.resolve("model-00002-of-00002.safetensors"), all.subList(3, all.size()));
        StringBuilder index = new StringBuilder("{\"metadata\": {}, \"weight_map\": {");
        for (int i = 0; i < all.size(); i++) {
            index.append(i == 0 ? "" : ",").append('"').append(all.get(i).name()).append("\": \"model-0000")
                    .append(i < 3 ? 1 : 2).append("-of-00002.safetensors\"");
        }
        Files.writeString(dir.resolve(ModelFolder.INDEX_FILE), index.append("}}"));
        try (ModelFolder f = ModelFolder.open(dir)) {
            LlamaTensors.check(f, C);
            assertTrue(f.find(LlamaTensors.FINAL_NORM).file().path().toString().endsWith("00002.safetensors"));
        }
        String wrong = index.toString().replace("\"model.norm.weight\": \"model-00002", "\"model.norm.weight\": \"model-00001");
        Files.writeString(dir.resolve(ModelFolder.INDEX_FILE), wrong);
        mentions(assertThrows(ModelFileException.class, () -> ModelFolder.open(dir)), "model.norm.weight",
                "to model-00001-of-00002.safetensors", "it is in", "model-00002-of-00002.safetensors");
        Files.writeString(dir.resolve(ModelFolder.INDEX_FILE),
                "{\"weight_map\": {\"model.norm.weight\": \"model-00001-of-00002.safetensors\"}}");
        mentions(assertThrows(ModelFileException.class, () -> ModelFolder.open(dir)), "model.norm.weight",
                "no file holds it");
        Files.writeString(dir.resolve(ModelFolder.INDEX_FILE), "{\"weight_map\": {\"x\": \"../escape.safetensors\"}}");
        mentions(assertThrows(ModelFileException.class, () -> ModelFolder.open(dir)), "../escape.safetensors",
                "not a file of");
    }

    @Test
    void tensorInTwoFiles() throws IOException {
        List<TestFiles.Tensor> all = tensorsOf(C);
        TestFiles.write(dir.resolve("a.safetensors"), all);
        TestFiles.write(dir.resolve("b.safetensors"), all.subList(0, 1));
        mentions(assertThrows(ModelFileException.class, () -> ModelFolder.open(dir)), LlamaTensors.EMBED,
                "a.safetensors", "b.safetensors");
    }

    @Test
    void missingMisshapenAndMisTypedTensors() throws IOException {
        List<TestFiles.Tensor> all = new ArrayList<>(tensorsOf(C));
        all.remove(2);
        TestFiles.write(dir.resolve("model.safetensors"), all);
        try (ModelFolder f = ModelFolder.open(dir)) {
            mentions(assertThrows(ModelFileException.class, () -> LlamaTensors.check(f, C)),
                    "model.layers.0.self_attn.q_proj.weight", "missing", dir.toString());
        }
        List<TestFiles.Tensor> shaped = new ArrayList<>(tensorsOf(C));
        TestFiles.Tensor q = shaped.get(2);
        shaped.set(2, new TestFiles.Tensor(q.name(), "BF16", new long[] {4, 8 * 2}, q.data()));
        TestFiles.write(dir.resolve("model.safetensors"), shaped);
        try (ModelFolder f = ModelFolder.open(dir)) {
            mentions(assertThrows(ModelFileException.class, () -> LlamaTensors.check(f, C)),
                    "model.layers.0.self_attn.q_proj.weight", "model.safetensors", "[4, 16]", "[8, 8]");
        }
        List<TestFiles.Tensor> typed = new ArrayList<>(tensorsOf(C));
        TestFiles.Tensor n = typed.get(1);
        // Right shape, a dtype the engine cannot read (an int16 tensor of the same bytes).
        typed.set(1, new TestFiles.Tensor(n.name(), "I16", n.shape(), n.data()));
        TestFiles.write(dir.resolve("model.safetensors"), typed);
        try (ModelFolder f = ModelFolder.open(dir)) {
            mentions(assertThrows(ModelFileException.class, () -> LlamaTensors.check(f, C)),
                    "model.layers.0.input_layernorm.weight", "is I16", "BF16", "F16 or F32");
        }
    }

    /** Issue 29: unused tensors of newer or unknown dtypes are ignored with a warning, needed ones refused by name. */
    @Test
    void unusedTensorsOfNewerDtypesAreIgnoredNeededOnesRefused() throws IOException {
        List<TestFiles.Tensor> all = new ArrayList<>(tensorsOf(C));
        all.add(new TestFiles.Tensor("model.layers.0.mlp.down_proj.weight_scale", "F8_E8M0", new long[] {8, 1},
                new byte[8]));
        all.add(new TestFiles.Tensor("model.layers.0.mlp.down_proj.weight_packed", "F4", new long[] {8, 4},
                new byte[16]));
        all.add(new TestFiles.Tensor("model.future", "F3_E1M1", new long[] {5}, new byte[7]));
        all.add(new TestFiles.Tensor("model.layers.0.self_attn.rotary_emb.inv_freq", "F32", new long[] {2},
                new byte[8]));
        TestFiles.write(dir.resolve("model.safetensors"), all);
        try (ModelFolder f = ModelFolder.open(dir)) {
            LlamaTensors.Checked checked = LlamaTensors.check(f, C);
            assertEquals(List.of("model.layers.0.mlp.down_proj.weight_scale (F8_E8M0)",
                    "model.layers.0.mlp.down_proj.weight_packed (F4)", "model.future (F3_E1M1)"), checked.ignored());
            assertEquals(java.util.Set.of(TensorDType.BF16), checked.dtypes());
            assertTrue(!checked.converts());
        }
        // A needed tensor of such a dtype is refused, named, with its dtype.
        List<TestFiles.Tensor> needed = new ArrayList<>(tensorsOf(C));
        TestFiles.Tensor down = needed.get(9);
        assertEquals("model.layers.0.mlp.down_proj.weight", down.name());
        needed.set(9, new TestFiles.Tensor(down.name(), "F8_E8M0", down.shape(), new byte[down.data().length / 2]));
        TestFiles.write(dir.resolve("model.safetensors"), needed);
        try (ModelFolder f = ModelFolder.open(dir)) {
            mentions(assertThrows(ModelFileException.class, () -> LlamaTensors.check(f, C)),
                    "model.layers.0.mlp.down_proj.weight", "is F8_E8M0", "BF16");
        }
        needed.set(9, new TestFiles.Tensor(down.name(), "F3_E1M1", down.shape(), down.data()));
        TestFiles.write(dir.resolve("model.safetensors"), needed);
        try (ModelFolder f = ModelFolder.open(dir)) {
            mentions(assertThrows(ModelFileException.class, () -> LlamaTensors.check(f, C)),
                    "model.layers.0.mlp.down_proj.weight", "is F3_E1M1");
        }
    }

    /** float16 and float32 tensors pass the check (converted while loading); the check says which dtypes it read. */
    @Test
    void halfAndSingleTensorsPassAndAreReported() throws IOException {
        List<TestFiles.Tensor> all = new ArrayList<>(tensorsOf(C));
        TestFiles.Tensor q = all.get(2);
        all.set(2, new TestFiles.Tensor(q.name(), "F32", q.shape(), new byte[q.data().length * 2]));
        TestFiles.Tensor n = all.get(1);
        all.set(1, new TestFiles.Tensor(n.name(), "F16", n.shape(), n.data()));
        TestFiles.write(dir.resolve("model.safetensors"), all);
        try (ModelFolder f = ModelFolder.open(dir)) {
            LlamaTensors.Checked checked = LlamaTensors.check(f, C);
            assertEquals(java.util.Set.of(TensorDType.BF16, TensorDType.F16, TensorDType.F32), checked.dtypes());
            assertTrue(checked.converts());
            assertEquals(List.of(), checked.ignored());
        }
    }

    @Test
    void untiedNeedsTheLmHead() throws IOException {
        LlamaConfig untied = new LlamaConfig(8, 16, 1, 2, 1, 4, 10, 32, 1e-5, 10000, null, false, "bfloat16");
        TestFiles.write(dir.resolve("model.safetensors"), tensorsOf(C));
        try (ModelFolder f = ModelFolder.open(dir)) {
            mentions(assertThrows(ModelFileException.class, () -> LlamaTensors.check(f, untied)),
                    "lm_head.weight", "tie_word_embeddings is false");
        }
    }

    @Test
    void emptyOrMissingFolder() {
        mentions(assertThrows(ModelFileException.class, () -> ModelFolder.open(dir)), "no *.safetensors");
        mentions(assertThrows(ModelFileException.class, () -> ModelFolder.open(dir.resolve("nope"))), "not a directory");
    }
}
