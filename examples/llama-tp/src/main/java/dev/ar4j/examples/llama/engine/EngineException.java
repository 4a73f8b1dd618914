package dev.ar4j.examples.llama.engine;

import java.io.Serial;

/**
 * A failure of the engine's native work: a library that cannot be found or loaded, a cuBLAS or
 * kernel call that returned an error, a device-side error word the kernels set. The message
 * names the call, the code and its name, and what to do.
 */
public final class EngineException extends RuntimeException {
    @Serial
    private static final long serialVersionUID = 1L;

    /**
     * An error with its message.
     *
     * @param message the call, the code and its name, what to do
     */
    public EngineException(String message) {
        super(message);
    }

    /**
     * An error with its message and cause.
     *
     * @param message the call, the code and its name, what to do
     * @param cause   the underlying failure
     */
    public EngineException(String message, Throwable cause) {
        super(message, cause);
    }
}
