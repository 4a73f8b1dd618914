package dev.ar4j.examples.llama.model;


import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

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

    private static final System.Logger LOG = System.getLogger(LlamaTensors.class.getName());

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
     * What {@link #check} found.
     *
     * @param dtypes  the dtypes of the tensors the engine reads (BF16 loads as it is; F16 and F32 are converted)
     * @param ignored the tensors the engine does not read whose dtype is {@link TensorDType#isNewer newer} or
     *                unknown, ignored with a warning
     */
    public record Checked(Set<TensorDType> dtypes, List<String> ignored) {
        /**
         * Copies the collections.
         */
        public Checked {
            dtypes = Collections.unmodifiableSet(dtypes.isEmpty() ? EnumSet.noneOf(TensorDType.class)
                    : EnumSet.copyOf(dtypes));
            ignored = List.copyOf(ignored);
        }

        /**
         * Whether any tensor the engine reads is converted to bfloat16 while loading.
         *
         * @return {@code true} when a read tensor is F16 or F32
         */
        public boolean converts() {
            return dtypes.stream().anyMatch(d -> d != TensorDType.BF16);
        }
    }

    /**
     * Checks that a folder holds every tensor a config needs, of the right shape and in bf16, fp16 or fp32 (the
     * last two converted to bf16 while loading, {@link BFloat16}). Tensors the engine does not read (e.g. a tied
     * {@code lm_head.weight}, old {@code rotary_emb.inv_freq} buffers) are ignored; those among them of a newer or
     * unknown dtype (F8_E8M0 scales, F4 blocks of a quantised copy, a dtype this reader does not know) with one
     * warning naming them.
     *
     * @param folder the opened model folder
     * @param c      its config
     * @return the dtypes read and the tensors ignored with the warning
     * @throws ModelFileException naming the tensor, its file, what was found and what was expected
     */
    public static Checked check(ModelFolder folder, LlamaConfig c) {
        Set<String> needed = new HashSet<>();
        Set<TensorDType> dtypes = EnumSet.noneOf(TensorDType.class);
        for (Expected e : expected(c)) {
            needed.add(e.name());
            ModelFolder.Located at = folder.find(e.name());
            if (at == null) {
                throw new ModelFileException("tensor '" + e.name() + "' is missing from " + folder.folder()
                        + (e.name().equals(LM_HEAD) ? " (config.json says tie_word_embeddings is false)" : ""));
            }
            if (!BFloat16.readable(at.entry().dtype())) {
                throw new ModelFileException(at.where() + " is " + at.entry().dtypeName()
                        + "; this engine reads BF16 weights, and F16 or F32 ones converted to BF16 while loading "
                        + "(config torch_dtype " + c.torchDtype() + ")");
            }
            if (!at.entry().hasShape(e.shape())) {
                throw new ModelFileException(at.where() + " has shape " + at.entry().shapeText() + ", but config.json "
                        + "makes it " + java.util.Arrays.toString(e.shape()));
            }
            dtypes.add(at.entry().dtype());
        }
        List<String> ignored = new ArrayList<>();
        for (ModelFolder.Located at : folder.tensors().values()) {
            if (at.entry().dtype().isNewer() && !needed.contains(at.entry().name())) {
                ignored.add(at.entry().name() + " (" + at.entry().dtypeName() + ")");
            }
        }
        if (!ignored.isEmpty()) {
            LOG.log(System.Logger.Level.WARNING, folder.folder() + ": ignoring " + ignored.size() + " tensor"
                    + (ignored.size() == 1 ? "" : "s") + " this engine does not use, of dtypes it cannot read: "
                    + String.join(", ", ignored.subList(0, Math.min(5, ignored.size())))
                    + (ignored.size() > 5 ? ", ..." : ""));
        }
        return new Checked(dtypes, ignored);
    }
}
