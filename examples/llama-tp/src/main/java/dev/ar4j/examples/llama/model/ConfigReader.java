package dev.ar4j.examples.llama.model;

import com.fasterxml.jackson.jr.ob.JSON;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Reads a Hugging Face {@code config.json} of a {@code LlamaForCausalLM} into a {@link LlamaConfig},
 * with the defaults transformers applies ({@code num_key_value_heads} = heads, {@code head_dim} =
 * hidden / heads, {@code rope_theta} 10000, no rope scaling, untied embeddings) and refusing what
 * the engine does not implement (another architecture or activation, attention or MLP biases, a
 * rope scaling other than {@code llama3}, a dtype other than bf16, fp16 or fp32).
 */
public final class ConfigReader {

    /**
     * The {@code torch_dtype} values of checkpoints the engine loads: bfloat16 as it is, float16 and
     * float32 converted to bfloat16 while loading (the tensors' own dtypes decide, {@code LlamaTensors.check}).
     */
    static final List<String> LOADABLE_DTYPES = List.of("bfloat16", "float16", "float32");

    /** Largest config.json read (a real one is a few kB). */
    static final long MAX_CONFIG_BYTES = 1 << 20;

    private ConfigReader() {
    }

    /**
     * Reads {@code config.json} from a model folder.
     *
     * @param folder the model folder
     * @return the config
     * @throws ModelFileException naming the file and the field that is missing or wrong
     */
    public static LlamaConfig read(Path folder) {
        Path file = folder.resolve("config.json");
        if (!Files.isRegularFile(file)) {
            throw new ModelFileException(file + ": no config.json in the model folder " + folder
                    + " (a Hugging Face model folder holds config.json and *.safetensors)");
        }
        String text;
        try {
            if (Files.size(file) > MAX_CONFIG_BYTES) {
                throw new ModelFileException(file + ": " + Files.size(file) + " bytes, more than a config.json holds ("
                        + MAX_CONFIG_BYTES + " at most)");
            }
            text = Files.readString(file);
        } catch (IOException e) {
            throw new ModelFileException(file + ": cannot be read: " + e.getMessage(), e);
        }
        return parse(text, file.toString());
    }

    /**
     * Parses the text of a {@code config.json}.
     *
     * @param json the file's text
     * @param file the file's name, for messages
     * @return the config
     * @throws ModelFileException naming the file and the field that is missing or wrong
     */
    public static LlamaConfig parse(String json, String file) {
        Map<String, Object> root;
        try {
            Object any = JSON.std.anyFrom(json);
            root = JsonValues.object(any, file);
        } catch (IOException e) {
            throw new ModelFileException(file + ": not valid JSON: " + e.getMessage(), e);
        }
        Fields f = new Fields(root, file);
        checkArchitecture(f, root);
        int hidden = f.requiredInt("hidden_size");
        int heads = f.requiredInt("num_attention_heads");
        int kvHeads = f.optionalInt("num_key_value_heads", heads);
        int headDim;
        if (root.get("head_dim") != null) {
            headDim = f.requiredInt("head_dim");
        } else {
            if (heads <= 0 || hidden % heads != 0) {
                throw new ModelFileException(file + ": no head_dim, and hidden_size " + hidden
                        + " is not a multiple of num_attention_heads " + heads);
            }
            headDim = hidden / heads;
        }
        String dtype = f.optionalString("torch_dtype", f.optionalString("dtype", "bfloat16"));
        if (!LOADABLE_DTYPES.contains(dtype.toLowerCase(Locale.ROOT))) {
            throw new ModelFileException(file + ": torch_dtype is '" + dtype + "'; this engine runs bfloat16 weights, "
                    + "loading float16 and float32 checkpoints converted to bfloat16 (torch_dtype one of "
                    + LOADABLE_DTYPES + ")");
        }
        try {
            return new LlamaConfig(hidden, f.requiredInt("intermediate_size"), f.requiredInt("num_hidden_layers"),
                    heads, kvHeads, headDim, f.requiredInt("vocab_size"), f.optionalInt("max_position_embeddings", 2048),
                    f.optionalReal("rms_norm_eps", 1e-6), ropeTheta(f, root), rope(root, file),
                    f.optionalBool("tie_word_embeddings", false), dtype);
        } catch (IllegalArgumentException e) {
            throw new ModelFileException(file + ": " + e.getMessage(), e);
        }
    }

