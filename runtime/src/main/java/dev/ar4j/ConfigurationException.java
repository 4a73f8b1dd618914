package dev.ar4j;

/**
 * A setting ar4j reads from its environment is missing, malformed or contradicts another: a
 * launcher variable ({@code RANK}, {@code WORLD_SIZE}, {@code LOCAL_WORLD_SIZE},
 * {@code MASTER_ADDR}, Slurm's and Open MPI's), an {@code AR4J_*} variable or an {@code ar4j.*}
 * system property (for example {@code AR4J_ALLREDUCE_ALGO}), or a group whose ranks cannot run
 * the way it was configured. The message names the setting, its value and where it came from,
 * and what is accepted. A wrong value passed to a method (a builder setter, say) is the caller's
 * error instead, reported as {@link IllegalArgumentException}.
 */
public class ConfigurationException extends Ar4jException {
    private static final long serialVersionUID = 1L;

    /**
     * A configuration error.
     *
     * @param message the setting, its value and source, and what is accepted
     */
    public ConfigurationException(String message) {
        super(message);
    }

    /**
     * A configuration error found while parsing or checking a value.
     *
     * @param message the setting, its value and source, and what is accepted
     * @param cause   the check that refused it, or {@code null}
     */
    public ConfigurationException(String message, Throwable cause) {
        super(message, cause);
    }
}
