package dev.ar4j.rendezvous;

import dev.ar4j.rendezvous.BlockingKeyValueStore.AwaitResult;
import dev.ar4j.rendezvous.BlockingKeyValueStore.Found;
import dev.ar4j.rendezvous.BlockingKeyValueStore.Missing;
import dev.ar4j.rendezvous.RendezvousProtocol.Frame;
import dev.ar4j.rendezvous.RendezvousProtocol.ProtocolViolation;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
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
 * <p>Closing the serving rank's rendezvous waits (up to the close linger) until every rank has
 * connected and disconnected, so a value it published last, such as a broadcast, is not lost to a
 * rank that reads it late. After one of its collectives timed out it waits (up to the same
 * linger) only for the ranks still connected, so that they time out on their own and name the
 * missing ranks instead of losing the server under them.
 */
public final class TcpRendezvous extends StoreBackedRendezvous {

    private static final System.Logger LOG = System.getLogger(TcpRendezvous.class.getName());

    /** How long a client keeps trying to reach the server, unless told otherwise. */
    public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofMinutes(2);
    /** How long the serving rank's {@link #close()} waits for the other ranks, unless told otherwise. */
    public static final Duration DEFAULT_CLOSE_LINGER = Duration.ofSeconds(10);
    /** Time a reply may take on top of the wait the request asked for. */
    private static final Duration REPLY_GRACE = Duration.ofSeconds(10);
    private static final long FIRST_RETRY_DELAY_MILLIS = 20;
    private static final long LONGEST_RETRY_DELAY_MILLIS = 500;
    private static final int LONGEST_CONNECT_ATTEMPT_MILLIS = 5_000;

    private final String serverDescription;
    private final TcpRendezvousServer ownedServer;
    private final Duration closeLinger;
    private final Socket socket;
    private final DataInputStream in;
    private final OutputStream out;
    private String brokenBecause;

    private TcpRendezvous(int rank, int worldSize, String serverDescription, TcpRendezvousServer ownedServer,
                          Duration closeLinger, Socket socket) throws IOException {
        super(rank, worldSize);
        this.serverDescription = serverDescription;
        this.ownedServer = ownedServer;
        this.closeLinger = closeLinger;
        this.socket = socket;
        this.in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
        this.out = new BufferedOutputStream(socket.getOutputStream());
    }

    /** A builder for a rendezvous whose parameters are given one by one. */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Joins the group that {@code environment} describes: rank 0 serves at the master port, and
     * every rank connects to the master address.
     *
     * <p>Rank 0 binds the loopback address when the master address is a loopback address and all
     * ranks run on this host; the master address itself when it belongs to this host; and all
     * interfaces otherwise (for example when the name resolves to 127.0.1.1 on rank 0 but the
     * ranks span hosts). A world of one rank serves on an ephemeral loopback port, since nobody
     * else needs to find it.
     */
    public static TcpRendezvous connect(LaunchEnvironment environment, Duration connectTimeout) {
        Objects.requireNonNull(environment, "environment");
        Builder builder = builder()
                .rank(environment.rank())
                .worldSize(environment.worldSize())
                .serverHost(environment.masterAddr())
                .serverPort(environment.masterPort())
                .connectTimeout(connectTimeout);
        if (environment.worldSize() == 1) {
            builder.serverHost(InetAddress.getLoopbackAddress().getHostAddress()).serverPort(0);
        } else if (environment.rank() == 0) {
            builder.bindAddress(chooseBindAddress(environment));
        }
        return builder.connect();
    }

    private static InetAddress chooseBindAddress(LaunchEnvironment environment) {
        InetAddress wildcard = new InetSocketAddress(0).getAddress();
        String master = environment.masterAddr();
        InetAddress[] resolved;
        try {
            resolved = InetAddress.getAllByName(master);
        } catch (UnknownHostException e) {
            LOG.log(System.Logger.Level.WARNING, "master address '" + master + "' does not resolve on rank 0;"
                    + " serving the rendezvous on all interfaces");
            return wildcard;
        }
        if (Arrays.stream(resolved).allMatch(InetAddress::isLoopbackAddress)) {
            if (environment.isSingleHost()) {
                return resolved[0];
            }
            LOG.log(System.Logger.Level.WARNING, "master address '" + master + "' resolves to loopback "
                    + resolved[0].getHostAddress() + " on rank 0, but the ranks span hosts;"
                    + " serving the rendezvous on all interfaces");
            return wildcard;
        }
        for (InetAddress address : resolved) {
            try {
                if (NetworkInterface.getByInetAddress(address) != null) {
                    return address;
                }
            } catch (SocketException e) {
                LOG.log(System.Logger.Level.DEBUG, () -> "cannot tell whether " + address + " is local: " + e);
            }
        }
        LOG.log(System.Logger.Level.INFO, "master address '" + master + "' is not an address of rank 0's"
                + " interfaces; serving the rendezvous on all interfaces");
        return wildcard;
    }

