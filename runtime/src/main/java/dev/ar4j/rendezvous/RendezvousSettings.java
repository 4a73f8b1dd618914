package dev.ar4j.rendezvous;

import dev.ar4j.ConfigurationException;
import dev.ar4j.internal.platform.Durations;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;

/**
 * The liveness and resource limits of a TCP rendezvous, immutable. {@link #resolve()} takes each
 * value from a system property, else an environment variable, else the default; the
 * {@code with...} methods override one value (a builder's value wins over both):
 * <table>
 * <caption>settings</caption>
 * <tr><th>value</th><th>property</th><th>environment</th><th>default</th></tr>
 * <tr><td>heartbeat interval</td><td>{@code ar4j.rdzv.heartbeatInterval} (ms)</td><td>{@code AR4J_RDZV_HEARTBEAT_INTERVAL_MS}</td><td>500 ms</td></tr>
 * <tr><td>heartbeat timeout</td><td>{@code ar4j.rdzv.heartbeatTimeout} (ms)</td><td>{@code AR4J_RDZV_HEARTBEAT_TIMEOUT_MS}</td><td>adapted to the group: the largest of 4 s, eight intervals and 15 ms per rank (4 s up to 266 ranks, 15.4 s at 1024)</td></tr>
 * <tr><td>handshake timeout</td><td>{@code ar4j.rdzv.handshakeTimeout} (ms)</td><td>{@code AR4J_RDZV_HANDSHAKE_TIMEOUT_MS}</td><td>10000 ms</td></tr>
 * <tr><td>longest server-side wait of one read</td><td>{@code ar4j.rdzv.maxWait} (ms)</td><td>{@code AR4J_RDZV_MAX_WAIT_MS}</td><td>1 h</td></tr>
 * <tr><td>connections not yet authenticated (the handshake queue)</td><td>{@code ar4j.rdzv.maxPendingConnections}</td><td>{@code AR4J_RDZV_MAX_PENDING_CONNECTIONS}</td><td>256</td></tr>
 * <tr><td>keys one rank may store</td><td>{@code ar4j.rdzv.maxKeysPerRank}</td><td>{@code AR4J_RDZV_MAX_KEYS_PER_RANK}</td><td>65536</td></tr>
 * <tr><td>bytes one rank may store</td><td>{@code ar4j.rdzv.maxBytesPerRank}</td><td>{@code AR4J_RDZV_MAX_BYTES_PER_RANK}</td><td>64 MiB</td></tr>
 * <tr><td>keys in one read</td><td>{@code ar4j.rdzv.maxKeysPerGet}</td><td>{@code AR4J_RDZV_MAX_KEYS_PER_GET}</td><td>4096 (at least the world size)</td></tr>
 * <tr><td>the server's memory budget: all ranks' values and the large requests being read</td><td>{@code ar4j.rdzv.maxServerBytes}</td><td>{@code AR4J_RDZV_MAX_SERVER_BYTES}</td><td>half the serving JVM's heap, at most 1 GiB</td></tr>
 * </table>
 * A rank is declared lost when nothing was heard from it for the heartbeat timeout; every end
 * sends a heartbeat each interval. The timeout must be at least twice the interval. Unless it is
 * given, the timeout is {@linkplain #heartbeatTimeout(int) adapted to the group's size}: a server
 * of many ranks sends as many heartbeats each interval and a loaded host delays some of them, so
 * no single late frame, and no run of seven, declares a healthy rank lost. A rank that dies is seen
 * at once all the same: its connection drops.
 */
public final class RendezvousSettings {

    private final Duration heartbeatInterval;
    private final Duration heartbeatTimeout;
    /** Whether the timeout was given (property, variable or {@link #withHeartbeat}) rather than defaulted. */
    private final boolean heartbeatTimeoutGiven;
    private final Duration handshakeTimeout;
    private final Duration maxWait;
    private final int maxPendingConnections;
    private final int maxKeysPerRank;
    private final long maxBytesPerRank;
    private final int maxKeysPerGet;
    private final long maxServerBytes;

    /** The heartbeat interval unless one is given. */
    public static final Duration DEFAULT_HEARTBEAT_INTERVAL = Duration.ofMillis(500);
    /** The shortest heartbeat timeout unless one is given; larger groups get longer ones ({@link #heartbeatTimeout(int)}). */
    public static final Duration DEFAULT_HEARTBEAT_TIMEOUT = Duration.ofSeconds(4);
    /** Heartbeat intervals in the default timeout at least: seven heartbeats in a row may be late. */
    private static final int DEFAULT_TIMEOUT_INTERVALS = 8;
    /** The default timeout's share per rank of the group: 15.4 s at 1024 ranks. */
    private static final Duration DEFAULT_TIMEOUT_PER_RANK = Duration.ofMillis(15);

