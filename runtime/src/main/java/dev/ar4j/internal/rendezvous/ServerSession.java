package dev.ar4j.internal.rendezvous;
import dev.ar4j.rendezvous.RendezvousRefusedException;

import dev.ar4j.PeerLostException;
import dev.ar4j.rendezvous.RendezvousException;
import dev.ar4j.rendezvous.RendezvousSettings;
import dev.ar4j.internal.platform.Durations;

import dev.ar4j.internal.rendezvous.BlockingKeyValueStore.AwaitResult;
import dev.ar4j.internal.rendezvous.BlockingKeyValueStore.Found;
import dev.ar4j.internal.rendezvous.BlockingKeyValueStore.Missing;
import dev.ar4j.internal.rendezvous.RendezvousProtocol.Frame;
import dev.ar4j.internal.rendezvous.RendezvousProtocol.GetRequest;
import dev.ar4j.internal.rendezvous.RendezvousProtocol.HelloRequest;
import dev.ar4j.internal.rendezvous.RendezvousProtocol.ProtocolViolation;

import java.io.IOException;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The server's end of one connection: the authenticated handshake, then a read loop that answers
 * SETs, runs each GET on a pool thread (so heartbeats and the connection's end are still seen
 * while it waits), and has heartbeats sent on the ticker's cadence. Every one of those threads is a
 * platform thread of {@link ServerThreads}. A connection silent for the heartbeat timeout, or one
 * that ends without BYE, makes its rank lost.
 */
final class ServerSession {
    private static final System.Logger LOG = System.getLogger(ServerSession.class.getName());
    private static final byte[] EMPTY = new byte[0];
    /** Encoded in advance: answering it allocates nothing the size of anything. */
    private static final byte[] OUT_OF_MEMORY = RendezvousProtocol.error(RendezvousProtocol.CODE_REFUSED, -1,
            "the rendezvous server ran out of memory (OutOfMemoryError) serving this request; raise the serving"
                    + " JVM's -Xmx, or lower ar4j.rdzv.maxServerBytes / AR4J_RDZV_MAX_SERVER_BYTES below it");

    private final TcpRendezvousServer server;
    private final ServerThreads threads;
    private final GroupState group;
    private final RendezvousSettings settings;
    /** The keys a rank may prove it knows ({@link JobToken#acceptedKeys()}). */
    private final java.util.List<byte[]> tokenKeys;
    private final Socket socket;
    private final String peer;
    private final SecureChannel channel;
    /** The admitted rank, or -1 before admission; written by {@link GroupState#admit}. */
    volatile int rank = -1;
    private volatile boolean ended;
    private volatile boolean established;
    private volatile boolean getPending;
    private boolean byeReceived;
    private volatile ScheduledFuture<?> handshakeDeadline;
    private volatile ScheduledFuture<?> heartbeats;
    /** A heartbeat handed to the pool and not yet written: the next tick sends none. */
    private final AtomicBoolean heartbeatInFlight = new AtomicBoolean();
    private volatile boolean evicted;

    ServerSession(TcpRendezvousServer server, GroupState group, RendezvousSettings settings,
                  java.util.List<byte[]> tokenKeys, Socket socket, ServerMemoryBudget budget, ServerThreads threads)
            throws IOException {
        this.server = server;
        this.threads = threads;
        this.group = group;
        this.settings = settings;
        this.tokenKeys = tokenKeys;
        this.socket = socket;
        this.peer = String.valueOf(socket.getRemoteSocketAddress());
        this.channel = new SecureChannel(socket, false, budget);
    }

    String peer() {
        return peer;
    }

    boolean isEnded() {
        return ended;
    }

    boolean isEstablished() {
        return established;
    }

