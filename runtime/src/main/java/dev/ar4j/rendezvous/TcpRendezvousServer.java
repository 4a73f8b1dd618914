package dev.ar4j.rendezvous;

import dev.ar4j.rendezvous.BlockingKeyValueStore.AwaitResult;
import dev.ar4j.rendezvous.BlockingKeyValueStore.Found;
import dev.ar4j.rendezvous.BlockingKeyValueStore.Missing;
import dev.ar4j.rendezvous.RendezvousProtocol.Frame;
import dev.ar4j.rendezvous.RendezvousProtocol.GetRequest;
import dev.ar4j.rendezvous.RendezvousProtocol.HelloRequest;
import dev.ar4j.rendezvous.RendezvousProtocol.ProtocolViolation;
import dev.ar4j.rendezvous.RendezvousProtocol.SetRequest;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.BindException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The TCP key-value store behind {@link TcpRendezvous}. Usually rank 0's {@code TcpRendezvous}
 * starts one and owns it; a launcher that wants the store in a process of its own starts one
 * with {@link #start} and points every rank at it as a client.
 *
 * <p>The server knows the world size and checks every rank's handshake against it: a rank that
 * announces another world size, a rank out of range, or a second connection claiming a rank that
 * is still connected is refused with an error message the client raises. Each connection is served
 * by its own virtual thread; {@link #close()} stops the accept loop, wakes waiting requests and
 * closes every connection. The wire format is described in {@code RendezvousProtocol}.
 *
 * <p>The store has no authentication: bind it to loopback (the default of {@link TcpRendezvous})
 * unless the ranks span hosts, and then to an address only the job's hosts can reach.
 */
public final class TcpRendezvousServer implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger(TcpRendezvousServer.class.getName());
    private static final Duration CLOSE_JOIN_TIMEOUT = Duration.ofSeconds(2);
    /** How long a HELLO for a rank that is still connected waits for that connection to end. */
    private static final Duration DUPLICATE_RANK_GRACE = Duration.ofMillis(500);

    private final int worldSize;
    private final ServerSocket serverSocket;
    private final InetSocketAddress boundAddress;
    private final BlockingKeyValueStore store = new BlockingKeyValueStore();

    private final ReentrantLock membershipLock = new ReentrantLock();
    private final Condition membershipChanged = membershipLock.newCondition();
    private final Map<Integer, Connection> connectedRanks = new HashMap<>();
    private final BitSet joinedRanks = new BitSet();

    private final Set<Connection> connections = ConcurrentHashMap.newKeySet();
    private final Set<Thread> threads = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;

    private TcpRendezvousServer(int worldSize, ServerSocket serverSocket) {
        this.worldSize = worldSize;
        this.serverSocket = serverSocket;
        this.boundAddress = (InetSocketAddress) serverSocket.getLocalSocketAddress();
    }

    /**
     * Binds {@code bindAddress} and starts serving a group of {@code worldSize} ranks. Port 0 binds
     * an ephemeral port; {@link #port()} says which.
     *
     * @throws RendezvousException      if the address cannot be bound (the message names it and
     *                                  the usual cause, a port already in use)
     * @throws IllegalArgumentException if {@code worldSize < 1}
     */
    public static TcpRendezvousServer start(InetSocketAddress bindAddress, int worldSize) {
        Objects.requireNonNull(bindAddress, "bindAddress");
        if (worldSize < 1) {
            throw new IllegalArgumentException("world size must be >= 1, got " + worldSize);
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
        TcpRendezvousServer server = new TcpRendezvousServer(worldSize, socket);
        Thread acceptor = Thread.ofVirtual().name("ar4j-rendezvous-accept-" + server.port()).unstarted(server::acceptLoop);
        server.threads.add(acceptor);
        acceptor.start();
        LOG.log(System.Logger.Level.DEBUG, () -> "rendezvous server for " + worldSize + " ranks listening on "
                + describe(server.boundAddress));
        return server;
    }

    /** Starts a server on the loopback address, for a group whose ranks all run on this host. */
    public static TcpRendezvousServer startOnLoopback(int port, int worldSize) {
        return start(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), worldSize);
    }

    /** The address the server is bound to, with the actual port. */
    public InetSocketAddress address() {
        return boundAddress;
    }

    /** The bound port (the ephemeral one chosen if started with port 0). */
    public int port() {
        return boundAddress.getPort();
    }

    /** The world size the server expects every rank to announce. */
    public int worldSize() {
        return worldSize;
    }

    /**
     * Waits until every rank has connected at least once and no rank is connected any more, so
     * that closing the server loses nothing a rank still needs. Used by the owning rank before it
     * closes the server.
     *
     * @return true if that happened within {@code timeout}; false if the time ran out
     */
    public boolean awaitRanksFinished(Duration timeout) {
        return awaitMembership(timeout, () -> joinedRanks.cardinality() == worldSize && connectedRanks.isEmpty());
    }

    /**
     * Waits until no rank is connected any more, ignoring ranks that never joined; false if some
     * still were when the timeout ran out. A serving rank whose own collective timed out waits so,
     * to let the ranks still waiting time out themselves and name the missing ranks, rather than
     * see the server vanish.
     */
    public boolean awaitConnectedRanksGone(Duration timeout) {
        return awaitMembership(timeout, connectedRanks::isEmpty);
    }

    /** Waits, under the membership lock, until {@code done} holds; false on timeout, close or interrupt. */
    private boolean awaitMembership(Duration timeout, java.util.function.BooleanSupplier done) {
        long remaining = Durations.toNanos(Durations.requirePositive(timeout, "timeout"));
        membershipLock.lock();
        try {
            while (!done.getAsBoolean()) {
                if (remaining <= 0 || closed) {
                    return false;
                }
                remaining = membershipChanged.awaitNanos(remaining);
            }
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        } finally {
            membershipLock.unlock();
        }
    }

    /** For messages: which ranks never connected and which are still connected. */
    String describeUnfinishedRanks() {
        membershipLock.lock();
        try {
            List<Integer> neverJoined = new ArrayList<>();
            for (int r = 0; r < worldSize; r++) {
                if (!joinedRanks.get(r)) {
                    neverJoined.add(r);
                }
            }
            List<Integer> connected = connectedRanks.keySet().stream().sorted().toList();
            List<String> parts = new ArrayList<>();
            if (!neverJoined.isEmpty()) {
                parts.add(StoreBackedRendezvous.describeRanks(neverJoined) + " never connected");
            }
            if (!connected.isEmpty()) {
                parts.add(StoreBackedRendezvous.describeRanks(connected) + " still connected");
            }
            return parts.isEmpty() ? "all ranks finished" : String.join("; ", parts);
        } finally {
            membershipLock.unlock();
        }
    }

    /**
     * Stops accepting, wakes every waiting request, closes every connection and waits briefly for
     * the server's threads to end. Idempotent.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        closeQuietly(serverSocket);
        store.close();
        for (Connection connection : connections) {
            closeQuietly(connection.socket);
        }
        membershipLock.lock();
        try {
            membershipChanged.signalAll();
        } finally {
            membershipLock.unlock();
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
        return "TcpRendezvousServer[" + describe(boundAddress) + ", world size " + worldSize + (closed ? ", closed]" : "]");
    }

    private void acceptLoop() {
        try {
            while (!closed) {
                Socket socket;
                try {
                    socket = serverSocket.accept();
                } catch (IOException e) {
                    if (!closed) {
                        LOG.log(System.Logger.Level.WARNING, "rendezvous server on " + describe(boundAddress)
                                + " stopped accepting connections: " + e.getMessage(), e);
                    }
                    return;
                }
                Connection connection = new Connection(socket);
                connections.add(connection);
                if (closed) {
                    connections.remove(connection);
                    closeQuietly(socket);
                    return;
                }
                Thread handler = Thread.ofVirtual()
                        .name("ar4j-rendezvous-conn-" + socket.getRemoteSocketAddress())
                        .unstarted(() -> serve(connection));
                threads.add(handler);
                handler.start();
            }
        } finally {
            threads.remove(Thread.currentThread());
        }
    }

    /** One client connection: its socket and, after HELLO, its rank. */
    private static final class Connection {
        final Socket socket;
        int rank = -1;

        Connection(Socket socket) {
            this.socket = socket;
        }

        String peer() {
            return String.valueOf(socket.getRemoteSocketAddress());
        }
    }

    private void serve(Connection connection) {
        Socket socket = connection.socket;
        try {
            socket.setTcpNoDelay(true);
            DataInputStream in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
            OutputStream out = new BufferedOutputStream(socket.getOutputStream());
            while (!closed) {
                try {
                    Frame request = RendezvousProtocol.readFrame(in, RendezvousProtocol.MAX_REQUEST_PAYLOAD);
                    if (request == null || !handle(connection, request, out)) {
                        return;
                    }
                } catch (ProtocolViolation violation) {
                    LOG.log(System.Logger.Level.WARNING, "rendezvous server on " + describe(boundAddress)
                            + " closes the connection from " + connection.peer() + ": " + violation.getMessage());
                    RendezvousProtocol.writeFrame(out, RendezvousProtocol.ERROR,
                            RendezvousProtocol.error(violation.getMessage()));
                    return;
                }
            }
        } catch (IOException e) {
            if (!closed) {
                LOG.log(System.Logger.Level.DEBUG, () -> "rendezvous connection from " + connection.peer()
                        + " ended: " + e);
            }
        } finally {
            // Release the rank before closing, so a client that sees the connection end can rejoin at once.
            leave(connection);
            closeQuietly(socket);
            threads.remove(Thread.currentThread());
        }
    }

    /**
     * Answers one request.
     *
     * @return false if the connection is to be closed
     * @throws ProtocolViolation for a request that breaks the protocol; the caller answers ERROR and closes
     */
    private boolean handle(Connection connection, Frame request, OutputStream out) throws IOException {
        if (connection.rank < 0 && request.type() != RendezvousProtocol.HELLO) {
            throw new ProtocolViolation("the first request of a connection must be HELLO, got "
                    + RendezvousProtocol.typeName(request.type()));
        }
        switch (request.type()) {
            case RendezvousProtocol.HELLO -> {
                if (connection.rank >= 0) {
                    throw new ProtocolViolation("HELLO sent twice on one connection (rank " + connection.rank + ")");
                }
                join(connection, RendezvousProtocol.parseHello(request.payload()));
                RendezvousProtocol.writeFrame(out, RendezvousProtocol.OK, new byte[0]);
                return true;
            }
            case RendezvousProtocol.SET -> {
                SetRequest set = RendezvousProtocol.parseSet(request.payload());
                try {
                    store.set(set.key(), set.value());
                } catch (IllegalStateException storeClosed) {
                    return false;
                }
                RendezvousProtocol.writeFrame(out, RendezvousProtocol.OK, new byte[0]);
                return true;
            }
            case RendezvousProtocol.GET -> {
                return answerGet(RendezvousProtocol.parseGet(request.payload()), out);
            }
            default -> throw new ProtocolViolation("unexpected frame type " + RendezvousProtocol.typeName(request.type())
                    + "; requests are HELLO, SET and GET");
        }
    }

    private boolean answerGet(GetRequest get, OutputStream out) throws IOException {
        AwaitResult result;
        try {
            result = store.await(get.keys(), TimeUnit.MILLISECONDS.toNanos(get.timeoutMillis()));
        } catch (InterruptedException | IllegalStateException shuttingDown) {
            return false;
        }
        switch (result) {
            case Found(byte[][] values) -> {
                long total = 4;
                for (byte[] value : values) {
                    total += 4 + value.length;
                }
                if (total > RendezvousProtocol.MAX_REPLY_PAYLOAD) {
                    RendezvousProtocol.writeFrame(out, RendezvousProtocol.ERROR, RendezvousProtocol.error(
                            "the " + values.length + " values asked for total " + total + " bytes, more than the "
                                    + RendezvousProtocol.MAX_REPLY_PAYLOAD + " bytes one reply may carry"));
                } else {
                    RendezvousProtocol.writeFrame(out, RendezvousProtocol.OK, RendezvousProtocol.values(values));
                }
            }
            case Missing(int[] indices) ->
                    RendezvousProtocol.writeFrame(out, RendezvousProtocol.TIMEOUT, RendezvousProtocol.missing(indices));
        }
        return true;
    }

    private void join(Connection connection, HelloRequest hello) throws ProtocolViolation {
        if (hello.worldSize() != worldSize) {
            throw new ProtocolViolation("rank " + hello.rank() + " says world size " + hello.worldSize()
                    + ", server expects " + worldSize + "; every rank must be launched with the same world size");
        }
        if (hello.rank() < 0 || hello.rank() >= worldSize) {
            throw new ProtocolViolation("rank " + hello.rank() + " is out of range for world size " + worldSize
                    + "; ranks are 0.." + (worldSize - 1));
        }
        membershipLock.lock();
        try {
            // A rank that reconnects right after closing may arrive before its old connection's end is seen.
            long grace = DUPLICATE_RANK_GRACE.toNanos();
            while (connectedRanks.containsKey(hello.rank()) && grace > 0 && !closed) {
                grace = membershipChanged.awaitNanos(grace);
            }
            Connection holder = connectedRanks.get(hello.rank());
            if (holder != null) {
                throw new ProtocolViolation("rank " + hello.rank() + " is already connected from " + holder.peer()
                        + "; two processes claim rank " + hello.rank() + " (check RANK / the launcher's rank variables)");
            }
            connection.rank = hello.rank();
            connectedRanks.put(hello.rank(), connection);
            joinedRanks.set(hello.rank());
            membershipChanged.signalAll();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ProtocolViolation("the server was interrupted while admitting rank " + hello.rank());
        } finally {
            membershipLock.unlock();
        }
        LOG.log(System.Logger.Level.DEBUG, () -> "rank " + hello.rank() + " joined from " + connection.peer());
    }

    private void leave(Connection connection) {
        connections.remove(connection);
        if (connection.rank < 0) {
            return;
        }
        membershipLock.lock();
        try {
            connectedRanks.remove(connection.rank, connection);
            membershipChanged.signalAll();
        } finally {
            membershipLock.unlock();
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
