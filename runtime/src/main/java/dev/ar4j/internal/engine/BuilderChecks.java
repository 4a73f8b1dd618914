package dev.ar4j.internal.engine;

import dev.ar4j.ConfigurationException;
import dev.ar4j.internal.kernels.KernelVariants;

import java.time.Duration;
import java.util.Map;
import java.util.Properties;

/**
 * Validation of a communicator builder's values, before any rendezvous or GPU work: a bad
 * value fails in its setter (or at {@code build()} for what comes from properties and the
 * environment) naming what is accepted, not after the whole group is up. Also resolves the
 * settings that have a property and an environment variable (builder > property > environment >
 * default).
 */
public final class BuilderChecks {

    /** System property turning NCCL off ({@code false}) or on. */
    public static final String NCCL_PROPERTY = "ar4j.nccl";
    /** Environment variable turning NCCL off ({@code 0}/{@code false}) or on. */
    public static final String NCCL_ENV = "AR4J_NCCL";
    public static final String PDL_PROPERTY = "ar4j.pdl";
    public static final String PDL_ENV = "AR4J_PDL";
    /**
     * System property: the custom kernels' variants ({@link KernelVariants#ACCEPTED}). Not public
     * API (no builder setter, no environment variable): the hook through which ar4j-perf measures
     * the variants, until a measurement on two GPUs picks the winners.
     */
    public static final String KERNEL_VARIANTS_PROPERTY = "ar4j.kernel.variants";
    /** System property: the watchdog interval in milliseconds (0 = no polling). */
    public static final String WATCHDOG_PROPERTY = "ar4j.watchdog.interval.ms";
    /** Environment variable: the watchdog interval in milliseconds (0 = no polling). */
    public static final String WATCHDOG_ENV = "AR4J_WATCHDOG_INTERVAL_MS";

    public static final long MAX_STAGING_BYTES = 4L << 30;
    public static final Duration MIN_KERNEL_TIMEOUT = Duration.ofMillis(1);
    public static final Duration MAX_KERNEL_TIMEOUT = Duration.ofDays(1);
    public static final Duration MAX_RENDEZVOUS_TIMEOUT = Duration.ofDays(1);
    public static final int MAX_REGISTRATIONS = 1 << 20;
    public static final Duration MAX_WATCHDOG_INTERVAL = Duration.ofSeconds(60);
    /** AR4J_MAX_BLOCKS of the C header, as a literal: checking a builder value must not load native code. */
    public static final int MAX_LAUNCH_BLOCKS = 128;
    /** AR4J_MAX_THREADS of the C header, as a literal (a test compares both with the header's). */
    public static final int MAX_LAUNCH_THREADS = 1024;

    private BuilderChecks() {
    }

    /** Everything that can be checked only as a whole, or comes from properties and the environment. */
    public static void validate(Settings b) {
        b.dispatchConfig();
        ncclEnabled(b);
        pdlEnabled(b);
        kernelVariants(b);
        watchdogInterval(b);
        if (b.rank() >= 0 && b.worldSize() >= 1 && b.rank() >= b.worldSize()) {
            throw new IllegalArgumentException("rank " + b.rank() + " is out of range for world size " + b.worldSize()
                    + "; ranks are 0.." + (b.worldSize() - 1));
        }
        if (b.rendezvous() != null && b.rank() >= 0 && b.rank() != b.rendezvous().rank()) {
            throw new IllegalArgumentException("rank(" + b.rank() + ") disagrees with the rendezvous's rank "
                    + b.rendezvous().rank() + "; set one of them");
        }
    }

    public static void stagingBytes(long bytes) {
        if (bytes < 16 || bytes % 16 != 0 || bytes > MAX_STAGING_BYTES) {
            throw new IllegalArgumentException("staging size must be a multiple of 16 bytes from 16 to "
                    + MAX_STAGING_BYTES + " (4 GiB), got " + bytes);
        }
    }

    public static void kernelTimeout(Duration timeout) {
        if (timeout == null || timeout.compareTo(MIN_KERNEL_TIMEOUT) < 0 || timeout.compareTo(MAX_KERNEL_TIMEOUT) > 0) {
            throw new IllegalArgumentException("kernel timeout must be between 1 ms and 24 h (a kernel spins on the "
                    + "GPU that long before it gives up on a peer), got " + timeout);
        }
    }

    public static void rendezvousTimeout(Duration timeout) {
        if (timeout == null || timeout.isNegative() || timeout.isZero() || timeout.compareTo(MAX_RENDEZVOUS_TIMEOUT) > 0) {
            throw new IllegalArgumentException("rendezvous timeout must be positive and at most 24 h, got " + timeout);
        }
    }

    public static void maxRegistrations(int n) {
        if (n < 1 || n > MAX_REGISTRATIONS) {
            throw new IllegalArgumentException("maxRegistrations must be between 1 and " + MAX_REGISTRATIONS
                    + ", got " + n);
        }
    }