    private static void checkArchitecture(Fields f, Map<String, Object> root) {
        Object arch = root.get("architectures");
        if (arch != null) {
            List<?> names = JsonValues.array(arch, f.file + ": architectures");
            if (!names.contains("LlamaForCausalLM")) {
                throw new ModelFileException(f.file + ": architectures is " + names
                        + "; this engine implements LlamaForCausalLM only");
            }
        }
        String act = f.optionalString("hidden_act", "silu");
        if (!act.equals("silu")) {
            throw new ModelFileException(f.file + ": hidden_act is '" + act + "'; this engine implements silu only");
        }
        if (f.optionalBool("attention_bias", false) || f.optionalBool("mlp_bias", false)) {
            throw new ModelFileException(f.file + ": attention_bias or mlp_bias is true; this engine has no biases");
        }
    }

    /** {@code rope_parameters.rope_theta} (transformers 5), else the top-level {@code rope_theta}, else 10000. */
    private static double ropeTheta(Fields f, Map<String, Object> root) {
        Object params = root.get("rope_parameters");
        if (params != null) {
            Map<String, Object> p = JsonValues.object(params, f.file + ": rope_parameters");
            if (p.get("rope_theta") != null) {
                return JsonValues.realNumber(p.get("rope_theta"), f.file + ": rope_parameters.rope_theta");
            }
        }
        return f.optionalReal("rope_theta", 10000.0);
    }

    /**
     * The rope scaling: transformers 5 writes {@code rope_parameters} (type, theta and scaling in
     * one object), earlier versions {@code rope_scaling}; {@code rope_parameters} wins when both are there.
     */
    private static RopeScaling rope(Map<String, Object> root, String file) {
        Object params = root.get("rope_parameters");
        if (params != null) {
            return ropeScaling(params, file, "rope_parameters");
        }
        return ropeScaling(root.get("rope_scaling"), file, "rope_scaling");
    }

    static RopeScaling ropeScaling(Object value, String file) {
        return ropeScaling(value, file, "rope_scaling");
    }

    static RopeScaling ropeScaling(Object value, String file, String key) {
        if (value == null) {
            return null;
        }
        Map<String, Object> m = JsonValues.object(value, file + ": " + key);
        Object type = m.get("rope_type") != null ? m.get("rope_type") : m.get("type");
        if (type == null && key.equals("rope_parameters")) {
            return null;
        }
        String t = JsonValues.string(type, file + ": " + key + ".rope_type");
        if (t.equals("default")) {
            return null;
        }
        if (!t.equals("llama3")) {
            throw new ModelFileException(file + ": " + key + ".rope_type is '" + t
                    + "'; this engine implements the llama3 rope scaling (or none) only");
        }
        Fields f = new Fields(m, file + ": " + key);
        try {
            return new RopeScaling(f.requiredReal("factor"), f.requiredReal("low_freq_factor"),
                    f.requiredReal("high_freq_factor"), f.requiredInt("original_max_position_embeddings"));
        } catch (IllegalArgumentException e) {
            throw new ModelFileException(file + ": " + e.getMessage(), e);
        }
    }

    /** Reads typed members of one JSON object, naming the file and the key in every error. */
    private record Fields(Map<String, Object> members, String file) {

        Object required(String key) {
            Object v = members.get(key);
            if (v == null) {
                throw new ModelFileException(file + ": " + key + " is missing");
            }
            return v;
        }

        int requiredInt(String key) {
            return JsonValues.intNumber(required(key), file + ": " + key);
        }

        double requiredReal(String key) {
            return JsonValues.realNumber(required(key), file + ": " + key);
        }

        int optionalInt(String key, int fallback) {
            Object v = members.get(key);
            return v == null ? fallback : JsonValues.intNumber(v, file + ": " + key);
        }

        double optionalReal(String key, double fallback) {
            Object v = members.get(key);
            return v == null ? fallback : JsonValues.realNumber(v, file + ": " + key);
        }

        boolean optionalBool(String key, boolean fallback) {
            Object v = members.get(key);
            return v == null ? fallback : JsonValues.bool(v, file + ": " + key);
        }

        String optionalString(String key, String fallback) {
            Object v = members.get(key);
            return v == null ? fallback : JsonValues.string(v, file + ": " + key);
        }
    }
}
