package dev.ar4j.examples.llama.weights;

import dev.ar4j.examples.llama.config.LlamaConfig;
import dev.ar4j.examples.llama.config.ModelFileException;
import dev.ar4j.examples.llama.safetensors.ModelFolder;
import dev.ar4j.examples.llama.safetensors.TensorDType;

import java.util.ArrayList;
import java.util.List;

/**
 * The tensors of a {@code LlamaForCausalLM} checkpoint, with the names and shapes transformers
 * gives them ({@code [out_features, in_features]} for a linear layer), and the check of a model
 * folder against a config.
 */
public final class LlamaTensors {

    /** The embedding table, {@code [vocab, hidden]}. */
    public static final String EMBED = "model.embed_tokens.weight";
    /** The final norm's weight, {@code [hidden]}. */
    public static final String FINAL_NORM = "model.norm.weight";
    /** The LM head, {@code [vocab, hidden]}; absent when the embeddings are tied. */
    public static final String LM_HEAD = "lm_head.weight";

    /**
     * A tensor the engine reads, with its expected shape.
     *
     * @param name  the checkpoint name
     * @param shape the shape the config makes it
     */
    public record Expected(String name, long[] shape) {
    }

    private LlamaTensors() {
    }

    /**
     * The name of one layer's tensor.
     *
     * @param layer the layer, from 0
     * @param part  e.g. {@code self_attn.q_proj.weight}
     * @return e.g. {@code model.layers.3.self_attn.q_proj.weight}
     */
    public static String layer(int layer, String part) {
        return "model.layers." + layer + "." + part;
    }

    /**
     * Every tensor the engine reads for a config.
     *
     * @param c the config
     * @return the names and shapes, embedding first
     */
    public static List<Expected> expected(LlamaConfig c) {
        long h = c.hiddenSize();
        List<Expected> out = new ArrayList<>();
        out.add(new Expected(EMBED, new long[] {c.vocabSize(), h}));
        for (int l = 0; l < c.numHiddenLayers(); l++) {
            out.add(new Expected(layer(l, "input_layernorm.weight"), new long[] {h}));
            out.add(new Expected(layer(l, "self_attn.q_proj.weight"), new long[] {c.queryWidth(), h}));
            out.add(new Expected(layer(l, "self_attn.k_proj.weight"), new long[] {c.keyValueWidth(), h}));
            out.add(new Expected(layer(l, "self_attn.v_proj.weight"), new long[] {c.keyValueWidth(), h}));
            out.add(new Expected(layer(l, "self_attn.o_proj.weight"), new long[] {h, c.queryWidth()}));
            out.add(new Expected(layer(l, "post_attention_layernorm.weight"), new long[] {h}));
            out.add(new Expected(layer(l, "mlp.gate_proj.weight"), new long[] {c.intermediateSize(), h}));
            out.add(new Expected(layer(l, "mlp.up_proj.weight"), new long[] {c.intermediateSize(), h}));
            out.add(new Expected(layer(l, "mlp.down_proj.weight"), new long[] {h, c.intermediateSize()}));
        }
        out.add(new Expected(FINAL_NORM, new long[] {h}));
        if (!c.tieWordEmbeddings()) {
            out.add(new Expected(LM_HEAD, new long[] {c.vocabSize(), h}));
        }
        return out;
    }

    /**
     * Checks that a folder holds every tensor a config needs, in bf16 and of the right shape.
     * Tensors the engine does not read (e.g. a tied {@code lm_head.weight}, old
     * {@code rotary_emb.inv_freq} buffers) are ignored.
     *
     * @param folder the opened model folder
     * @param c      its config
     * @throws ModelFileException naming the tensor, its file, what was found and what was expected
     */
    public static void check(ModelFolder folder, LlamaConfig c) {
        for (Expected e : expected(c)) {
            ModelFolder.Located at = folder.find(e.name());
            if (at == null) {
                throw new ModelFileException("tensor '" + e.name() + "' is missing from " + folder.folder()
                        + (e.name().equals(LM_HEAD) ? " (config.json says tie_word_embeddings is false)" : ""));
            }
            if (at.entry().dtype() != TensorDType.BF16) {
                throw new ModelFileException(at.where() + " is " + at.entry().dtype()
                        + "; this engine reads BF16 weights (config torch_dtype " + c.torchDtype() + ")");
            }
            if (!at.entry().hasShape(e.shape())) {
                throw new ModelFileException(at.where() + " has shape " + at.entry().shapeText() + ", but config.json "
                        + "makes it " + java.util.Arrays.toString(e.shape()));
            }
        }
    }
}
