package dev.ar4j.examples.llama.engine;

import dev.ar4j.examples.llama.kernels.bindings.kernels_h;
import dev.ar4j.examples.llama.model.TensorParallelLayout;

/**
 * The system properties that choose how {@link ForwardPass} runs a step where there is more than one way (each way
 * gives the right tokens; the choice is for measuring one against another), and the values they accept. Bad values
 * are refused saying which are accepted.
 */
final class StepChoices {

    private StepChoices() {
    }

    /**
     * The system property that turns the RoPE + KV append inside the decode attention on ({@code true}); by default
     * it runs in its own kernel before the attention, as prefill chunks run it. Both give the same bits; on an H200
     * the separate kernel was the faster (benchmarks/RESULTS.md), the fused form is kept to measure it.
     */
    static final String ROPE_IN_ATTENTION_PROPERTY = "ar4j.llama.attention.rope";

    /**
     * The value of a {@link #ROPE_IN_ATTENTION_PROPERTY} value.
     *
     * @param property the property's value, {@code null} for the default ({@code false})
     * @return whether steps that can take the fused attention do
     * @throws IllegalArgumentException for another value, saying which are accepted
     */
    static boolean ropeInAttention(String property) {
        return switch (property == null ? "false" : property) {
            case "true" -> true;
            case "false" -> false;
            default -> throw new IllegalArgumentException("-D" + ROPE_IN_ATTENTION_PROPERTY + "=" + property
                    + ": expected true (decode and verify steps rotate q and k and append to the KV cache inside the "
                    + "attention's kernels) or false (in a kernel of their own before it; the default)");
        };
    }

    /**
     * The system property that turns the (max, index) exchange of greedy steps at TP > 1 off ({@code false}: the
     * logits are all-reduced and the argmax taken over them, as for sampling), to measure what it buys.
     */
    static final String ARGMAX_EXCHANGE_PROPERTY = "ar4j.llama.argmax-exchange";

    /** The largest vocabulary the exchange carries: token ids exact in fp32 ({@code AR4J_LLAMA_MAX_EXCHANGED_VOCAB}). */
    static final int MAX_EXCHANGED_VOCAB = 1 << 24;

    /**
     * Whether a step's greedy choice at TP > 1 exchanges each rank's (max, index) over its vocabulary shard (an
     * all-reduce of 8 bytes per rank and row) instead of all-reducing the logits (2 bytes per vocabulary entry and
     * row): greedy, the logits not kept (a kept step copies whole rows out), ids exact in fp32, a real token in
     * every rank's shard (the last one's may be all padding with a small vocabulary), and not turned off.
     */
    static boolean exchangesArgmax(TensorParallelLayout layout, Sampling sampling, boolean keepLogits,
                                   String property) {
        boolean enabled = switch (property == null ? "true" : property) {
            case "true" -> true;
            case "false" -> false;
            default -> throw new IllegalArgumentException("-D" + ARGMAX_EXCHANGE_PROPERTY + "=" + property
                    + ": expected true (greedy steps at TP > 1 exchange each rank's (max, index); the default) or "
                    + "false (they all-reduce the logits)");
        };
        int tp = layout.tp();
        return enabled && tp > 1 && sampling.greedy() && !keepLogits && layout.config().vocabSize() <= MAX_EXCHANGED_VOCAB
                && layout.vocabEnd(tp - 1) > layout.vocabStart(tp - 1);
    }

    /**
     * The system property that chooses the products' library: {@code auto} (default: the rows
     * kernel for one token), {@code rows} (up to {@code AR4J_LLAMA_MAX_LINEAR_ROWS} tokens) or
     * {@code cublas}.
     */
    static final String LINEAR_PROPERTY = "ar4j.llama.linear";

    /**
     * The system property that chooses the rows product's kernel: {@code auto} (default: the
     * library's choice, the registers kernel), {@code registers} or {@code ring} (the bulk-copy
     * ring, sm_90 and newer). Both give the same bits; the choice is for measuring one against the
     * other on a given GPU.
     */
    static final String LINEAR_KERNEL_PROPERTY = "ar4j.llama.linear.kernel";

    /**
     * The {@code AR4J_LLAMA_LINEAR_ROWS_*} value a {@link #LINEAR_KERNEL_PROPERTY} value names.
     *
     * @param property the property's value, {@code null} for the default
     * @return the kernel's value
     * @throws IllegalArgumentException for another value, saying which are accepted
     */
    static int linearRowsKernel(String property) {
        return switch (property == null ? "auto" : property) {
            case "auto" -> kernels_h.AR4J_LLAMA_LINEAR_ROWS_AUTO();
            case "registers" -> kernels_h.AR4J_LLAMA_LINEAR_ROWS_REGISTERS();
            case "ring" -> kernels_h.AR4J_LLAMA_LINEAR_ROWS_RING();
            default -> throw new IllegalArgumentException("-D" + LINEAR_KERNEL_PROPERTY + "=" + property
                    + ": expected auto (the library's choice; the default), registers or ring (the bulk-copy ring, "
                    + "sm_90 and newer)");
        };
    }

    /**
     * The most tokens a step may have for its products to go through the rows kernel, for a {@link #LINEAR_PROPERTY}
     * value.
     *
     * @param property the property's value, {@code null} for the default ({@code auto})
     * @param maxRows  {@code AR4J_LLAMA_MAX_LINEAR_ROWS}
     * @return 1 ({@code auto}: one-token steps), {@code maxRows} ({@code rows}) or 0 ({@code cublas})
     * @throws IllegalArgumentException for another value, saying which are accepted
     */
    static int rowsKernelMaxTokens(String property, int maxRows) {
        return switch (property == null ? "auto" : property) {
            case "auto" -> 1;
            case "rows" -> maxRows;
            case "cublas" -> 0;
            default -> throw new IllegalArgumentException("-D" + LINEAR_PROPERTY + "=" + property + ": expected auto "
                    + "(the example's rows kernel for one-token steps, cuBLAS for the others), rows (the rows kernel "
                    + "up to " + maxRows + " tokens) or cublas");
        };
    }
}
