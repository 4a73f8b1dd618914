package dev.ar4j.examples.llama.engine;

/** The kinds of work in a step, as a profile ({@code bench --profile}) groups its kernels. */
public enum StepSection {
    /** The vocabulary-parallel embedding gather. */
    EMBEDDING("embedding", false),
    /** The fused QKV projection. */
    QKV("qkv projection", false),
    /** Rotary embedding and the KV-cache append. */
    ROPE_KV("rope + kv append", false),
    /** Attention over the KV cache. */
    ATTENTION("attention", false),
    /** The attention output projection. */
    O_PROJ("o projection", false),
    /** ar4j's all-reduce with the residual add and RMSNorm. */
    ALL_REDUCE_NORM("all-reduce + residual + rmsnorm", true),
    /** The gate/up projection and SwiGLU. */
    GATE_UP("gate/up projection + silu", false),
    /** The down projection. */
    DOWN("down projection", false),
    /** The LM head (with the argmax where it is fused). */
    LM_HEAD("lm head", false),
    /** The logits' all-reduce (TP > 1). */
    LOGITS_ALL_REDUCE("logits all-reduce or argmax exchange", true),
    /** A separate argmax over the logits. */
    ARGMAX("argmax", false);

    private final String label;
    private final boolean communication;

    StepSection(String label, boolean communication) {
        this.label = label;
        this.communication = communication;
    }

    /**
     * What the profile table calls it.
     *
     * @return the label
     */
    public String label() {
        return label;
    }

    /**
     * Whether the section is an all-reduce (counted in the communication share).
     *
     * @return true for the all-reduces
     */
    public boolean communication() {
        return communication;
    }
}
