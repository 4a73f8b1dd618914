package dev.ar4j.internal.rendezvous;

import dev.ar4j.PeerLostException;
import dev.ar4j.rendezvous.RendezvousException;
import dev.ar4j.rendezvous.RendezvousAuthenticationException;
import dev.ar4j.rendezvous.RendezvousRefusedException;
import dev.ar4j.rendezvous.RendezvousSettings;
import dev.ar4j.internal.platform.Durations;

import dev.ar4j.internal.rendezvous.RendezvousProtocol.Frame;
import dev.ar4j.internal.rendezvous.RendezvousProtocol.ProtocolViolation;
import dev.ar4j.internal.rendezvous.RendezvousProtocol.Refusal;

import java.io.IOException;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A rank's end of its rendezvous connection after the handshake: one request at a time, its reply
 * read by a reader thread that also takes the server's heartbeats and peer-loss notices; a
 * heartbeat thread keeps the server told this rank is alive. When the server goes silent for the
 * heartbeat timeout or the connection ends, the waiting request fails at once with a
 * {@link PeerLostException} and the listeners are told (rank -1). Nothing the server sends can make
 * an {@link Error} escape: replies are bounded by what the request can legitimately return.
 */
final class ClientConnection {
    private static final System.Logger LOG = System.getLogger(ClientConnection.class.getName());
    private static final byte[] EMPTY = new byte[0];
    /** Marks the end of the connection in the reply queue. */
    private static final Frame ENDED = new Frame((byte) 0, EMPTY);

    private final int rank;
    private final String serverDescription;
    private final SecureChannel channel;
    private final RendezvousSettings settings;
    private final PeerLossListeners listeners;
    /** The group's heartbeat timeout ({@link RendezvousSettings#heartbeatTimeout(int)}). */
    private final Duration heartbeatTimeout;
    private final BlockingQueue<Frame> replies = new ArrayBlockingQueue<>(2);
    private volatile int replyLimit = RendezvousProtocol.MAX_MESSAGE_PAYLOAD;
    private volatile String brokenBecause;
    private volatile boolean closing;
    private final Thread reader;
    private final Thread heartbeat;

    ClientConnection(int rank, int worldSize, String serverDescription, SecureChannel channel,
                     RendezvousSettings settings, PeerLossListeners listeners) throws IOException {
        this.rank = rank;
        this.heartbeatTimeout = settings.heartbeatTimeout(worldSize);
        this.serverDescription = serverDescription;
        this.channel = channel;
        this.settings = settings;
        this.listeners = listeners;
        channel.socket().setSoTimeout((int) Math.min(Integer.MAX_VALUE, Durations.toMillis(heartbeatTimeout)));
        this.reader = Thread.ofPlatform().daemon().name("ar4j-rendezvous-reader-rank-" + rank).unstarted(this::readLoop);
        this.heartbeat = Thread.ofPlatform().daemon().name("ar4j-rendezvous-heartbeat-rank-" + rank)
                .unstarted(this::sendHeartbeats);
        reader.start();
        heartbeat.start();
    }

