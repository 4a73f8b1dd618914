package dev.ar4j.examples.llama.cli;

/** What {@code ar4j-llama} does ({@code --mode}). */
public enum RunMode {
    /** Prefill the prompt, decode {@code --steps} tokens greedily, print them. */
    GENERATE,
    /** Time prefill, decode and verify steps per {@code --comm} and print a table. */
    BENCH
}
