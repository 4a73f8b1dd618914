package dev.ar4j.examples.llama.cli;

/** How {@code generate} prints the answer ({@code --output}). */
public enum AnswerFormat {
    /** Text streamed as the tokens come (needs the model's tokenizer); the default where there is one. */
    TEXT,
    /** One line {@code tokens: 1,2,3}, the token ids; the default without a tokenizer. */
    IDS
}