    /**
     * Sends one request and returns its reply (OK or TIMEOUT); an ERROR becomes the matching
     * {@link RendezvousException}.
     *
     * @param maxReply the largest reply body this request can legitimately get
     */
    Frame exchange(byte type, byte[] payload, int maxReply, Duration replyTimeout, String operation) {
        String broken = brokenBecause;
        if (broken != null) {
            throw failure("rank " + rank + " cannot run " + operation + ": its connection to the rendezvous server at "
                    + serverDescription + " is gone (" + broken + ")", null);
        }
        replyLimit = Math.max(maxReply, RendezvousProtocol.MAX_MESSAGE_PAYLOAD);
        Frame reply;
        try {
            channel.send(type, payload);
            reply = replies.poll(Durations.toNanos(replyTimeout), TimeUnit.NANOSECONDS);
        } catch (IOException e) {
            markBroken(String.valueOf(e.getMessage()));
            throw failure("rank " + rank + " lost its connection to the rendezvous server at " + serverDescription
                    + " during " + operation + ": " + e.getMessage() + " (did the serving rank exit or crash?)", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            // The server still answers the request later: this connection is out of step with it.
            markBroken("rank " + rank + " was interrupted while waiting in " + operation + ", so the connection is out"
                    + " of step with the server; close the rendezvous");
            throw new RendezvousException("rank " + rank + " was interrupted while waiting in " + operation
                    + "; its rendezvous cannot be used any more: close it", e);
        } finally {
            replyLimit = RendezvousProtocol.MAX_MESSAGE_PAYLOAD;
        }
        if (reply == null) {
            markBroken("no reply within " + Durations.format(replyTimeout));
            throw new RendezvousException("rank " + rank + ": the rendezvous server at " + serverDescription
                    + " did not answer " + operation + " within " + Durations.format(replyTimeout));
        }
        if (reply == ENDED) {
            throw failure("rank " + rank + " lost the rendezvous server at " + serverDescription + " during "
                    + operation + ": " + brokenBecause, null);
        }
        if (reply.type() == RendezvousProtocol.ERROR) {
            Refusal refusal = RendezvousProtocol.parseError(reply.payload());
            String message = "the rendezvous server at " + serverDescription + " refused " + operation + " from rank "
                    + rank + ": " + refusal.message();
            throw switch (refusal.code()) {
                case RendezvousProtocol.CODE_RANK_LOST -> new PeerLostException(message, refusal.rank(), null);
                case RendezvousProtocol.CODE_AUTH -> new RendezvousAuthenticationException(message);
                case RendezvousProtocol.CODE_QUOTA -> new dev.ar4j.rendezvous.RendezvousQuotaExceededException(message);
                default -> new RendezvousRefusedException(message);
            };
        }
        return reply;
    }

    /**
     * Sends ABORT for {@code scope} (empty: the whole rank) on a thread of its own: never blocks the
     * caller, also while a request of this rank waits for its reply (the server then ends that wait).
     * A connection already gone sends nothing: the server has seen the rank leave.
     */
    void sendAbort(String scope, String reason) {
        if (brokenBecause != null || closing) {
            return;
        }
        byte[] payload = RendezvousProtocol.abort(scope, reason);
        Thread.ofVirtual().name("ar4j-rendezvous-abort-rank-" + rank).start(() -> {
            try {
                channel.send(RendezvousProtocol.ABORT, payload);
            } catch (IOException | RuntimeException e) {
                LOG.log(System.Logger.Level.DEBUG, () -> "rank " + rank + " could not send its ABORT: " + e);
            }
        });
    }

    /** Marks the connection broken after a reply that does not fit its request. */
    void markBroken(String reason) {
        if (brokenBecause == null) {
            brokenBecause = reason;
        }
    }

    /** Says goodbye (so the server does not report this rank lost) and closes. */
    void close() {
        closing = true;
        if (brokenBecause == null) {
            try {
                channel.send(RendezvousProtocol.BYE, EMPTY);
            } catch (IOException e) {
                LOG.log(System.Logger.Level.DEBUG, () -> "rank " + rank + " could not say goodbye: " + e);
            }
        }
        channel.close();
        heartbeat.interrupt();
        try {
            reader.join(1_000);
            heartbeat.join(1_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private PeerLostException failure(String message, Throwable cause) {
        return new PeerLostException(message, -1, cause);
    }

    private void readLoop() {
        String reason;
        try {
            while (true) {
                Frame frame = channel.receive(() -> replyLimit);
                if (frame == null) {
                    reason = "the server closed the connection (did the serving rank exit or crash?)";
                    break;
                }
                switch (frame.type()) {
                    case RendezvousProtocol.HEARTBEAT -> {
                    }
                    case RendezvousProtocol.PEER_LOST -> {
                        Refusal notice = RendezvousProtocol.parseError(frame.payload());
                        listeners.report(notice.rank(), notice.message());
                    }
                    case RendezvousProtocol.OK, RendezvousProtocol.TIMEOUT, RendezvousProtocol.ERROR -> {
                        if (!replies.offer(frame)) {
                            throw new ProtocolViolation("the server sent a reply nobody asked for ("
                                    + RendezvousProtocol.typeName(frame.type()) + ")");
                        }
                    }
                    default -> throw new ProtocolViolation("the server sent an unexpected "
                            + RendezvousProtocol.typeName(frame.type()) + " frame");
                }
            }
        } catch (SocketTimeoutException e) {
            reason = "nothing heard from the server for " + Durations.format(heartbeatTimeout)
                    + " (heartbeat timeout; is the serving process stopped or hung?)";
        } catch (IOException e) {
            reason = "the connection broke: " + e.getMessage();
        } catch (RuntimeException | OutOfMemoryError e) {
            reason = "reading the server's reply failed: " + e;
        }
        boolean unexpected = !closing;
        markBroken(reason);
        channel.close();
        replies.offer(ENDED);
        if (unexpected) {
            listeners.report(-1, "rank " + rank + " lost the rendezvous server at " + serverDescription + ": " + reason);
        }
    }

    private void sendHeartbeats() {
        long intervalMillis = Durations.toMillis(settings.heartbeatInterval());
        try {
            while (!closing && brokenBecause == null) {
                Thread.sleep(intervalMillis);
                channel.trySend(RendezvousProtocol.HEARTBEAT, EMPTY);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (IOException e) {
            LOG.log(System.Logger.Level.DEBUG, () -> "rank " + rank + "'s heartbeat stopped: " + e);
        }
    }

    Socket socket() {
        return channel.socket();
    }
}
