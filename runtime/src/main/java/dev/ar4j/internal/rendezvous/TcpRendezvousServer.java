package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.PeerLossListener;
import dev.ar4j.rendezvous.RendezvousException;
import dev.ar4j.rendezvous.RendezvousAuthenticationException;
import dev.ar4j.rendezvous.RendezvousSettings;
import dev.ar4j.platform.Durations;

import java.io.IOException;
import java.net.BindException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The TCP key-value store behind {@link TcpRendezvous}. Usually rank 0's {@code TcpRendezvous}
 * starts one and owns it; a launcher that wants the store in a process of its own starts one
 * with {@link #start} and points every rank at it as a client.
 *
 * <p>It belongs to one job: a connection is admitted only after proving it knows the job's
 * {@link JobToken} (challenge–response; a rank of another job is refused with "another job's
 * rank (token mismatch)"), and every later frame is authenticated. It then checks rank, world size
 * and incarnation (a restarted rank fails the group rather than being served stale values), lets
 * a rank write only its own keys, within its quota, and makes every wait that needs a rank end at
 * once when that rank's connection drops or its heartbeat stops. Without a token it serves on
 * loopback only. Connections that have not authenticated are capped and closed after the
 * handshake timeout; an accept failure (such as running out of file descriptors) is retried with
 * back-off. The wire format is described in {@code RendezvousProtocol}; limits in
 * {@link RendezvousSettings}.
 *
 * <p>It is not encryption: values travel in clear. Keep it on a network only the job's hosts reach.
 */
public final class TcpRendezvousServer implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger(TcpRendezvousServer.class.getName());
    private static final Duration CLOSE_JOIN_TIMEOUT = Duration.ofSeconds(2);
    private static final long FIRST_ACCEPT_BACKOFF_MILLIS = 10;
    private static final long LONGEST_ACCEPT_BACKOFF_MILLIS = 1_000;
    private static final AtomicBoolean NO_TOKEN_WARNED = new AtomicBoolean();

    private final ServerSocket serverSocket;
    private final InetSocketAddress boundAddress;
    private final RendezvousSettings settings;
    private final byte[] tokenKey;
    private final GroupState group;
    private final WarningLimiter warnings = new WarningLimiter(LOG, 10_000, 20);
    private final Set<ServerSession> sessions = ConcurrentHashMap.newKeySet();
    private final AtomicInteger pending = new AtomicInteger();
    private final java.util.concurrent.atomic.AtomicLong framesRead = new java.util.concurrent.atomic.AtomicLong();
    private final Set<Thread> threads = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;

    private TcpRendezvousServer(int worldSize, ServerSocket serverSocket, RendezvousSettings settings, JobToken token) {
        this.serverSocket = serverSocket;
        this.boundAddress = (InetSocketAddress) serverSocket.getLocalSocketAddress();
        this.settings = settings;
        this.tokenKey = token.key();
        this.group = new GroupState(worldSize, settings);
    }

    /**
     * Binds {@code bindAddress} and serves a group of {@code worldSize} ranks, with the token of
     * this process's environment ({@link JobToken#fromSystem()}) and {@link RendezvousSettings#resolve()}.
     *
     * @param bindAddress the address and port to listen on; port 0 binds an ephemeral port
     * @param worldSize the number of ranks the group has, at least 1
     * @return the running server, owned by the caller
     * @throws RendezvousException      if the address cannot be bound, or it is not a loopback
     *                                  address and there is no token
     * @throws IllegalArgumentException if {@code worldSize < 1}
     */
    public static TcpRendezvousServer start(InetSocketAddress bindAddress, int worldSize) {
        return start(bindAddress, worldSize, JobToken.fromSystem(), RendezvousSettings.resolve());
    }

    /**
     * Binds {@code bindAddress} and serves {@code worldSize} ranks of the job {@code token} names.
     *
     * @param bindAddress the address and port to listen on; port 0 binds an ephemeral port
     * @param worldSize the number of ranks the group has, at least 1
     * @param token the job's token, which every rank must prove it knows; without one only a loopback address
     *     is served
     * @param settings the heartbeat and limits
     * @return the running server, owned by the caller
     * @throws NullPointerException if an argument is {@code null}
     * @throws IllegalArgumentException if {@code worldSize < 1}
     * @throws RendezvousAuthenticationException if the address is not loopback and {@code token} has no
     *     secret
     * @throws RendezvousException if the address cannot be bound (the message hints at a port in use)
     */
    public static TcpRendezvousServer start(InetSocketAddress bindAddress, int worldSize, JobToken token,
                                            RendezvousSettings settings) {
        Objects.requireNonNull(bindAddress, "bindAddress");
        Objects.requireNonNull(token, "token");
        Objects.requireNonNull(settings, "settings");
        if (worldSize < 1) {
            throw new IllegalArgumentException("world size must be >= 1, got " + worldSize);
        }
        InetAddress ip = bindAddress.getAddress();
        boolean loopback = ip != null && ip.isLoopbackAddress();
        if (!token.isPresent() && !loopback) {
            throw new RendezvousAuthenticationException("refusing to serve the rendezvous on " + describe(bindAddress)
                    + " without a job token: any process that can reach it could join the job; " + JobToken.howToSet());
        }
        ServerSocket socket = null;
        try {
            socket = new ServerSocket();
            socket.setReuseAddress(true);
            socket.bind(bindAddress, 128);
        } catch (IOException e) {
            closeQuietly(socket);
            String hint = e instanceof BindException
                    ? "; if the port is in use (an earlier run, another job, or torchrun's own store on MASTER_PORT),"
                    + " choose another one with MASTER_PORT or AR4J_MASTER_PORT"
                    : "";
            throw new RendezvousException("cannot serve the rendezvous on " + describe(bindAddress) + ": "
                    + e.getMessage() + hint, e);
        }
        TcpRendezvousServer server = new TcpRendezvousServer(worldSize, socket, settings, token);
        Thread acceptor = Thread.ofVirtual().name("ar4j-rendezvous-accept-" + server.port()).unstarted(server::acceptLoop);
        server.threads.add(acceptor);
        acceptor.start();
        String scope = ip != null && ip.isAnyLocalAddress() ? "all interfaces (the ranks span hosts)"
                : loopback ? "loopback only" : "one interface";
        LOG.log(System.Logger.Level.INFO, "rendezvous server for " + worldSize + " ranks listening on "
                + describe(server.boundAddress) + ", " + scope + "; job token: " + token.source());
        if (!token.isPresent() && NO_TOKEN_WARNED.compareAndSet(false, true)) {
            LOG.log(System.Logger.Level.WARNING, "the rendezvous on " + describe(server.boundAddress) + " has no job"
                    + " token, so it serves loopback only and any local process can join it; " + JobToken.howToSet());
        }
        return server;
    }

    /**
     * Starts a server on the loopback address, for a group whose ranks all run on this host.
     *
     * @param port the TCP port, 0 for an ephemeral one
     * @param worldSize the number of ranks the group has, at least 1
     * @return the running server, owned by the caller
     * @throws IllegalArgumentException if {@code worldSize < 1}
     * @throws RendezvousException if the port cannot be bound
     */
    public static TcpRendezvousServer startOnLoopback(int port, int worldSize) {
        return start(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), worldSize);
    }

    /**
     * The address the server is bound to, with the actual port.
     *
     * @return the bound address and port
     */
    public InetSocketAddress address() {
        return boundAddress;
    }

    /**
     * The bound port (the ephemeral one chosen if started with port 0).
     *
     * @return the port, 1 to 65535
     */
    public int port() {
        return boundAddress.getPort();
    }

    /**
     * The world size the server expects every rank to announce.
     *
     * @return the world size, at least 1
     */
    public int worldSize() {
        return group.worldSize();
    }

    /**
     * The settings the server runs with.
     *
     * @return the settings given at start
     */
    public RendezvousSettings settings() {
        return settings;
    }

    /**
     * Subscribes to the first rank loss the server sees (a rank disconnected without goodbye, its
     * heartbeat stopped, or it joined again as a new incarnation).
     *
     * @param listener told once, on a server thread; must return quickly and not block
     * @return a handle whose {@code close()} removes the listener
     */
    public AutoCloseable onPeerLost(PeerLossListener listener) {
        return group.onPeerLost(listener);
    }

    /**
     * Waits until every rank has connected at least once and no rank is connected any more, so
     * that closing the server loses nothing a rank still needs.
     *
     * @param timeout the longest wait; positive
     * @return true if that happened within {@code timeout}; false if the time ran out
     */
    public boolean awaitRanksFinished(Duration timeout) {
        return group.awaitMembership(timeout, group::allJoinedAndGone);
    }

    /**
     * Waits until no rank is connected any more, ignoring ranks that never joined; false on timeout.
     *
     * @param timeout the longest wait; positive
     * @return {@code true} if no rank is connected within {@code timeout}, {@code false} if the time ran out
     */
    public boolean awaitConnectedRanksGone(Duration timeout) {
        return group.awaitMembership(timeout, group::noneConnected);
    }

    /** For messages: which ranks never connected, are still connected, or were lost. */
    String describeUnfinishedRanks() {
        return group.describeUnfinishedRanks();
    }

    /** How many connections have not (yet) authenticated. */
    int pendingConnections() {
        return pending.get();
    }

    /** Frames read so far, well-formed or refused (for tests and statistics). */
    long framesRead() {
        return framesRead.get();
    }

    void frameRead() {
        framesRead.incrementAndGet();
    }

    boolean isClosed() {
        return closed;
    }

    void warn(String message) {
        warnings.warn(message);
    }

    WarningLimiter warnings() {
        return warnings;
    }

    void sessionEstablished(ServerSession session) {
        pending.decrementAndGet();
    }

    void sessionEnded(ServerSession session) {
        if (sessions.remove(session) && !session.isEstablished()) {
            pending.decrementAndGet();
        }
        threads.remove(Thread.currentThread());
    }

    /** Stops accepting, wakes every waiting request, closes every connection, waits briefly for the threads. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        closeQuietly(serverSocket);
        group.close();
        for (ServerSession session : sessions) {
            session.closeSocket();
        }
        if (!awaitTermination(CLOSE_JOIN_TIMEOUT)) {
            LOG.log(System.Logger.Level.WARNING, "rendezvous server on " + describe(boundAddress) + ": "
                    + threads.size() + " thread(s) still running " + Durations.format(CLOSE_JOIN_TIMEOUT) + " after close");
        }
    }

    /** Waits up to {@code timeout} for the accept thread and every connection thread to end. */
    boolean awaitTermination(Duration timeout) {
        long deadline = System.nanoTime() + Durations.toNanos(timeout);
        for (Thread thread : List.copyOf(threads)) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return threads.isEmpty();
            }
            try {
                thread.join(Duration.ofNanos(left));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
        return threads.stream().noneMatch(Thread::isAlive);
    }

    @Override
    public String toString() {
        return "TcpRendezvousServer[" + describe(boundAddress) + ", world size " + group.worldSize()
                + (closed ? ", closed]" : "]");
    }

    private void acceptLoop() {
        long backoffMillis = FIRST_ACCEPT_BACKOFF_MILLIS;
        try {
            while (!closed) {
                Socket socket;
                try {
                    socket = serverSocket.accept();
                    backoffMillis = FIRST_ACCEPT_BACKOFF_MILLIS;
                } catch (IOException e) {
                    if (closed) {
                        return;
                    }
                    // EMFILE / ENFILE and the like: the server must outlive them.
                    warn("rendezvous server on " + describe(boundAddress) + " could not accept a connection ("
                            + e.getMessage() + "); retrying in " + backoffMillis + " ms (out of file descriptors?"
                            + " raise ulimit -n)");
                    try {
                        Thread.sleep(backoffMillis);
                    } catch (InterruptedException interrupted) {
                        Thread.currentThread().interrupt();
                        return;
                    }
                    backoffMillis = Math.min(backoffMillis * 2, LONGEST_ACCEPT_BACKOFF_MILLIS);
                    continue;
                }
                if (pending.incrementAndGet() > settings.maxPendingConnections()) {
                    pending.decrementAndGet();
                    warn("rendezvous server on " + describe(boundAddress) + " refuses the connection from "
                            + socket.getRemoteSocketAddress() + ": " + settings.maxPendingConnections()
                            + " connections are already waiting to authenticate (ar4j.rdzv.maxPendingConnections)");
                    closeQuietly(socket);
                    continue;
                }
                ServerSession session = new ServerSession(this, group, settings, tokenKey, socket);
                sessions.add(session);
                if (closed) {
                    sessions.remove(session);
                    closeQuietly(socket);
                    return;
                }
                Thread handler = Thread.ofVirtual().name("ar4j-rendezvous-conn-" + socket.getRemoteSocketAddress())
                        .unstarted(session::run);
                threads.add(handler);
                handler.start();
            }
        } finally {
            threads.remove(Thread.currentThread());
        }
    }

    static String describe(InetSocketAddress address) {
        InetAddress ip = address.getAddress();
        String host = ip == null ? address.getHostString() : ip.getHostAddress();
        return (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + address.getPort();
    }

    private static void closeQuietly(AutoCloseable closeable) {
        if (closeable == null) {
            return;
        }
        try {
            closeable.close();
        } catch (Exception e) {
            LOG.log(System.Logger.Level.DEBUG, () -> "ignored error while closing " + closeable + ": " + e);
        }
    }
}
