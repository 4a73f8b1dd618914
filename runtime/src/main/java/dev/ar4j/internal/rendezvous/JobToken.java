package dev.ar4j.internal.rendezvous;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Map;
import java.util.Objects;

/**
 * The secret that makes a TCP rendezvous belong to one job. Ranks prove they know it by
 * challenge–response (HMAC-SHA256); it never goes on the wire. Resolved, first match wins:
 * <ol>
 *   <li>{@code AR4J_RDZV_TOKEN}: a secret the user or launcher chose (the only kind that also
 *       keeps out a local user who can read the job's ids; use a long random string);</li>
 *   <li>{@code TORCHELASTIC_RUN_ID} (torchrun);</li>
 *   <li>{@code SLURM_JOB_ID} with {@code SLURM_STEP_ID} (Slurm);</li>
 *   <li>{@code OMPI_MCA_ess_base_jobid} (Open MPI);</li>
 *   <li>none: the rendezvous then serves on loopback only.</li>
 * </ol>
 * A token derived from a launcher's job id fences jobs from each other (a second job on the same
 * port is refused), but anyone who can list the jobs can derive it: set {@code AR4J_RDZV_TOKEN}
 * where other users share the hosts. {@link #toString()} never shows the secret.
 */
public final class JobToken {

    /** The environment variable with the job's secret. */
    public static final String AR4J_RDZV_TOKEN = "AR4J_RDZV_TOKEN";

    private static final JobToken NONE = new JobToken(null, "no token (none of AR4J_RDZV_TOKEN, TORCHELASTIC_RUN_ID,"
            + " SLURM_JOB_ID, OMPI_MCA_ess_base_jobid is set)");

    private final byte[] key;
    private final String source;

    private JobToken(byte[] key, String source) {
        this.key = key;
        this.source = source;
    }

    /**
     * A token from a secret the caller chose.
     *
     * @param secret the job's secret, the same on every rank; not blank
     * @return a token derived from it (SHA-256)
     * @throws NullPointerException if {@code secret} is {@code null}
     * @throws IllegalArgumentException if {@code secret} is blank
     */
    public static JobToken of(String secret) {
        Objects.requireNonNull(secret, "secret");
        if (secret.isBlank()) {
            throw new IllegalArgumentException("a rendezvous token must not be blank; use JobToken.none() for none");
        }
        return new JobToken(digest("ar4j-token:" + secret), "given secret");
    }

    /**
     * No token: loopback only.
     *
     * @return the token of no secret
     */
    public static JobToken none() {
        return NONE;
    }

    /**
     * The token of this process's environment ({@link System#getenv()}).
     *
     * @return the token, {@link #none()} if none of the variables is set
     */
    public static JobToken fromSystem() {
        return fromEnvironment(System.getenv());
    }

    /**
     * The token {@code environment} gives, in the order the class describes.
     *
     * @param environment the variables to read; blank values count as unset
     * @return the token, {@link #none()} if none of the variables is set
     * @throws NullPointerException if {@code environment} is {@code null}
     */
    public static JobToken fromEnvironment(Map<String, String> environment) {
        Objects.requireNonNull(environment, "environment");
        String secret = value(environment, AR4J_RDZV_TOKEN);
        if (secret != null) {
            return new JobToken(digest("ar4j-token:" + secret), AR4J_RDZV_TOKEN);
        }
        String run = value(environment, "TORCHELASTIC_RUN_ID");
        if (run != null) {
            return new JobToken(digest("torchelastic:" + run), "derived from TORCHELASTIC_RUN_ID");
        }
        String slurmJob = value(environment, "SLURM_JOB_ID");
        if (slurmJob != null) {
            String step = Objects.requireNonNullElse(value(environment, "SLURM_STEP_ID"), "-");
            return new JobToken(digest("slurm:" + slurmJob + "." + step), "derived from SLURM_JOB_ID and SLURM_STEP_ID");
        }
        String ompi = value(environment, "OMPI_MCA_ess_base_jobid");
        if (ompi != null) {
            return new JobToken(digest("ompi:" + ompi), "derived from OMPI_MCA_ess_base_jobid");
        }
        return NONE;
    }

    /**
     * Whether there is a secret; without one the rendezvous serves on loopback only.
     *
     * @return {@code true} if a secret was given or derived
     */
    public boolean isPresent() {
        return key != null;
    }

    /**
     * Where the token came from, for logs: never the secret itself.
     *
     * @return a description of the source, such as {@code "derived from SLURM_JOB_ID and SLURM_STEP_ID"}
     */
    public String source() {
        return source;
    }

    /** The HMAC key: the token's SHA-256, or a fixed key when there is none. */
    byte[] key() {
        return key != null ? key : digest("ar4j-token:<none>");
    }

    /** How to set a token, for messages. */
    static String howToSet() {
        return "set " + AR4J_RDZV_TOKEN + " to the same long random secret on every rank (e.g. "
                + AR4J_RDZV_TOKEN + "=$(openssl rand -hex 32), exported before launching), or launch with torchrun,"
                + " Slurm or Open MPI, whose job ids give one";
    }

    @Override
    public String toString() {
        return "JobToken[" + source + "]";
    }

    private static String value(Map<String, String> environment, String name) {
        String raw = environment.get(name);
        return raw == null || raw.isBlank() ? null : raw.trim();
    }

    private static byte[] digest(String text) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("this JDK has no SHA-256, which every Java SE runtime must provide", e);
        }
    }
}