    private RendezvousSettings(Duration heartbeatInterval, Duration heartbeatTimeout, boolean heartbeatTimeoutGiven,
                               Duration handshakeTimeout,
                               Duration maxWait, int maxPendingConnections, int maxKeysPerRank, long maxBytesPerRank,
                               int maxKeysPerGet, long maxServerBytes) {
        Durations.requirePositive(heartbeatInterval, "heartbeat interval");
        Durations.requirePositive(heartbeatTimeout, "heartbeat timeout");
        Durations.requirePositive(handshakeTimeout, "handshake timeout");
        Durations.requirePositive(maxWait, "longest wait");
        if (heartbeatTimeout.compareTo(heartbeatInterval.multipliedBy(2)) < 0) {
            throw new IllegalArgumentException("heartbeat timeout " + Durations.format(heartbeatTimeout)
                    + " must be at least twice the heartbeat interval " + Durations.format(heartbeatInterval)
                    + " (ar4j.rdzv.heartbeatTimeout / AR4J_RDZV_HEARTBEAT_TIMEOUT_MS)");
        }
        requirePositive(maxPendingConnections, "max pending connections");
        requirePositive(maxKeysPerRank, "max keys per rank");
        requirePositive(maxBytesPerRank, "max bytes per rank");
        requirePositive(maxKeysPerGet, "max keys per get");
        requirePositive(maxServerBytes, "max server bytes");
        this.heartbeatInterval = heartbeatInterval;
        this.heartbeatTimeout = heartbeatTimeout;
        this.heartbeatTimeoutGiven = heartbeatTimeoutGiven;
        this.handshakeTimeout = handshakeTimeout;
        this.maxWait = maxWait;
        this.maxPendingConnections = maxPendingConnections;
        this.maxKeysPerRank = maxKeysPerRank;
        this.maxBytesPerRank = maxBytesPerRank;
        this.maxKeysPerGet = maxKeysPerGet;
        this.maxServerBytes = maxServerBytes;
    }

    /**
     * The settings of this process: system properties, else environment, else defaults.
     *
     * @return the settings
     * @throws ConfigurationException if a property or variable is not a positive whole number, or the
     *     heartbeat timeout is less than twice the interval
     */
    public static RendezvousSettings resolve() {
        return resolve(System.getProperties(), System.getenv());
    }

    /**
     * The settings {@code properties} and {@code environment} give, property first.
     *
     * @param properties the properties to read first
     * @param environment the variables to read where no property is set
     * @return the settings
     * @throws NullPointerException if an argument is {@code null}
     * @throws ConfigurationException if a value is not a positive whole number, or the heartbeat timeout is
     *     less than twice the interval
     */
    public static RendezvousSettings resolve(Properties properties, Map<String, String> environment) {
        Objects.requireNonNull(properties, "properties");
        Objects.requireNonNull(environment, "environment");
        Source s = new Source(properties, environment);
        try {
            return fromSource(s);
        } catch (IllegalArgumentException e) {
            throw new ConfigurationException(e.getMessage(), e);
        }
    }

    private static RendezvousSettings fromSource(Source s) {
        Duration interval = Duration.ofMillis(s.number("ar4j.rdzv.heartbeatInterval", "AR4J_RDZV_HEARTBEAT_INTERVAL_MS",
                DEFAULT_HEARTBEAT_INTERVAL.toMillis()));
        long timeoutMillis = s.number("ar4j.rdzv.heartbeatTimeout", "AR4J_RDZV_HEARTBEAT_TIMEOUT_MS", -1);
        return new RendezvousSettings(
                interval,
                timeoutMillis > 0 ? Duration.ofMillis(timeoutMillis) : defaultTimeout(interval),
                timeoutMillis > 0,
                Duration.ofMillis(s.number("ar4j.rdzv.handshakeTimeout", "AR4J_RDZV_HANDSHAKE_TIMEOUT_MS", 10_000)),
                Duration.ofMillis(s.number("ar4j.rdzv.maxWait", "AR4J_RDZV_MAX_WAIT_MS", 3_600_000)),
                (int) s.number("ar4j.rdzv.maxPendingConnections", "AR4J_RDZV_MAX_PENDING_CONNECTIONS", 256),
                (int) s.number("ar4j.rdzv.maxKeysPerRank", "AR4J_RDZV_MAX_KEYS_PER_RANK", 65_536),
                s.number("ar4j.rdzv.maxBytesPerRank", "AR4J_RDZV_MAX_BYTES_PER_RANK", 64L << 20),
                (int) s.number("ar4j.rdzv.maxKeysPerGet", "AR4J_RDZV_MAX_KEYS_PER_GET", 4096),
                s.number("ar4j.rdzv.maxServerBytes", "AR4J_RDZV_MAX_SERVER_BYTES", defaultServerBytes()));
    }

