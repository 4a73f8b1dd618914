package dev.ar4j.examples.llama.model;

import java.util.List;

/**
 * The shapes {@code --synthetic NAME} builds with random weights: {@code tiny} (for a quick
 * check), {@code llama3-8b} (Meta Llama 3 8B, 8192 positions), {@code llama3.1-8b} (the same shapes
 * with Llama 3.1's 131072 positions and its {@code llama3} rope scaling) and {@code verify-7168} (hidden 7168, 61 layers,
 * 56/8 heads, head dim 128, intermediate 18432: a speculative-decoding verify pass of 3 tokens
 * makes 122 all-reduces of 3 x 7168 bf16 = 43008 bytes).
 */
public final class SyntheticModels {

    /** The accepted names, in the order the usage text lists them. */
    public static final List<String> NAMES = List.of("tiny", "llama3-8b", "llama3.1-8b", "verify-7168");

    private SyntheticModels() {
    }

    /**
     * The config of a synthetic model.
     *
     * @param name one of {@link #NAMES}
     * @return its config
     * @throws IllegalArgumentException naming the accepted names
     */
    public static LlamaConfig byName(String name) {
        return switch (name) {
            case "tiny" -> new LlamaConfig(512, 1408, 4, 8, 4, 64, 4096, 2048, 1e-5, 10000.0, null, false,
                    "bfloat16");
            case "llama3-8b" -> new LlamaConfig(4096, 14336, 32, 32, 8, 128, 128256, 8192, 1e-5, 500000.0, null,
                    false, "bfloat16");
            case "llama3.1-8b" -> new LlamaConfig(4096, 14336, 32, 32, 8, 128, 128256, 131072, 1e-5, 500000.0,
                    new RopeScaling(8.0, 1.0, 4.0, 8192), false, "bfloat16");
            case "verify-7168" -> new LlamaConfig(7168, 18432, 61, 56, 8, 128, 129280, 4096, 1e-6, 10000.0, null,
                    false, "bfloat16");
            default -> throw new IllegalArgumentException("unknown synthetic model '" + name + "'; accepted: "
                    + String.join(", ", NAMES));
        };
    }
}
