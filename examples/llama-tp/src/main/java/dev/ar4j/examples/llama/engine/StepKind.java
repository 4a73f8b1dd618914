package dev.ar4j.examples.llama.engine;

/** The three steps of the engine. */
public enum StepKind {
    /** The prompt, eager (its length varies). */
    PREFILL,
    /** One token, replayed from a CUDA graph. */
    DECODE,
    /** {@code k} draft tokens checked in one step (speculative decoding), replayed from a CUDA graph. */
    VERIFY
}