    /**
     * How often each end sends a heartbeat when it has nothing else to send.
     *
     * @return the heartbeat interval, positive
     */
    public Duration heartbeatInterval() {
        return heartbeatInterval;
    }

    /**
     * How long an end may be silent before it is declared lost, as given; or, where none was given,
     * the shortest default ({@link #DEFAULT_HEARTBEAT_TIMEOUT}, at least eight intervals). The
     * rendezvous uses {@link #heartbeatTimeout(int)}.
     *
     * @return the heartbeat timeout, at least twice the interval
     */
    public Duration heartbeatTimeout() {
        return heartbeatTimeout;
    }

    /**
     * How long an end of a group of {@code worldSize} ranks may be silent before it is declared
     * lost: the timeout given; or, where none was given, the largest of
     * {@link #DEFAULT_HEARTBEAT_TIMEOUT}, eight heartbeat intervals and 15 ms per rank (4 s up to 266
     * ranks, 15.36 s at 1024). Every rank and the server compute the same value.
     *
     * @param worldSize the group's number of ranks, at least 1
     * @return the heartbeat timeout for that group
     */
    public Duration heartbeatTimeout(int worldSize) {
        if (heartbeatTimeoutGiven) {
            return heartbeatTimeout;
        }
        Duration perRank = DEFAULT_TIMEOUT_PER_RANK.multipliedBy(Math.max(1, worldSize));
        return perRank.compareTo(heartbeatTimeout) > 0 ? perRank : heartbeatTimeout;
    }

    /** The default timeout's floor for {@code interval}. */
    private static Duration defaultTimeout(Duration interval) {
        Duration intervals = interval.multipliedBy(DEFAULT_TIMEOUT_INTERVALS);
        return intervals.compareTo(DEFAULT_HEARTBEAT_TIMEOUT) > 0 ? intervals : DEFAULT_HEARTBEAT_TIMEOUT;
    }

    /**
     * How long a new connection has to complete the authenticated handshake.
     *
     * @return the handshake timeout, positive
     */
    public Duration handshakeTimeout() {
        return handshakeTimeout;
    }

    /**
     * The longest a read waits on the server, whatever the client asked for.
     *
     * @return the longest wait, positive
     */
    public Duration maxWait() {
        return maxWait;
    }

    /**
     * How many connections may be waiting to authenticate at once; more are closed at once.
     *
     * @return the cap on unauthenticated connections, positive
     */
    public int maxPendingConnections() {
        return maxPendingConnections;
    }

    /**
     * How many keys one rank may store.
     *
     * @return the key quota per rank, positive
     */
    public int maxKeysPerRank() {
        return maxKeysPerRank;
    }

    /**
     * How many value bytes one rank may store.
     *
     * @return the byte quota per rank, positive
     */
    public long maxBytesPerRank() {
        return maxBytesPerRank;
    }

    /**
     * The cap on keys in one read for a group of {@code worldSize}: never below the world size.
     *
     * @param worldSize the group's number of ranks
     * @return the larger of the configured cap and {@code worldSize}
     */
    public int maxKeysPerGet(int worldSize) {
        return Math.max(maxKeysPerGet, worldSize);
    }

    /**
     * These settings with both heartbeat values replaced.
     *
     * @param interval the new heartbeat interval, positive
     * @param timeout the new heartbeat timeout, at least twice {@code interval}
     * @return a copy with those values
     * @throws IllegalArgumentException if a value is not positive or the timeout is less than twice the
     *     interval
     */
    public RendezvousSettings withHeartbeat(Duration interval, Duration timeout) {
        return new RendezvousSettings(interval, timeout, true, handshakeTimeout, maxWait, maxPendingConnections,
                maxKeysPerRank, maxBytesPerRank, maxKeysPerGet, maxServerBytes);
    }

    /**
     * These settings with the handshake timeout replaced.
     *
     * @param timeout the new handshake timeout, positive
     * @return a copy with that value
     * @throws IllegalArgumentException if {@code timeout} is not positive
     */
    public RendezvousSettings withHandshakeTimeout(Duration timeout) {
        return new RendezvousSettings(heartbeatInterval, heartbeatTimeout, heartbeatTimeoutGiven,
                timeout, maxWait, maxPendingConnections,
                maxKeysPerRank, maxBytesPerRank, maxKeysPerGet, maxServerBytes);
    }

    /**
     * These settings with the longest server-side wait replaced.
     *
     * @param wait the new longest wait, positive
     * @return a copy with that value
     * @throws IllegalArgumentException if {@code wait} is not positive
     */
    public RendezvousSettings withMaxWait(Duration wait) {
        return new RendezvousSettings(heartbeatInterval, heartbeatTimeout, heartbeatTimeoutGiven,
                handshakeTimeout, wait,
                maxPendingConnections, maxKeysPerRank, maxBytesPerRank, maxKeysPerGet, maxServerBytes);
    }

