package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.PeerLossListener;
import dev.ar4j.rendezvous.RendezvousException;
import dev.ar4j.rendezvous.RendezvousAuthenticationException;
import dev.ar4j.rendezvous.RendezvousSettings;
import dev.ar4j.internal.platform.Durations;

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
 * loopback only. Connections that have not authenticated wait in a bounded {@link HandshakeQueue}:
 * when it is full the server holds the connection it has just accepted and accepts no more for a
 * moment (back-pressure), then evicts the connection that has waited longest for it, telling it
 * the server is busy; its client retries with a jittered back-off. A full queue with no connection
 * waiting evicts nobody. An authenticated peer has left the queue and is never refused for want of
 * room. A connection that does not authenticate is closed after the handshake timeout. Every server
 * thread survives any {@link Throwable}: an accept failure (out of file descriptors, out of memory)
 * is retried with back-off, and a warning that cannot be logged falls back to a line written
 * without allocating ({@link FailSafeLog}). Stored values, large requests and the copy a SET
 * makes are charged to the rank's share of a memory budget ({@link RendezvousSettings#maxServerBytes()},
 * {@link ServerMemoryBudget}) before they are allocated.
 *
 * <p>Every server thread is a platform thread ({@link ServerThreads}): one reader per connection,
 * one ticker for heartbeats and deadlines, a pool for writes and waiting reads. None is a virtual
 * thread, so the serving JVM's application cannot silence the server by occupying the carriers of
 * the virtual-thread scheduler (spinning, or pinned in a long blocking native call). The wire format is described in {@code RendezvousProtocol}; limits in
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
    private static final int LISTEN_BACKLOG = 4096;
    private static final long SHORTEST_EVICT_AFTER_NANOS = 250_000_000L;
    private static final FailSafeLog ACCEPT_FAILED = new FailSafeLog("ar4j rendezvous server: a connection could not be"
            + " accepted or started (out of file descriptors or memory?) and the warning could not be logged; retrying"
            + " with back-off");
    private static final FailSafeLog WARNING_FAILED = new FailSafeLog("ar4j rendezvous server: a warning could not be"
            + " logged (out of file descriptors or memory?); serving goes on");

    private final ServerSocket serverSocket;
    private final InetSocketAddress boundAddress;
    private final RendezvousSettings settings;
    private final java.util.List<byte[]> tokenKeys;
    private final GroupState group;
    private final WarningLimiter warnings = new WarningLimiter(LOG, 10_000, 20);
    private final Set<ServerSession> sessions = ConcurrentHashMap.newKeySet();
    private final HandshakeQueue handshakes;
    private final ServerMemoryBudget budget;
    private final java.util.concurrent.atomic.AtomicLong acceptFailures = new java.util.concurrent.atomic.AtomicLong();
    private final java.util.concurrent.atomic.AtomicLong evictions = new java.util.concurrent.atomic.AtomicLong();
    private final java.util.concurrent.atomic.AtomicLong framesRead = new java.util.concurrent.atomic.AtomicLong();
    /** The accept loop's and the connections' reader threads, joined at close. */
    private final Set<Thread> threads = ConcurrentHashMap.newKeySet();
    private final ServerThreads serverThreads;
    private volatile boolean closed;

    private TcpRendezvousServer(int worldSize, ServerSocket serverSocket, RendezvousSettings settings, JobToken token) {
        this.serverSocket = serverSocket;
        this.boundAddress = (InetSocketAddress) serverSocket.getLocalSocketAddress();
        this.settings = settings;
        this.tokenKeys = token.acceptedKeys();
        this.serverThreads = new ServerThreads(boundAddress.getPort());
        this.budget = new ServerMemoryBudget(settings.maxServerBytes(), worldSize);
        this.group = new GroupState(worldSize, settings, budget);
        this.handshakes = new HandshakeQueue(settings.maxPendingConnections(),
                Math.min(settings.handshakeTimeout().toNanos() / 8, SHORTEST_EVICT_AFTER_NANOS),
                settings.handshakeTimeout().toNanos() / 2);
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
            socket.bind(bindAddress, LISTEN_BACKLOG);
        } catch (IOException e) {
            closeQuietly(socket);
            String hint = e instanceof BindException
                    ? "; if the port is in use (an earlier run, another job, or torchrun's own store on MASTER_PORT),"
                    + " choose another one with MASTER_PORT or AR4J_MASTER_PORT"
                    : "";
            throw new RendezvousException("cannot serve the rendezvous on " + describe(bindAddress) + ": "
                    + e.getMessage() + hint, e);
        }
        // Formatting a log record's time loads the time-zone data file; load it while descriptors are
        // left, so that a warning logged when they have run out does not need a file.
        java.time.ZoneId.systemDefault();
        TcpRendezvousServer server = new TcpRendezvousServer(worldSize, socket, settings, token);
        server.startLoop(server::acceptLoop);
        String scope = ip != null && ip.isAnyLocalAddress() ? "all interfaces (the ranks span hosts)"
                : loopback ? "loopback only" : "one interface";
        try {
            LOG.log(System.Logger.Level.INFO, "rendezvous server for " + worldSize + " ranks listening on "
                    + describe(server.boundAddress) + ", " + scope + "; job token: " + token.source());
            if (!token.isPresent() && NO_TOKEN_WARNED.compareAndSet(false, true)) {
                LOG.log(System.Logger.Level.WARNING, "the rendezvous on " + describe(server.boundAddress) + " has no job"
                        + " token, so it serves loopback only and any local process can join it; " + JobToken.howToSet());
            }
        } catch (Throwable loggingFailed) {
            WARNING_FAILED.write(); // a failing logger must not fail the server it describes
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
        return handshakes.size();
    }

    /** How many connections were evicted from the full handshake queue as busy (for tests and statistics). */
    long evictions() {
        return evictions.get();
    }

    /** How many times accepting or starting a connection failed (for tests). */
    long acceptFailures() {
        return acceptFailures.get();
    }

    ServerMemoryBudget budget() {
        return budget;
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

    /** Logs a rate-limited warning; if logging fails, writes {@link #WARNING_FAILED} instead. Never throws. */
    void warn(String message) {
        try {
            warnings.warn(message);
        } catch (Throwable loggingFailed) {
            WARNING_FAILED.write();
        }
    }

    WarningLimiter warnings() {
        return warnings;
    }

    /**
     * The session proved it knows the token: it leaves the handshake queue.
     *
     * @return false if it had already been evicted (it is being told the server is busy)
     */
    boolean sessionAuthenticated(ServerSession session) {
        return handshakes.authenticated(session);
    }

    void sessionEnded(ServerSession session) {
        handshakes.remove(session);
        sessions.remove(session);
        threads.remove(Thread.currentThread());
    }

    /** Starts {@code loop} on a reader thread that {@link #close()} joins. */
    private void startLoop(Runnable loop) {
        Thread thread = serverThreads.newReader(loop);
        threads.add(thread);
        thread.start();
    }

    /** Stops accepting, wakes every waiting request, closes every connection, waits briefly for the threads. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        closeQuietly(serverSocket);
        handshakes.close();
        group.close();
        for (ServerSession session : sessions) {
            session.closeSocket();
        }
        serverThreads.shutdown();
        if (!awaitTermination(CLOSE_JOIN_TIMEOUT)) {
            FailSafeLog.log(LOG, System.Logger.Level.WARNING, () -> "rendezvous server on " + describe(boundAddress) + ": "
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
        if (threads.stream().anyMatch(Thread::isAlive)) {
            return false;
        }
        try {
            return serverThreads.awaitTermination(Math.max(0, deadline - System.nanoTime()));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** Pool threads alive now (for tests). */
    int poolThreads() {
        return serverThreads.poolThreads();
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
                try {
                    // Accept first: the oldest handshake is evicted only for a connection that is
                    // actually waiting, never for one that may not come (a full queue with no
                    // newcomer keeps every handshake in it until it ends or times out).
                    Socket socket = serverSocket.accept();
                    backoffMillis = FIRST_ACCEPT_BACKOFF_MILLIS;
                    admit(socket);
                } catch (Throwable failure) {
                    // EMFILE / ENFILE, OutOfMemoryError, a failing logger: the server must outlive them all.
                    if (closed) {
                        return;
                    }
                    Thread.interrupted(); // only close() stops this loop
                    acceptFailures.incrementAndGet();
                    reportAcceptFailure(failure, backoffMillis);
                    pause(backoffMillis);
                    backoffMillis = Math.min(backoffMillis * 2, LONGEST_ACCEPT_BACKOFF_MILLIS);
                }
            }
        } finally {
            threads.remove(Thread.currentThread());
        }
    }

    /**
     * Makes room for {@code socket}, held meanwhile (further connections wait in the kernel's
     * listen backlog), evicting the oldest handshake if it has had its share; then serves it.
     * Closes it if the server closes or that fails.
     */
    private void admit(Socket socket) throws Throwable {
        try {
            ServerSession evicted = handshakes.awaitRoom();
            if (evicted != null) {
                evict(evicted);
            }
        } catch (Throwable failure) {
            closeQuietly(socket);
            throw failure;
        }
        if (closed) {
            closeQuietly(socket);
            return;
        }
        serve(socket);
    }

    /** Starts serving an accepted connection; closes it if that fails. */
    private void serve(Socket socket) throws Throwable {
        ServerSession session = null;
        try {
            session = new ServerSession(this, group, settings, tokenKeys, socket, budget, serverThreads);
            handshakes.add(session);
            sessions.add(session);
            if (closed) {
                sessions.remove(session);
                closeQuietly(socket);
                return;
            }
            startLoop(session::run);
        } catch (Throwable failure) {
            if (session != null) {
                handshakes.remove(session);
                sessions.remove(session);
            }
            closeQuietly(socket);
            throw failure;
        }
    }

    /** Tells an evicted connection the server is busy and closes it, on a thread of its own (it may not read). */
    private void evict(ServerSession session) {
        evictions.incrementAndGet();
        try {
            serverThreads.execute(() -> session.evictBusy(handshakes.capacity()));
        } catch (Throwable failure) {
            session.closeSocket();
        }
    }

    private void reportAcceptFailure(Throwable failure, long backoffMillis) {
        try {
            warnings.warn("rendezvous server on " + describe(boundAddress) + " could not accept a connection ("
                    + failure + "); retrying in " + backoffMillis + " ms (out of file descriptors? raise ulimit -n)");
        } catch (Throwable loggingFailed) {
            ACCEPT_FAILED.write();
        }
    }

    private static void pause(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            // close() is what ends the loop; it sets the flag the loop checks
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
            FailSafeLog.log(LOG, System.Logger.Level.DEBUG, () -> "ignored error while closing " + closeable + ": " + e);
        }
    }
}