    /** Runs the connection to its end; never throws. */
    void run() {
        String lossReason = null;
        try {
            socket.setTcpNoDelay(true);
            ScheduledFuture<?> deadline = threads.schedule(this::enforceHandshakeDeadline, settings.handshakeTimeout());
            handshakeDeadline = deadline;
            socket.setSoTimeout((int) Durations.toMillis(settings.handshakeTimeout()));
            if (!handshake()) {
                return;
            }
            established = true;
            deadline.cancel(false);
            socket.setSoTimeout((int) Math.min(Integer.MAX_VALUE,
                    Durations.toMillis(settings.heartbeatTimeout(group.worldSize()))));
            heartbeats = threads.every(this::heartbeatDue, settings.heartbeatInterval());
            lossReason = readLoop();
        } catch (SocketTimeoutException e) {
            lossReason = rank < 0 ? null : "rank " + rank + "'s heartbeat stopped: nothing heard from it for "
                    + Durations.format(settings.heartbeatTimeout(group.worldSize()))
                    + " (heartbeat timeout; is the process stopped or hung?)";
        } catch (ProtocolViolation violation) {
            server.warn("rendezvous server closes the connection from " + peer
                    + (rank >= 0 ? " (rank " + rank + ")" : "") + ": " + violation.getMessage());
            sendQuietly(RendezvousProtocol.ERROR, RendezvousProtocol.error(RendezvousProtocol.CODE_PROTOCOL, rank,
                    violation.getMessage()));
            lossReason = "rank " + rank + " disconnected after a malformed frame: " + violation.getMessage();
        } catch (Throwable e) {
            lossReason = "rank " + rank + " disconnected (" + describe(e) + ")";
            debug(e);
        } finally {
            end(lossReason);
        }
    }

    /** The end of the connection, each step on its own so that one failing does not skip the rest. */
    private void end(String lossReason) {
        ended = true;
        cancel(handshakeDeadline);
        cancel(heartbeats);
        try {
            group.left(this, byeReceived ? null : lossReason);
        } catch (Throwable failure) {
            server.warn("rendezvous server could not record the end of rank " + rank + "'s connection: " + failure);
        }
        channel.close();
        server.sessionEnded(this);
    }

    private static void cancel(ScheduledFuture<?> task) {
        try {
            if (task != null) {
                task.cancel(false);
            }
        } catch (Throwable ignored) {
            // a task left scheduled finds the session ended and does nothing
        }
    }

    private void debug(Throwable e) {
        try {
            if (!server.isClosed() && !evicted) {
                FailSafeLog.log(LOG, System.Logger.Level.DEBUG, () -> "rendezvous connection from " + peer + " ended: " + e);
            }
        } catch (Throwable ignored) {
            // logging is best effort on this path
        }
    }

    private static String describe(Throwable e) {
        return e instanceof IOException || e instanceof RuntimeException ? String.valueOf(e.getMessage()) : e.toString();
    }

    /** Evicted from the full handshake queue: tells the client the server is busy (if it can), and closes. */
    void evictBusy(int queueCapacity) {
        evicted = true;
        try {
            channel.trySend(RendezvousProtocol.ERROR, RendezvousProtocol.error(RendezvousProtocol.CODE_BUSY, -1,
                    "the server is busy: its " + queueCapacity + " handshake slots (ar4j.rdzv.maxPendingConnections)"
                            + " are taken and this connection had waited longest"));
        } catch (Throwable ignored) {
            // the client sees the connection close and retries all the same
        } finally {
            closeSocket();
        }
    }

