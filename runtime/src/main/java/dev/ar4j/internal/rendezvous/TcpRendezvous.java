package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.PeerLossListener;
import dev.ar4j.rendezvous.RendezvousException;
import dev.ar4j.rendezvous.RendezvousSettings;
import dev.ar4j.rendezvous.LaunchEnvironment;
import dev.ar4j.internal.platform.Durations;

import dev.ar4j.internal.rendezvous.BlockingKeyValueStore.AwaitResult;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * A {@link Rendezvous} across processes and hosts over a small TCP key-value store.
 *
 * <p>One rank (rank 0 unless told otherwise) starts a {@link TcpRendezvousServer}; every rank,
 * the serving one included, connects to it as a client, announces its rank and world size, and
 * then keeps one connection for all its requests. Clients retry connecting until their connect
 * timeout, so the serving rank may start after the others. Blocking reads wait on the server side
 * and are bounded by the caller's timeout.
 *
 * <pre>{@code
 * try (TcpRendezvous rendezvous = TcpRendezvous.connect(LaunchEnvironment.fromSystem(), Duration.ofMinutes(2))) {
 *     byte[][] ids = rendezvous.allGather("host-ids", HostIdentity.local().toBytes(), Duration.ofSeconds(60));
 * }
 * }</pre>
 *
 * <p>The group belongs to one job: every rank proves it knows the job's {@link JobToken}
 * ({@code AR4J_RDZV_TOKEN}, or one derived from the launcher's job id) by challenge–response, and
 * every frame after that carries a MAC. Without a token the server serves loopback only. Each end
 * sends a heartbeat every {@link RendezvousSettings#heartbeatInterval()}; a rank that disconnects
 * without goodbye, or is silent for the heartbeat timeout, makes every wait that needs it fail at
 * once with a {@link dev.ar4j.PeerLostException}, and {@link #onPeerLost} listeners are told. It is not
 * encryption: keep the rendezvous on a trusted network.
 *
 * <p>Closing the serving rank's rendezvous waits (up to the close linger) until every rank has
 * connected and disconnected, so a value it published last, such as a broadcast, is not lost to a
 * rank that reads it late. After one of its collectives timed out it waits (up to the same
 * linger) only for the ranks still connected, so that they time out on their own and name the
 * missing ranks instead of losing the server under them.
 */
public final class TcpRendezvous extends StoreBackedRendezvous implements ScopedAbort {

    private static final System.Logger LOG = System.getLogger(TcpRendezvous.class.getName());

    /** How long a client keeps trying to reach the server, unless told otherwise. */
    public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofMinutes(2);
    /** How long the serving rank's {@link #close()} waits for the other ranks, unless told otherwise. */
    public static final Duration DEFAULT_CLOSE_LINGER = Duration.ofSeconds(10);

    private final String serverDescription;
    private final TcpRendezvousServer ownedServer;
    private final Duration closeLinger;
    private final TcpStoreClient store;
    private volatile boolean aborted;  // abortRank was called: at close, wait only for the ranks still connected
    private final PeerLossListeners listeners;

    private TcpRendezvous(int rank, int worldSize, String serverDescription, TcpRendezvousServer ownedServer,
                          Duration closeLinger, TcpStoreClient store, PeerLossListeners listeners) {
        super(rank, worldSize);
        this.serverDescription = serverDescription;
        this.ownedServer = ownedServer;
        this.closeLinger = closeLinger;
        this.store = store;
        this.listeners = listeners;
    }

    /**
     * A builder for a rendezvous whose parameters are given one by one.
     *
     * @return a new builder: loopback server on port 29500, served by rank 0, default timeouts
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Joins the group that {@code environment} describes: rank 0 serves at the master port, and
     * every rank connects to the master address.
     *
     * <p>When all ranks run on this host, rank 0 binds the loopback address and every rank connects
     * to it. When the ranks span hosts, rank 0 binds the master address itself when it belongs to
     * this host, and all interfaces otherwise (for example when the name resolves to 127.0.1.1 on rank 0 but the
     * ranks span hosts). A world of one rank serves on an ephemeral loopback port, since nobody
     * else needs to find it.
     *
     * @param environment this process's rank, world size and master address and port
     * @param connectTimeout how long to keep trying to reach the server and complete the handshake; positive
     * @return this rank's rendezvous, serving too on rank 0
     * @throws NullPointerException if an argument is {@code null}
     * @throws IllegalArgumentException if {@code connectTimeout} is not positive
     * @throws RendezvousTimeoutException if the server could not be reached within {@code connectTimeout}
     * @throws RendezvousException if the server could not be started or refused this rank
     */
    public static TcpRendezvous connect(LaunchEnvironment environment, Duration connectTimeout) {
        return connect(environment, connectTimeout, AbortSignal.none());
    }

    /** {@link #connect(LaunchEnvironment, Duration)}, ended early by {@code abort} ({@link Builder#abortSignal}). */
    public static TcpRendezvous connect(LaunchEnvironment environment, Duration connectTimeout, AbortSignal abort) {
        Objects.requireNonNull(environment, "environment");
        Builder builder = builder().abortSignal(abort)
                .rank(environment.rank())
                .worldSize(environment.worldSize())
                .serverHost(environment.masterAddr())
                .serverPort(environment.masterPort())
                .connectTimeout(connectTimeout);
        if (environment.worldSize() == 1) {
            builder.serverHost(InetAddress.getLoopbackAddress().getHostAddress()).serverPort(0);
        } else if (environment.isSingleHost()) {
            // All ranks on this host: loopback for everyone, whatever name the master address has.
            builder.serverHost(InetAddress.getLoopbackAddress().getHostAddress());
        } else if (environment.rank() == 0) {
            builder.bindAddress(ServingBindAddress.choose(environment));
        }
        return builder.connect();
    }

    /**
     * Whether this rank runs the server.
     *
     * @return {@code true} if this rank started the server and closes it
     */
    public boolean isServing() {
        return ownedServer != null;
    }

    /**
     * The port of the server this rank runs, which is the bound port when the builder asked for
     * port 0.
     *
     * @return the server's bound TCP port, 1 to 65535
     * @throws IllegalStateException if this rank does not run the server
     */
    public int servingPort() {
        if (ownedServer == null) {
            throw new IllegalStateException("rank " + rank() + " does not run the rendezvous server");
        }
        return ownedServer.port();
    }

    /**
     * Subscribes to the loss of a rank: the server reports a rank that disconnected without
     * goodbye, whose heartbeat stopped, or that joined again as a new incarnation; this rank
     * reports the server itself gone or silent (rank -1).
     */
    @Override
    public AutoCloseable onPeerLost(PeerLossListener listener) {
        return listeners.add(listener);
    }

    /**
     * Declares this rank aborted to the server (ABORT, on a thread of its own): it counts as lost,
     * every other rank's listeners are told, and every wait that needs one of its missing keys, and
     * every wait of its own, ends at once with a {@link dev.ar4j.PeerLostException}. Never blocks.
     */
    @Override
    public void abortRank(String reason) {
        java.util.Objects.requireNonNull(reason, "reason");
        aborted = true;
        if (!isClosed()) {
            store.abort("", reason);
        }
    }

    @Override
    public void abortScope(String prefix, String reason) {
        java.util.Objects.requireNonNull(reason, "reason");
        if (java.util.Objects.requireNonNull(prefix, "prefix").isEmpty()) {
            throw new IllegalArgumentException("an aborted scope needs a prefix; abortRank aborts the whole rank");
        }
        if (!isClosed()) {
            store.abort(prefix, reason);
        }
    }

    @Override
    void storeSet(String storeKey, byte[] value) {
        store.set(storeKey, value);
    }

    @Override
    AwaitResult storeAwait(List<String> storeKeys, Duration timeout, String operation) {
        return store.await(storeKeys, timeout, operation);
    }

    @Override
    void release() {
        store.close();
        if (ownedServer != null) {
            if (hasTimedOut() || aborted || listeners.firstLoss() != null) {
                // After a timeout or a lost rank the group is out of step. Not for the absent ranks, but for those still waiting: they time out on their own
                // and name the missing ranks, instead of seeing the server vanish under them.
                if (closeLinger.isPositive() && !ownedServer.awaitConnectedRanksGone(closeLinger)) {
                    LOG.log(System.Logger.Level.WARNING, "rank " + rank() + " closes the rendezvous server at "
                            + serverDescription + " after one of its collectives timed out and a wait of "
                            + Durations.format(closeLinger) + ": " + ownedServer.describeUnfinishedRanks());
                }
            } else if (closeLinger.isPositive() && !ownedServer.awaitRanksFinished(closeLinger)) {
                LOG.log(System.Logger.Level.WARNING, "rank " + rank() + " closes the rendezvous server at "
                        + serverDescription + " after waiting " + Durations.format(closeLinger) + ": "
                        + ownedServer.describeUnfinishedRanks());
            }
            ownedServer.close();
        }
    }

    @Override
    public String toString() {
        return "TcpRendezvous[rank " + rank() + " of " + worldSize() + ", server " + serverDescription
                + (ownedServer != null ? " (served here)" : "") + (isClosed() ? ", closed]" : "]");
    }

    /**
     * Parameters of a {@link TcpRendezvous}, checked by {@link #connect()}. Rank and world size are
     * required; the rest has defaults: server {@code 127.0.0.1}, port
     * {@value LaunchEnvironment#DEFAULT_MASTER_PORT}, rank 0 serves, the server binds the loopback
     * address, connect timeout {@link #DEFAULT_CONNECT_TIMEOUT}, close linger
     * {@link #DEFAULT_CLOSE_LINGER}.
     */
    public static final class Builder {
        private Integer rank;
        private Integer worldSize;
        private String serverHost = InetAddress.getLoopbackAddress().getHostAddress();
        private int serverPort = LaunchEnvironment.DEFAULT_MASTER_PORT;
        private Boolean serve;
        private InetAddress bindAddress = InetAddress.getLoopbackAddress();
        private Duration connectTimeout = DEFAULT_CONNECT_TIMEOUT;
        private AbortSignal abort = AbortSignal.none();
        private Duration closeLinger = DEFAULT_CLOSE_LINGER;
        private JobToken token;
        private RendezvousSettings settings;

        private Builder() {
        }

        /**
         * The job's token; by default {@link JobToken#fromSystem()} ({@code AR4J_RDZV_TOKEN} or the launcher's job id).
         *
         * @param token the token every rank of the job uses
         * @return this builder
         * @throws NullPointerException if {@code token} is {@code null}
         */
        public Builder token(JobToken token) {
            this.token = Objects.requireNonNull(token, "token");
            return this;
        }

        /**
         * Heartbeat and limits; by default {@link RendezvousSettings#resolve()} (system properties, environment).
         *
         * @param settings the heartbeat and limits, the same on every rank
         * @return this builder
         * @throws NullPointerException if {@code settings} is {@code null}
         */
        public Builder settings(RendezvousSettings settings) {
            this.settings = Objects.requireNonNull(settings, "settings");
            return this;
        }

        /**
         * This rank, {@code 0 <= rank < worldSize}.
         *
         * @param rank this rank, 0 to world size - 1 (checked by {@link #connect()})
         * @return this builder
         */
        public Builder rank(int rank) {
            this.rank = rank;
            return this;
        }

        /**
         * How many ranks the group has.
         *
         * @param worldSize the number of ranks, at least 1 (checked by {@link #connect()})
         * @return this builder
         */
        public Builder worldSize(int worldSize) {
            this.worldSize = worldSize;
            return this;
        }

        /**
         * Host name or address of the server, as the clients reach it.
         *
         * @param serverHost the server's host name or address (default: loopback)
         * @return this builder
         * @throws NullPointerException if {@code serverHost} is {@code null}
         */
        public Builder serverHost(String serverHost) {
            this.serverHost = Objects.requireNonNull(serverHost, "serverHost");
            return this;
        }

        /**
         * Port of the server. 0 lets the serving rank bind an ephemeral port (see
         * {@link #servingPort()}); only the serving rank may be given 0.
         *
         * @param serverPort the TCP port, 0 to 65535 (checked by {@link #connect()}); default 29500
         * @return this builder
         */
        public Builder serverPort(int serverPort) {
            this.serverPort = serverPort;
            return this;
        }

        /**
         * Whether this rank runs the server; by default rank 0 does.
         *
         * @param serve {@code true} if this rank runs the server, {@code false} if it only connects
         * @return this builder
         */
        public Builder serve(boolean serve) {
            this.serve = serve;
            return this;
        }

        /**
         * Address the server binds when this rank serves; by default loopback. The wildcard address
         * ({@code 0.0.0.0} or {@code ::}) binds all interfaces.
         *
         * @param bindAddress the local address the server listens on
         * @return this builder
         * @throws NullPointerException if {@code bindAddress} is {@code null}
         */
        public Builder bindAddress(InetAddress bindAddress) {
            this.bindAddress = Objects.requireNonNull(bindAddress, "bindAddress");
            return this;
        }

        /**
         * How long to keep trying to reach the server and complete the handshake.
         *
         * @param connectTimeout the time allowed to connect and authenticate; positive
         * @return this builder
         * @throws NullPointerException if {@code connectTimeout} is {@code null}
         * @throws IllegalArgumentException if {@code connectTimeout} is not positive
         */
        public Builder connectTimeout(Duration connectTimeout) {
            this.connectTimeout = Durations.requirePositive(connectTimeout, "connect timeout");
            return this;
        }

        /**
         * How long the serving rank's {@code close()} waits for the other ranks to finish.
         *
         * @param closeLinger the wait, zero or more
         * @return this builder
         * @throws NullPointerException if {@code closeLinger} is {@code null}
         * @throws IllegalArgumentException if {@code closeLinger} is negative
         */
        public Builder closeLinger(Duration closeLinger) {
            Objects.requireNonNull(closeLinger, "closeLinger");
            if (closeLinger.isNegative()) {
                throw new IllegalArgumentException("close linger must not be negative, got " + closeLinger);
            }
            this.closeLinger = closeLinger;
            return this;
        }

        /**
         * The signal that ends the connect early ({@code dev.ar4j.BuildAbort}): the dial and the
         * handshake in progress are cut, and {@link #connect()} throws
         * {@link dev.ar4j.BuildAbortedException} (the server this rank started is closed).
         *
         * @param abort the signal; not {@code null}
         * @return this builder
         */
        public Builder abortSignal(AbortSignal abort) {
            this.abort = Objects.requireNonNull(abort, "abort");
            return this;
        }

        /**
         * Starts the server if this rank serves, connects and completes the handshake.
         *
         * @return this rank's connected rendezvous
         * @throws IllegalArgumentException   for missing or inconsistent parameters
         * @throws RendezvousTimeoutException if the server could not be reached within the connect timeout
         * @throws RendezvousException        if the server could not be started, refused this rank
         *                                    (wrong world size, rank already connected), or does not
         *                                    speak the rendezvous protocol
         */
        public TcpRendezvous connect() {
            if (rank == null || worldSize == null) {
                throw new IllegalArgumentException("TcpRendezvous needs rank(...) and worldSize(...)");
            }
            if (worldSize < 1) {
                throw new IllegalArgumentException("world size must be >= 1, got " + worldSize);
            }
            if (rank < 0 || rank >= worldSize) {
                throw new IllegalArgumentException("rank " + rank + " is out of range for world size " + worldSize
                        + "; ranks are 0.." + (worldSize - 1));
            }
            boolean serving = serve != null ? serve : rank == 0;
            if (serverPort < 0 || serverPort > 65535) {
                throw new IllegalArgumentException("server port must be in 0..65535, got " + serverPort);
            }
            if (serverPort == 0 && !serving) {
                throw new IllegalArgumentException("rank " + rank + " does not serve, so it needs the server's"
                        + " actual port, not 0 (the serving rank's servingPort() tells it)");
            }
            JobToken jobToken = token != null ? token : JobToken.fromSystem();
            RendezvousSettings resolved = settings != null ? settings : RendezvousSettings.resolve();
            TcpRendezvousServer server = null;
            String host = serverHost;
            int port = serverPort;
            if (serving) {
                server = TcpRendezvousServer.start(new InetSocketAddress(bindAddress, serverPort), worldSize, jobToken,
                        resolved);
                InetAddress bound = server.address().getAddress();
                host = (bound.isAnyLocalAddress() ? InetAddress.getLoopbackAddress() : bound).getHostAddress();
                port = server.port();
            }
            String description = host.indexOf(':') >= 0 ? "[" + host + "]:" + port : host + ":" + port;
            Socket socket = null;
            try {
                long deadline = System.nanoTime() + Durations.toNanos(connectTimeout);
                SecureChannel channel = ServerDialer.join(rank, worldSize, host, port, description, deadline,
                        connectTimeout, jobToken, resolved, abort);
                socket = channel.socket();
                PeerLossListeners listeners = new PeerLossListeners();
                ClientConnection connection = new ClientConnection(rank, worldSize, description, channel, resolved, listeners);
                return new TcpRendezvous(rank, worldSize, description, server, closeLinger,
                        new TcpStoreClient(rank, description, connection), listeners);
            } catch (IOException | RuntimeException | OutOfMemoryError e) {
                if (socket != null) {
                    ServerDialer.closeQuietly(socket);
                }
                if (server != null) {
                    server.close();
                }
                if (e instanceof RuntimeException runtime) {
                    throw runtime;
                }
                throw new RendezvousException("rank " + rank + " could not set up its connection to " + description
                        + ": " + e.getMessage(), e);
            }
        }
    }
}