    public static void launchConfig(int maxBlocks, int threads) {
        int maxBlocksAccepted = MAX_LAUNCH_BLOCKS;
        int maxThreads = MAX_LAUNCH_THREADS;
        if (maxBlocks < 1 || maxBlocks > maxBlocksAccepted || threads < 32 || threads > maxThreads
                || threads % 32 != 0) {
            throw new IllegalArgumentException("launchConfig(" + maxBlocks + ", " + threads + ") refused: blocks "
                    + "must be 1 to " + maxBlocksAccepted + " and threads a multiple of 32 from 32 to " + maxThreads);
        }
    }

    public static void watchdogInterval(Duration interval) {
        if (interval == null || interval.isNegative()
                || (!interval.isZero() && interval.compareTo(Duration.ofMillis(1)) < 0)
                || interval.compareTo(MAX_WATCHDOG_INTERVAL) > 0) {
            throw new IllegalArgumentException("watchdog interval must be zero (no polling) or 1 ms to 60 s, got "
                    + interval);
        }
    }

    /** Builder, then {@value #NCCL_PROPERTY}, then {@value #NCCL_ENV}, then true. */
    public static boolean ncclEnabled(Settings b) {
        return b.ncclEnabled() != null ? b.ncclEnabled() : flag(b, NCCL_PROPERTY, NCCL_ENV, true);
    }

    /**
     * Builder, then {@value #PDL_PROPERTY}, then {@value #PDL_ENV}, then true. The kernels use
     * programmatic dependent launch only on compute capability 9.0 and newer; elsewhere the
     * setting changes nothing.
     */
    public static boolean pdlEnabled(Settings b) {
        return b.pdlEnabled() != null ? b.pdlEnabled() : flag(b, PDL_PROPERTY, PDL_ENV, true);
    }

    /**
     * A parent group's resolved variants (a sub-group's settings), else {@value #KERNEL_VARIANTS_PROPERTY},
     * else none: the {@link KernelVariants} flags the custom kernels' context gets. A blank value is none.
     *
     * @throws IllegalArgumentException for an unknown name in the inherited value
     * @throws ConfigurationException   for an unknown name in the property
     */
    public static int kernelVariants(Settings b) {
        if (b.kernelVariants() != null) {
            return KernelVariants.parse(b.kernelVariants(), "inherited kernel variants");
        }
        Properties props = b.systemProperties() != null ? b.systemProperties() : System.getProperties();
        String v = props.getProperty(KERNEL_VARIANTS_PROPERTY);
        if (v == null) {
            return 0;
        }
        try {
            return KernelVariants.parse(v, "system property " + KERNEL_VARIANTS_PROPERTY);
        } catch (IllegalArgumentException e) {
            throw new ConfigurationException(e.getMessage(), e);
        }
    }

    private static boolean flag(Settings b, String property, String env, boolean byDefault) {
        String v = setting(b, property, env);
        if (v == null) {
            return byDefault;
        }
        return switch (v.trim().toLowerCase(java.util.Locale.ROOT)) {
            case "1", "true", "on", "yes" -> true;
            case "0", "false", "off", "no" -> false;
            default -> throw new ConfigurationException(source(b, property, env) + " = '" + v
                    + "' is not accepted; use one of 1, true, on, yes, 0, false, off, no");
        };
    }

    /** Builder, then {@value #WATCHDOG_PROPERTY}, then {@value #WATCHDOG_ENV}, then 100 ms. */
    public static Duration watchdogInterval(Settings b) {
        if (b.watchdogInterval() != null) {
            return b.watchdogInterval();
        }
        String v = setting(b, WATCHDOG_PROPERTY, WATCHDOG_ENV);
        if (v == null) {
            return Settings.DEFAULT_WATCHDOG_INTERVAL;
        }
        Duration d;
        try {
            d = Duration.ofMillis(Long.parseLong(v.trim()));
        } catch (NumberFormatException e) {
            throw new ConfigurationException(source(b, WATCHDOG_PROPERTY, WATCHDOG_ENV) + " = '" + v
                    + "' is not a whole number of milliseconds (0, or 1 to 60000)", e);
        }
        try {
            watchdogInterval(d);
        } catch (IllegalArgumentException e) {
            throw new ConfigurationException(source(b, WATCHDOG_PROPERTY, WATCHDOG_ENV) + ": " + e.getMessage(), e);
        }
        return d;
    }

    private static String setting(Settings b, String property, String env) {
        Properties props = b.systemProperties() != null ? b.systemProperties() : System.getProperties();
        String v = props.getProperty(property);
        if (v != null) {
            return v;
        }
        Map<String, String> environment = b.environment() != null ? b.environment() : System.getenv();
        return environment.get(env);
    }

    private static String source(Settings b, String property, String env) {
        Properties props = b.systemProperties() != null ? b.systemProperties() : System.getProperties();
        return props.getProperty(property) != null ? "system property " + property : "environment variable " + env;
    }
}