    /** Whether this rank runs the server. */
    public boolean isServing() {
        return ownedServer != null;
    }

    /**
     * The port of the server this rank runs, which is the bound port when the builder asked for
     * port 0.
     *
     * @throws IllegalStateException if this rank does not run the server
     */
    public int servingPort() {
        if (ownedServer == null) {
            throw new IllegalStateException("rank " + rank() + " does not run the rendezvous server");
        }
        return ownedServer.port();
    }

    @Override
    void storeSet(String storeKey, byte[] value) {
        Frame reply = exchange(RendezvousProtocol.SET, RendezvousProtocol.set(storeKey, value), REPLY_GRACE,
                "set of '" + storeKey + "'");
        if (reply.type() != RendezvousProtocol.OK) {
            throw unexpectedReply(reply, "SET");
        }
    }

    @Override
    AwaitResult storeAwait(List<String> storeKeys, Duration timeout, String operation) {
        long timeoutMillis = Math.max(1, Durations.toMillis(timeout));
        Frame reply = exchange(RendezvousProtocol.GET, RendezvousProtocol.get(timeoutMillis, storeKeys),
                timeout.plus(REPLY_GRACE), operation);
        try {
            switch (reply.type()) {
                case RendezvousProtocol.OK -> {
                    byte[][] values = RendezvousProtocol.parseValues(reply.payload());
                    if (values.length != storeKeys.size()) {
                        throw new ProtocolViolation("GET of " + storeKeys.size() + " keys answered with "
                                + values.length + " values");
                    }
                    return new Found(values);
                }
                case RendezvousProtocol.TIMEOUT -> {
                    int[] indices = RendezvousProtocol.parseMissing(reply.payload());
                    for (int index : indices) {
                        if (index < 0 || index >= storeKeys.size()) {
                            throw new ProtocolViolation("TIMEOUT names key index " + index + " of a GET of "
                                    + storeKeys.size() + " keys");
                        }
                    }
                    return new Missing(indices);
                }
                default -> throw unexpectedReply(reply, "GET");
            }
        } catch (ProtocolViolation violation) {
            brokenBecause = violation.getMessage();
            throw new RendezvousException("rank " + rank() + " got a malformed reply from the rendezvous server at "
                    + serverDescription + " during " + operation + ": " + violation.getMessage());
        }
    }