    private boolean handshake() throws IOException {
        Frame hello = receive(RendezvousProtocol.MAX_HANDSHAKE_PAYLOAD);
        if (hello == null) {
            return false;
        }
        if (hello.type() != RendezvousProtocol.HELLO) {
            throw new ProtocolViolation("the first frame of a connection must be HELLO, got "
                    + RendezvousProtocol.typeName(hello.type()));
        }
        HelloRequest request = RendezvousProtocol.parseHello(hello.payload());
        byte[] serverNonce = RendezvousAuth.nonce();
        channel.send(RendezvousProtocol.CHALLENGE, serverNonce);
        Frame auth = receive(RendezvousProtocol.MAX_HANDSHAKE_PAYLOAD);
        if (auth == null) {
            return false;
        }
        if (auth.type() != RendezvousProtocol.AUTH || auth.payload().length != RendezvousProtocol.MAC_BYTES) {
            throw new ProtocolViolation("expected AUTH with a " + RendezvousProtocol.MAC_BYTES + "-byte proof after"
                    + " CHALLENGE, got " + RendezvousProtocol.typeName(auth.type()) + " of " + auth.payload().length + " bytes");
        }
        byte[] tokenKey = null;
        for (byte[] candidate : tokenKeys) {
            if (RendezvousAuth.matches(RendezvousAuth.clientProof(candidate, hello.payload(), serverNonce), auth.payload())) {
                tokenKey = candidate;
            }
        }
        if (tokenKey == null) {
            String message = "another job's rank (token mismatch): the connection from " + peer + " does not know this"
                    + " job's rendezvous token" + (tokenKeys.size() > 1 ? " (this job has none: its key is derived from the"
                    + " launcher process that started its ranks, and this rank was started by another launcher, so"
                    + " it belongs to another job, or it was started through a wrapper that did not exec the JVM)" : "")
                    + "; " + JobToken.howToSet();
            server.warn("rendezvous server refused " + message);
            channel.send(RendezvousProtocol.ERROR, RendezvousProtocol.error(RendezvousProtocol.CODE_AUTH, -1, message));
            return false;
        }
        if (!server.sessionAuthenticated(this)) {
            return false; // evicted a moment ago: it is being told the server is busy
        }
        try {
            group.admit(this, request);
        } catch (GroupState.Refusal refusal) {
            server.warn("rendezvous server refused the connection from " + peer + ": " + refusal.getMessage());
            channel.send(RendezvousProtocol.ERROR, RendezvousProtocol.error(refusal.code, refusal.rank, refusal.getMessage()));
            return false;
        }
        channel.send(RendezvousProtocol.WELCOME, RendezvousAuth.serverProof(tokenKey, hello.payload(), serverNonce));
        channel.establish(RendezvousAuth.sessionKey(tokenKey, hello.payload(), serverNonce));
        channel.chargeTo(rank);
        FailSafeLog.log(LOG, System.Logger.Level.DEBUG, () -> "rank " + rank + " joined from " + peer);
        return true;
    }

    /** @return the loss reason when the connection ends without BYE, or null */
    private String readLoop() throws IOException {
        while (!server.isClosed()) {
            Frame request;
            try {
                request = receive(RendezvousProtocol.MAX_REQUEST_PAYLOAD);
            } catch (SecureChannel.FrameNotAdmitted notAdmitted) {
                // Read and authenticated in full, not kept: the stream is intact, the rank may go on.
                server.warn("rendezvous server refused a " + RendezvousProtocol.typeName(notAdmitted.type) + " of rank "
                        + rank + ": " + notAdmitted.getMessage());
                channel.send(RendezvousProtocol.ERROR, RendezvousProtocol.error(notAdmitted.overBudget
                        ? RendezvousProtocol.CODE_QUOTA : RendezvousProtocol.CODE_REFUSED, rank, notAdmitted.getMessage()));
                continue;
            }
            if (request == null) {
                return "rank " + rank + " disconnected: its connection closed without a goodbye (the process exited,"
                        + " crashed or was killed)";
            }
            try {
                if (!serve(request)) {
                    return null;
                }
            } catch (OutOfMemoryError outOfMemory) {
                getPending = false;
                channel.send(RendezvousProtocol.ERROR, OUT_OF_MEMORY);
            }
        }
        return null;
    }