    /**
     * These settings with the cap on unauthenticated connections replaced.
     *
     * @param count the new cap on unauthenticated connections, positive
     * @return a copy with that value
     * @throws IllegalArgumentException if {@code count} is not positive
     */
    public RendezvousSettings withMaxPendingConnections(int count) {
        return new RendezvousSettings(heartbeatInterval, heartbeatTimeout, heartbeatTimeoutGiven,
                handshakeTimeout, maxWait, count,
                maxKeysPerRank, maxBytesPerRank, maxKeysPerGet, maxServerBytes);
    }

    /**
     * These settings with the per-rank store quota replaced.
     *
     * @param keysPerRank the number of keys one rank may store, positive
     * @param bytesPerRank the number of value bytes one rank may store, positive
     * @return a copy with those values
     * @throws IllegalArgumentException if a value is not positive
     */
    public RendezvousSettings withQuota(int keysPerRank, long bytesPerRank) {
        return new RendezvousSettings(heartbeatInterval, heartbeatTimeout, heartbeatTimeoutGiven,
                handshakeTimeout, maxWait,
                maxPendingConnections, keysPerRank, bytesPerRank, maxKeysPerGet, maxServerBytes);
    }

    /**
     * These settings with the cap on keys per read replaced.
     *
     * @param count the new cap on keys per read, positive (raised to the world size where that is larger)
     * @return a copy with that value
     * @throws IllegalArgumentException if {@code count} is not positive
     */
    public RendezvousSettings withMaxKeysPerGet(int count) {
        return new RendezvousSettings(heartbeatInterval, heartbeatTimeout, heartbeatTimeoutGiven,
                handshakeTimeout, maxWait,
                maxPendingConnections, maxKeysPerRank, maxBytesPerRank, count, maxServerBytes);
    }

    /**
     * The server's memory budget in total: every rank's stored values plus the large requests being
     * read. A SET that does not fit is refused naming the budget; a reply is streamed from the stored
     * values, so it costs nothing beyond them.
     *
     * @return the budget in bytes, positive
     */
    public long maxServerBytes() {
        return maxServerBytes;
    }

    /**
     * These settings with the server's memory budget replaced.
     *
     * @param bytes the new budget in bytes, positive
     * @return a copy with that value
     * @throws IllegalArgumentException if {@code bytes} is not positive
     */
    public RendezvousSettings withMaxServerBytes(long bytes) {
        return new RendezvousSettings(heartbeatInterval, heartbeatTimeout, heartbeatTimeoutGiven,
                handshakeTimeout, maxWait,
                maxPendingConnections, maxKeysPerRank, maxBytesPerRank, maxKeysPerGet, bytes);
    }

    /** Half the heap of this JVM, at least 64 MiB and at most 1 GiB. */
    static long defaultServerBytes() {
        return Math.clamp(Runtime.getRuntime().maxMemory() / 2, 64L << 20, 1L << 30);
    }

    @Override
    public String toString() {
        return "RendezvousSettings[heartbeat every " + Durations.format(heartbeatInterval) + ", timeout "
                + Durations.format(heartbeatTimeout) + (heartbeatTimeoutGiven ? "" : " (default, longer for groups over "
                + (DEFAULT_HEARTBEAT_TIMEOUT.toMillis() / DEFAULT_TIMEOUT_PER_RANK.toMillis()) + " ranks)") + ", handshake " + Durations.format(handshakeTimeout)
                + ", longest wait " + Durations.format(maxWait) + ", " + maxPendingConnections
                + " pending connections, per rank " + maxKeysPerRank + " keys / " + maxBytesPerRank + " bytes, "
                + maxKeysPerGet + " keys per read, server budget " + maxServerBytes + " bytes]";
    }

    private static void requirePositive(long value, String what) {
        if (value <= 0) {
            throw new IllegalArgumentException(what + " must be positive, got " + value);
        }
    }

    private record Source(Properties properties, Map<String, String> environment) {
        long number(String property, String variable, long fallback) {
            String raw = properties.getProperty(property);
            String from = "system property " + property;
            if (raw == null || raw.isBlank()) {
                raw = environment.get(variable);
                from = "environment variable " + variable;
            }
            if (raw == null || raw.isBlank()) {
                return fallback;
            }
            try {
                long value = Long.parseLong(raw.trim());
                if (value <= 0) {
                    throw new NumberFormatException();
                }
                return value;
            } catch (NumberFormatException e) {
                throw new ConfigurationException(from + "='" + raw + "' is not a positive whole number"
                        + " (default " + (fallback > 0 ? fallback : "adapted to the group's size") + ")");
            }
        }
    }
}
