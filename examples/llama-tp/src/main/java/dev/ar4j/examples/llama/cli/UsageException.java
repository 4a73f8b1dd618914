package dev.ar4j.examples.llama.cli;

import java.io.Serial;

/** A command line that cannot be run; the message says which option is wrong and what it takes. */
public final class UsageException extends IllegalArgumentException {
    @Serial
    private static final long serialVersionUID = 1L;

    /**
     * An error with its message.
     *
     * @param message the option, what was given, what is accepted
     */
    public UsageException(String message) {
        super(message);
    }
}