    /** Serves one request; false if the server's store closed under it. */
    private boolean serve(Frame request) throws IOException {
        switch (request.type()) {
            case RendezvousProtocol.HEARTBEAT -> {
            }
            case RendezvousProtocol.BYE -> byeReceived = true;
            case RendezvousProtocol.ABORT -> {
                // No reply, and allowed while a GET waits: the GET it may end answers for it.
                RendezvousProtocol.AbortRequest abort = RendezvousProtocol.parseAbort(request.payload());
                if (!group.abort(rank, abort.scope(), abort.reason())) {
                    server.warn("rendezvous server dropped an ABORT of rank " + rank + " for scope '"
                            + GroupState.shorten(abort.scope()) + "': the rank has aborted "
                            + AbortedScopes.MAX_SCOPES_PER_RANK + " scopes already, or the server's memory budget is"
                            + " exhausted; its waits in that scope end at their timeouts");
                }
            }
            case RendezvousProtocol.SET -> {
                requireNoPendingGet("SET");
                RendezvousProtocol.SetView set = RendezvousProtocol.parseSetView(request.payload());
                try {
                    // The copy of the value is charged to the rank's share before it is made; the frame is released after.
                    group.set(rank, set.key(), set.payload(), set.offset(), set.length());
                    channel.releaseFrame();
                    channel.send(RendezvousProtocol.OK, EMPTY);
                } catch (GroupState.Refusal refusal) {
                    server.warn("rendezvous server refused a SET of rank " + rank + ": " + refusal.getMessage());
                    channel.send(RendezvousProtocol.ERROR,
                            RendezvousProtocol.error(refusal.code, refusal.rank, refusal.getMessage()));
                } catch (IllegalStateException storeClosed) {
                    return false;
                }
            }
            case RendezvousProtocol.GET -> {
                requireNoPendingGet("GET");
                GetRequest get = RendezvousProtocol.parseGet(request.payload(), settings.maxKeysPerGet(group.worldSize()));
                getPending = true;
                try {
                    threads.execute(() -> answerGet(get));
                } catch (RejectedExecutionException closing) {
                    getPending = false;
                    return false; // the server is closing
                }
            }
            default -> throw new ProtocolViolation("unexpected frame type "
                    + RendezvousProtocol.typeName(request.type()) + "; requests are SET, GET, HEARTBEAT, BYE and ABORT");
        }
        return true;
    }

    /** Receives one frame, counting it (well-formed or not) for the server's statistics. */
    private Frame receive(int maxBody) throws IOException {
        Frame frame;
        try {
            frame = channel.receive(maxBody);
        } catch (ProtocolViolation violation) {
            server.frameRead();
            throw violation;
        }
        if (frame != null) {
            server.frameRead();
        }
        return frame;
    }

    private void requireNoPendingGet(String request) throws ProtocolViolation {
        if (getPending) {
            throw new ProtocolViolation(request + " sent while a GET of this connection is still waiting; a rank"
                    + " sends one request at a time");
        }
    }

