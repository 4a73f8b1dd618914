package dev.ar4j.examples.llama.it;

import com.fasterxml.jackson.jr.ob.JSON;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * One model of the reference that {@code reference/make_reference.py} writes: its Hugging Face
 * folder, the prompt, the 33 greedy tokens, the rotary inverse frequencies, the logits of the
 * recorded prompt positions and of the 32 decode steps (decode step i feeds {@code tokens[i]} at
 * position {@code prompt.length + i}). Reads format versions 1 (the logits of every prompt
 * position), 2 (the logits of the last prompt positions, from
 * {@code prefill_logits.first_position}; the checkpoint may be sharded) and 3 (also
 * {@code rope.default_inv_freq}, transformers' unscaled frequencies; the checkpoint may be fp16 or fp32).
 *
 * @param prefillFirst   the prompt position of {@code prefillLogits[0]} (0 in version 1)
 * @param defaultInvFreq transformers' unscaled rotary frequencies, or {@code null} before version 3
 */
record ReferenceModel(String name, Path modelDir, int[] prompt, int[] tokens, float[] invFreq, float[][] prefillLogits,
                      int prefillFirst, float[][] decodeLogits, boolean marginOk, float[] defaultInvFreq) {

    /** The format versions this reader takes. */
    static final List<Integer> FORMAT_VERSIONS = List.of(1, 2, 3);

    /** The model names of {@code OUT_DIR/index.json}. */
    @SuppressWarnings("unchecked")
    static List<String> names(Path root) throws IOException {
        Map<String, Object> index = JSON.std.mapFrom(Files.readString(root.resolve("index.json")));
        return (List<String>) index.get("models");
    }

    @SuppressWarnings("unchecked")
    static ReferenceModel read(Path root, String name) throws IOException {
        Path dir = root.resolve(name);
        Map<String, Object> ref = JSON.std.mapFrom(Files.readString(dir.resolve("reference.json")));
        Object version = ref.get("format_version");
        if (!(version instanceof Number n) || !FORMAT_VERSIONS.contains(n.intValue())) {
            throw new IOException(dir.resolve("reference.json") + ": format_version " + version + "; this reader takes "
                    + FORMAT_VERSIONS);
        }
        int[] prompt = ints((List<Object>) ref.get("prompt"));
        int[] tokens = ints((List<Object>) ref.get("tokens"));
        Map<String, Object> rope = (Map<String, Object>) ref.get("rope");
        float[] invFreq = floats((List<Object>) rope.get("inv_freq"));
        List<Object> defaults = (List<Object>) rope.get("default_inv_freq");
        float[] defaultInvFreq = defaults == null ? null : floats(defaults);
        Map<String, Object> prefillMeta = (Map<String, Object>) ref.get("prefill_logits");
        float[][] prefill = matrix(dir, prefillMeta);
        int first = ((Number) prefillMeta.getOrDefault("first_position", 0)).intValue();
        if (first < 0 || first + prefill.length != prompt.length) {
            throw new IOException(dir.resolve("reference.json") + ": prefill_logits holds " + prefill.length
                    + " rows from position " + first + ", but the prompt has " + prompt.length
                    + " tokens (the rows must end at the last one)");
        }
        float[][] decode = matrix(dir, (Map<String, Object>) ref.get("decode_logits"));
        Object ok = ref.get("margin_ok");
        return new ReferenceModel(name, dir.resolve((String) ref.getOrDefault("model_dir", "model")), prompt, tokens,
                invFreq, prefill, first, decode, Boolean.TRUE.equals(ok), defaultInvFreq);
    }

    /** JSON numbers as fp32 (the script writes each fp32 value as the double it is, so this is exact). */
    private static float[] floats(List<Object> values) {
        float[] out = new float[values.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = ((Number) values.get(i)).floatValue();
        }
        return out;
    }

    private static int[] ints(List<Object> values) {
        int[] out = new int[values.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = ((Number) values.get(i)).intValue();
        }
        return out;
    }

    @SuppressWarnings("unchecked")
    private static float[][] matrix(Path dir, Map<String, Object> meta) throws IOException {
        List<Object> shape = (List<Object>) meta.get("shape");
        int rows = ((Number) shape.get(0)).intValue();
        int cols = ((Number) shape.get(1)).intValue();
        byte[] bytes = Files.readAllBytes(dir.resolve((String) meta.get("file")));
        if (bytes.length != 4L * rows * cols) {
            throw new IOException(dir.resolve((String) meta.get("file")) + ": " + bytes.length + " bytes, expected "
                    + 4L * rows * cols + " for float32 " + shape);
        }
        FloatBuffer f = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer();
        float[][] out = new float[rows][cols];
        for (int r = 0; r < rows; r++) {
            f.get(out[r]);
        }
        return out;
    }
}
