package dev.ar4j.internal.rendezvous;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The secret that makes a TCP rendezvous belong to one job. Ranks prove they know it by
 * challenge–response (HMAC-SHA256); it never goes on the wire. Resolved, first match wins:
 * <ol>
 *   <li>{@code AR4J_RDZV_TOKEN}: a secret the user or launcher chose (the only kind that also
 *       keeps out a local user who can read the job's ids; use a long random string);</li>
 *   <li>{@code TORCHELASTIC_RUN_ID} (torchrun);</li>
 *   <li>{@code SLURM_JOB_ID} with {@code SLURM_STEP_ID} (Slurm);</li>
 *   <li>{@code OMPI_MCA_ess_base_jobid} (Open MPI);</li>
 *   <li>none: the rendezvous then serves on loopback only, and the job's key is derived from the
 *       rank's launcher, its parent process (process id and start time).</li>
 * </ol>
 * A token derived from a launcher's job id fences jobs from each other (a second job on the same
 * port is refused), but anyone who can list the jobs can derive it: set {@code AR4J_RDZV_TOKEN}
 * where other users share the hosts. {@link #toString()} never shows the secret.
 *
 * <p>A value every job may share is never made a token: a launcher's default or placeholder id
 * (torchrun's default {@code --rdzv-id} is {@code none}; also {@code default}, {@code 0},
 * {@code null}, {@code unset}, ... see {@link #isSharedDefault}) counts as unset, with one warning
 * naming the variable, and the next source is tried; with none left there is no token, so the
 * rendezvous serves loopback only. So are quoted defaults ({@code 'none'}, {@code "none"}),
 * placeholders a launcher left unexpanded ({@code ${RUN_ID}}, {@code $TORCHELASTIC_RUN_ID},
 * {@code %RUN_ID%}, {@code <run-id>}, {@code {{run_id}}}) and other non-values ({@code n/a},
 * {@code NaN}, {@code undefined}, {@code (null)}, ...).
 *
 * <p>Without a token two jobs on one host must still not join each other (torchrun's default run
 * id is {@code none}, and two jobs may use one port: the second one's server cannot bind it, and
 * its other ranks would reach the first one's). There is then no fixed key: each rank proves it
 * knows a key derived from its parent process, the launcher that started it (torchrun's agent, an
 * {@code mpirun}, the shell that started the ranks, the JVM whose threads they are), which every
 * rank of one job has and no other job can: a second job has a launcher of its own, and a process
 * id is told apart from its reuse by the process's start time. The server also accepts a key
 * derived from its own process, for ranks it started itself. Ranks of one job must therefore be
 * children of one launcher process (a wrapper script must {@code exec} the JVM); where they are not,
 * or to fence jobs from other local users, set {@code AR4J_RDZV_TOKEN}.
 */
public final class JobToken {

    /** The environment variable with the job's secret. */
    public static final String AR4J_RDZV_TOKEN = "AR4J_RDZV_TOKEN";

    private static final System.Logger LOG = System.getLogger(JobToken.class.getName());
    private static final JobToken NONE = new JobToken(null, "no token (none of AR4J_RDZV_TOKEN, TORCHELASTIC_RUN_ID,"
            + " SLURM_JOB_ID, OMPI_MCA_ess_base_jobid is set)");
    /** Ids that launchers use as defaults or placeholders, compared ignoring case: shared by every job. */
    private static final Set<String> SHARED_DEFAULTS = Set.of("none", "default", "0", "null", "nil", "undefined",
            "unset", "unknown", "-", "-1", "n/a", "na", "nan", "(null)", "(none)", "changeme", "placeholder");
    /** Something a launcher or template left unexpanded: {@code $VAR}, {@code ${VAR}}, {@code %VAR%}, {@code <id>}, {@code {{id}}}. */
    private static final java.util.regex.Pattern PLACEHOLDER = java.util.regex.Pattern.compile(
            "^\\$\\{?[A-Za-z_][A-Za-z0-9_]*(:?[-=?+][^}]*)?}?$|^%[A-Za-z_][A-Za-z0-9_]*%$|^<[^<>]*>$|^\\{\\{.*}}$|^\\$\\(.*\\)$");
    private static final Set<String> WARNED = ConcurrentHashMap.newKeySet();
    /** Where the warning about a shared default goes: the log (replaced by tests). */
    static volatile java.util.function.Consumer<String> warningSink =
            message -> LOG.log(System.Logger.Level.WARNING, message);

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
        StringBuilder refused = new StringBuilder();
        String secret = id(environment, AR4J_RDZV_TOKEN, refused);
        if (secret != null) {
            return new JobToken(digest("ar4j-token:" + secret), AR4J_RDZV_TOKEN);
        }
        String run = id(environment, "TORCHELASTIC_RUN_ID", refused);
        if (run != null) {
            return new JobToken(digest("torchelastic:" + run), "derived from TORCHELASTIC_RUN_ID");
        }
        String slurmJob = id(environment, "SLURM_JOB_ID", refused);
        if (slurmJob != null) {
            String step = Objects.requireNonNullElse(value(environment, "SLURM_STEP_ID"), "-");
            return new JobToken(digest("slurm:" + slurmJob + "." + step), "derived from SLURM_JOB_ID and SLURM_STEP_ID");
        }
        String ompi = id(environment, "OMPI_MCA_ess_base_jobid", refused);
        if (ompi != null) {
            return new JobToken(digest("ompi:" + ompi), "derived from OMPI_MCA_ess_base_jobid");
        }
        if (!refused.isEmpty()) {
            return new JobToken(null, "no token (" + refused + "; no other source is set)");
        }
        return NONE;
    }

    /**
     * Whether {@code id} is a value launchers use as a default or placeholder ({@code none},
     * {@code default}, {@code 0}, {@code null}, {@code unset}, ...), which every job may share and
     * which therefore never becomes a token.
     *
     * @param id a job id or secret as read from the environment
     * @return {@code true} if it is blank or such a shared default
     * @throws NullPointerException if {@code id} is {@code null}
     */
    public static boolean isSharedDefault(String id) {
        String value = id.trim();
        while (value.length() >= 2 && isQuote(value.charAt(0)) && value.charAt(value.length() - 1) == value.charAt(0)) {
            value = value.substring(1, value.length() - 1).trim();
        }
        return value.isEmpty() || isQuote(value.charAt(0)) && value.length() == 1
                || SHARED_DEFAULTS.contains(value.toLowerCase(Locale.ROOT)) || PLACEHOLDER.matcher(value).matches();
    }

    private static boolean isQuote(char c) {
        return c == '\'' || c == '"' || c == '`';
    }

    /** The variable's value if it is set and not a shared default; notes and warns (once) about one that is. */
    private static String id(Map<String, String> environment, String name, StringBuilder refused) {
        String raw = value(environment, name);
        if (raw == null) {
            return null;
        }
        if (!isSharedDefault(raw)) {
            return raw;
        }
        String what = name + " is '" + raw + "', a default every job shares";
        refused.append(refused.isEmpty() ? "" : "; ").append(what);
        if (WARNED.add(name + "=" + raw)) {
            warningSink.accept("no rendezvous token derived from " + name + ": its value '" + raw
                    + "' is a launcher default that every job shares (torchrun's default --rdzv-id is 'none'), so two"
                    + " jobs would join each other; it counts as unset, and without another source the rendezvous"
                    + " serves loopback only. Give the job a unique id (torchrun --rdzv-id=$(uuidgen)) or "
                    + howToSet());
        }
        return null;
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

    /** The HMAC key a rank proves it knows: the token's SHA-256, or without one its launcher's key. */
    byte[] key() {
        return key != null ? key : LauncherKey.OF_PARENT;
    }

    /**
     * The keys a server accepts: the token's; or without one the key of the server's own launcher
     * (ranks that are its siblings or threads of its JVM) and its own (ranks it started).
     */
    java.util.List<byte[]> acceptedKeys() {
        return key != null ? java.util.List.of(key) : java.util.List.of(LauncherKey.OF_PARENT, LauncherKey.OF_SELF);
    }

    /** Without a token: the keys derived from a process's identity, which two jobs cannot share. */
    static final class LauncherKey {
        static final byte[] OF_PARENT = of(ProcessHandle.current().parent().orElse(null));
        static final byte[] OF_SELF = of(ProcessHandle.current());

        private LauncherKey() {
        }

        /** The key of {@code process}: its id and start time (a reused id has another start time). */
        static byte[] of(ProcessHandle process) {
            if (process == null) {
                return digest("ar4j-launcher:<no parent>:" + ProcessHandle.current().pid());
            }
            String started = process.info().startInstant().map(Object::toString).orElse("?");
            return digest("ar4j-launcher:" + process.pid() + ":" + started);
        }
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

    static byte[] digest(String text) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("this JDK has no SHA-256, which every Java SE runtime must provide", e);
        }
    }
}