    @Override
    void release() {
        closeQuietly(socket);
        if (ownedServer != null) {
            if (hasTimedOut()) {
                // Not for the absent ranks, but for those still waiting: they time out on their own
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

    /** Sends one request and reads its reply; an ERROR reply becomes a {@link RendezvousException}. */
    private Frame exchange(byte type, byte[] payload, Duration replyTimeout, String operation) {
        if (brokenBecause != null) {
            throw new RendezvousException("rank " + rank() + " cannot run " + operation + ": its connection to the"
                    + " rendezvous server at " + serverDescription + " broke earlier (" + brokenBecause + ")");
        }
        Frame reply;
        try {
            socket.setSoTimeout((int) Math.min(Integer.MAX_VALUE, Durations.toMillis(replyTimeout)));
            RendezvousProtocol.writeFrame(out, type, payload);
            reply = RendezvousProtocol.readFrame(in, RendezvousProtocol.MAX_REPLY_PAYLOAD);
        } catch (SocketTimeoutException e) {
            brokenBecause = "no reply within " + Durations.format(replyTimeout);
            throw new RendezvousException("rank " + rank() + ": the rendezvous server at " + serverDescription
                    + " did not answer " + operation + " within " + Durations.format(replyTimeout), e);
        } catch (IOException e) {
            brokenBecause = String.valueOf(e.getMessage());
            throw new RendezvousException("rank " + rank() + " lost its connection to the rendezvous server at "
                    + serverDescription + " during " + operation + ": " + e.getMessage()
                    + " (did the serving rank exit or crash?)", e);
        }
        if (reply == null) {
            brokenBecause = "the server closed the connection";
            throw new RendezvousException("rank " + rank() + ": the rendezvous server at " + serverDescription
                    + " closed the connection during " + operation + " (did the serving rank exit or crash?)");
        }
        if (reply.type() == RendezvousProtocol.ERROR) {
            throw new RendezvousException("the rendezvous server at " + serverDescription + " refused " + operation
                    + " from rank " + rank() + ": " + RendezvousProtocol.parseError(reply.payload()));
        }
        return reply;
    }

    private RendezvousException unexpectedReply(Frame reply, String request) {
        brokenBecause = "unexpected " + RendezvousProtocol.typeName(reply.type()) + " reply to " + request;
        return new RendezvousException("rank " + rank() + ": the rendezvous server at " + serverDescription
                + " answered " + request + " with " + RendezvousProtocol.typeName(reply.type()));
    }

    private static void closeQuietly(AutoCloseable closeable) {
        try {
            closeable.close();
        } catch (Exception e) {
            LOG.log(System.Logger.Level.DEBUG, () -> "ignored error while closing " + closeable + ": " + e);
        }
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
        private Duration closeLinger = DEFAULT_CLOSE_LINGER;

        private Builder() {
        }

        /** This rank, {@code 0 <= rank < worldSize}. */
        public Builder rank(int rank) {
            this.rank = rank;
            return this;
        }

        /** How many ranks the group has. */
        public Builder worldSize(int worldSize) {
            this.worldSize = worldSize;
            return this;
        }

        /** Host name or address of the server, as the clients reach it. */
        public Builder serverHost(String serverHost) {
            this.serverHost = Objects.requireNonNull(serverHost, "serverHost");
            return this;
        }

        /**
         * Port of the server. 0 lets the serving rank bind an ephemeral port (see
         * {@link #servingPort()}); only the serving rank may be given 0.
         */
        public Builder serverPort(int serverPort) {
            this.serverPort = serverPort;
            return this;
        }

        /** Whether this rank runs the server; by default rank 0 does. */
        public Builder serve(boolean serve) {
            this.serve = serve;
            return this;
        }

        /**
         * Address the server binds when this rank serves; by default loopback. The wildcard address
         * ({@code 0.0.0.0} or {@code ::}) binds all interfaces.
         */
        public Builder bindAddress(InetAddress bindAddress) {
            this.bindAddress = Objects.requireNonNull(bindAddress, "bindAddress");
            return this;
        }

        /** How long to keep trying to reach the server and complete the handshake. */
        public Builder connectTimeout(Duration connectTimeout) {
            this.connectTimeout = Durations.requirePositive(connectTimeout, "connect timeout");
            return this;
        }

        /** How long the serving rank's {@code close()} waits for the other ranks to finish. */
        public Builder closeLinger(Duration closeLinger) {
            Objects.requireNonNull(closeLinger, "closeLinger");
            if (closeLinger.isNegative()) {
                throw new IllegalArgumentException("close linger must not be negative, got " + closeLinger);
            }
            this.closeLinger = closeLinger;
            return this;
        }

        /**
         * Starts the server if this rank serves, connects and completes the handshake.
         *
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
            TcpRendezvousServer server = null;
            String host = serverHost;
            int port = serverPort;
            if (serving) {
                server = TcpRendezvousServer.start(new InetSocketAddress(bindAddress, serverPort), worldSize);
                InetAddress bound = server.address().getAddress();
                host = (bound.isAnyLocalAddress() ? InetAddress.getLoopbackAddress() : bound).getHostAddress();
                port = server.port();
            }
            String description = host.indexOf(':') >= 0 ? "[" + host + "]:" + port : host + ":" + port;
            try {
                Socket socket = handshake(host, port, description);
                return new TcpRendezvous(rank, worldSize, description, server, closeLinger, socket);
            } catch (IOException | RuntimeException e) {
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

        private Socket handshake(String host, int port, String description) {
            long deadline = System.nanoTime() + Durations.toNanos(connectTimeout);
            Socket socket = connectWithRetry(host, port, description, deadline);
            try {
                socket.setTcpNoDelay(true);
                socket.setKeepAlive(true);
                long leftMillis = Math.max(1_000, (deadline - System.nanoTime()) / 1_000_000);
                socket.setSoTimeout((int) Math.min(Integer.MAX_VALUE, leftMillis));
                OutputStream output = new BufferedOutputStream(socket.getOutputStream());
                RendezvousProtocol.writeFrame(output, RendezvousProtocol.HELLO, RendezvousProtocol.hello(rank, worldSize));
                DataInputStream input = new DataInputStream(socket.getInputStream());
                Frame reply;
                try {
                    reply = RendezvousProtocol.readFrame(input, RendezvousProtocol.MAX_REPLY_PAYLOAD);
                } catch (ProtocolViolation violation) {
                    throw new RendezvousException("rank " + rank + ": " + description + " does not answer with the ar4j"
                            + " rendezvous protocol (" + violation.getMessage() + "); is the port used by another"
                            + " service, such as torchrun's own store on MASTER_PORT?");
                } catch (SocketTimeoutException e) {
                    throw new RendezvousException("rank " + rank + ": " + description + " accepted the connection but"
                            + " did not answer the rendezvous handshake within " + leftMillis + " ms; is it an ar4j"
                            + " rendezvous server?", e);
                }
                if (reply == null) {
                    throw new RendezvousException("rank " + rank + ": " + description + " closed the connection during"
                            + " the rendezvous handshake; is it an ar4j rendezvous server?");
                }
                if (reply.type() == RendezvousProtocol.ERROR) {
                    throw new RendezvousException("rank " + rank + " was refused by the rendezvous server at "
                            + description + ": " + RendezvousProtocol.parseError(reply.payload()));
                }
                if (reply.type() != RendezvousProtocol.OK) {
                    throw new RendezvousException("rank " + rank + ": " + description + " answered the handshake with "
                            + RendezvousProtocol.typeName(reply.type()));
                }
                return socket;
            } catch (IOException | RuntimeException e) {
                closeQuietly(socket);
                if (e instanceof RuntimeException runtime) {
                    throw runtime;
                }
                throw new RendezvousException("rank " + rank + ": the rendezvous handshake with " + description
                        + " failed: " + e.getMessage(), e);
            }
        }

        private Socket connectWithRetry(String host, int port, String description, long deadline) {
            long delayMillis = FIRST_RETRY_DELAY_MILLIS;
            List<String> distinctErrors = new ArrayList<>();
            int attempts = 0;
            while (true) {
                long leftMillis = (deadline - System.nanoTime()) / 1_000_000;
                if (leftMillis <= 0 && attempts > 0) {
                    throw new RendezvousTimeoutException("rank " + rank + " could not reach the rendezvous server at "
                            + description + " within " + Durations.format(connectTimeout) + " (" + attempts
                            + " attempts; " + String.join("; ", distinctErrors) + "). Check that the serving rank is"
                            + " running and that the master address and port (MASTER_ADDR / MASTER_PORT) point at it.",
                            "(connect)", List.of(), connectTimeout);
                }
                attempts++;
                InetSocketAddress target = new InetSocketAddress(host, port);
                String error;
                if (target.isUnresolved()) {
                    error = "unknown host '" + host + "'";
                } else {
                    Socket socket = new Socket();
                    try {
                        socket.connect(target, (int) Math.clamp(leftMillis, 1, LONGEST_CONNECT_ATTEMPT_MILLIS));
                        return socket;
                    } catch (IOException e) {
                        closeQuietly(socket);
                        error = e.getClass().getSimpleName() + ": " + e.getMessage();
                    }
                }
                if (!distinctErrors.contains(error) && distinctErrors.size() < 3) {
                    distinctErrors.add(error);
                }
                long sleepMillis = Math.min(delayMillis, Math.max(0, (deadline - System.nanoTime()) / 1_000_000));
                if (sleepMillis > 0) {
                    try {
                        Thread.sleep(sleepMillis);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new RendezvousException("rank " + rank + " was interrupted while connecting to the"
                                + " rendezvous server at " + description, e);
                    }
                }
                delayMillis = Math.min(delayMillis * 2, LONGEST_RETRY_DELAY_MILLIS);
            }
        }
    }
}