    private void answerGet(GetRequest get) {
        long askedMillis = get.timeoutMillis();
        long waitMillis = Math.min(askedMillis, Durations.toMillis(settings.maxWait()));
        try {
            AwaitResult result = group.await(get.keys(), TimeUnit.MILLISECONDS.toNanos(waitMillis), this);
            getPending = false;
            switch (result) {
                case Found(byte[][] values) -> {
                    long total = RendezvousProtocol.valuesLength(values);
                    if (total > RendezvousProtocol.MAX_REPLY_PAYLOAD) {
                        channel.send(RendezvousProtocol.ERROR, RendezvousProtocol.error(RendezvousProtocol.CODE_REFUSED,
                                rank, "the " + values.length + " values asked for total " + total
                                        + " bytes, more than the " + RendezvousProtocol.MAX_REPLY_PAYLOAD
                                        + " bytes one reply may carry"));
                    } else {
                        // Streamed from the stored values: the reply costs no memory of its own.
                        channel.sendValues(RendezvousProtocol.OK, values, RendezvousProtocol.MAX_REPLY_PAYLOAD);
                    }
                }
                case Missing(int[] indices) -> channel.send(RendezvousProtocol.TIMEOUT, RendezvousProtocol.missing(indices));
            }
        } catch (PeerLostException lost) {
            getPending = false;
            sendQuietly(RendezvousProtocol.ERROR, RendezvousProtocol.error(RendezvousProtocol.CODE_RANK_LOST,
                    lost.peer(), lost.getMessage()));
        } catch (RendezvousRefusedException groupFailed) {
            getPending = false;
            sendQuietly(RendezvousProtocol.ERROR, RendezvousProtocol.error(RendezvousProtocol.CODE_REFUSED, rank,
                    groupFailed.getMessage()));
        } catch (InterruptedException | IOException | IllegalStateException | RendezvousException ended) {
            // The connection or the server (its store) ended; the read loop reports that.
            getPending = false;
            FailSafeLog.log(LOG, System.Logger.Level.DEBUG, () -> "GET of rank " + rank + " ended with its connection: " + ended);
            closeSocket();
        } catch (OutOfMemoryError outOfMemory) {
            getPending = false;
            sendQuietly(RendezvousProtocol.ERROR, OUT_OF_MEMORY);
        } catch (Throwable bug) {
            getPending = false;
            server.warn("rendezvous server failed answering a GET of rank " + rank + " (" + bug + "); closing its"
                    + " connection");
            closeSocket();
        }
    }

    /** Tells this session's rank that {@code lostRank} is lost; never blocks the caller. */
    void tellPeerLost(int lostRank, String reason) {
        if (!established || ended) {
            return;
        }
        try {
            threads.execute(() -> sendQuietly(RendezvousProtocol.PEER_LOST, RendezvousProtocol.peerLost(lostRank, reason)));
        } catch (Throwable failure) {
            // the rank's own waits still end with PeerLostException; only the early notice is lost
            server.warn("rendezvous server could not tell rank " + rank + " that rank " + lostRank + " is lost: " + failure);
        }
    }

    /**
     * On the ticker, each heartbeat interval: hands one heartbeat to the pool, unless the last one
     * is still being written (the peer does not read; its silence is the read loop's to report).
     */
    private void heartbeatDue() {
        if (ended || server.isClosed() || !heartbeatInFlight.compareAndSet(false, true)) {
            return;
        }
        try {
            threads.execute(this::sendHeartbeat);
        } catch (Throwable closing) {
            heartbeatInFlight.set(false);
        }
    }

    /** On a pool thread: one heartbeat, skipped if a reply is being written (that is traffic enough). */
    private void sendHeartbeat() {
        try {
            channel.trySend(RendezvousProtocol.HEARTBEAT, EMPTY);
        } catch (Throwable e) {
            closeSocket(); // the read loop sees the connection end and reports it
        } finally {
            heartbeatInFlight.set(false);
        }
    }

    /** On the ticker, the handshake timeout after the connection was accepted. */
    private void enforceHandshakeDeadline() {
        if (!established && !ended && rank < 0) {
            server.warn("rendezvous server closes the connection from " + peer + ": no authenticated handshake within "
                    + Durations.format(settings.handshakeTimeout()) + " (idle or slow client)");
            closeSocket();
        }
    }

    private void sendQuietly(byte type, byte[] body) {
        try {
            channel.send(type, body);
        } catch (Throwable e) {
            FailSafeLog.log(LOG, System.Logger.Level.DEBUG, () -> "could not send " + RendezvousProtocol.typeName(type) + " to "
                    + peer + ": " + e);
        }
    }

    void closeSocket() {
        try {
            socket.close();
        } catch (IOException e) {
            FailSafeLog.log(LOG, System.Logger.Level.DEBUG, () -> "ignored error while closing " + socket + ": " + e);
        }
    }
}
