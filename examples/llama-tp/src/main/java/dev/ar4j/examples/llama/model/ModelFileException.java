package dev.ar4j.examples.llama.model;

import java.io.Serial;

/**
 * A model folder that cannot be used: a missing or malformed {@code config.json}, a safetensors
 * file whose header, offsets, shapes or dtypes are wrong, a tensor that does not fit the config.
 * The message names the file, the tensor or field, what was found and what was expected.
 */
public final class ModelFileException extends RuntimeException {
    @Serial
    private static final long serialVersionUID = 1L;

    /**
     * An error with its message.
     *
     * @param message the file, the tensor or field, what is wrong
     */
    public ModelFileException(String message) {
        super(message);
    }

    /**
     * An error with its message and cause (an I/O or JSON failure).
     *
     * @param message the file, the tensor or field, what is wrong
     * @param cause   the underlying failure
     */
    public ModelFileException(String message, Throwable cause) {
        super(message, cause);
    }
}
