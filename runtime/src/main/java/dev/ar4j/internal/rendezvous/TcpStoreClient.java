package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.RendezvousException;
import dev.ar4j.internal.platform.Durations;

import dev.ar4j.internal.rendezvous.BlockingKeyValueStore.AwaitResult;
import dev.ar4j.internal.rendezvous.BlockingKeyValueStore.Found;
import dev.ar4j.internal.rendezvous.BlockingKeyValueStore.Missing;
import dev.ar4j.internal.rendezvous.RendezvousProtocol.Frame;
import dev.ar4j.internal.rendezvous.RendezvousProtocol.ProtocolViolation;

import java.time.Duration;
import java.util.List;

/**
 * One rank's store requests over its {@link ClientConnection}: SET and GET, each reply checked
 * against its request; a reply that does not fit breaks the connection.
 */
final class TcpStoreClient {

    /** Time a reply may take on top of the wait the request asked for. */
    private static final Duration REPLY_GRACE = Duration.ofSeconds(10);

    private final int rank;
    private final String serverDescription;
    private final ClientConnection connection;

    TcpStoreClient(int rank, String serverDescription, ClientConnection connection) {
        this.rank = rank;
        this.serverDescription = serverDescription;
        this.connection = connection;
    }

    void set(String storeKey, byte[] value) {
        Frame reply = connection.exchange(RendezvousProtocol.SET, RendezvousProtocol.set(storeKey, value), 0,
                REPLY_GRACE, "set of '" + storeKey + "'");
        if (reply.type() != RendezvousProtocol.OK || reply.payload().length != 0) {
            throw unexpectedReply(reply, "SET");
        }
    }

    AwaitResult await(List<String> storeKeys, Duration timeout, String operation) {
        long timeoutMillis = Math.max(1, Durations.toMillis(timeout));
        long maxReply = 4L + (long) storeKeys.size() * (4L + RendezvousProtocol.MAX_VALUE_BYTES);
        Frame reply = connection.exchange(RendezvousProtocol.GET, RendezvousProtocol.get(timeoutMillis, storeKeys),
                (int) Math.min(maxReply, RendezvousProtocol.MAX_REPLY_PAYLOAD), timeout.plus(REPLY_GRACE), operation);
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
            connection.markBroken(violation.getMessage());
            throw new RendezvousException("rank " + rank + " got a malformed reply from the rendezvous server at "
                    + serverDescription + " during " + operation + ": " + violation.getMessage());
        }
    }

    /** ABORT for {@code scope} (empty: the whole rank); never blocks ({@link ClientConnection#sendAbort}). */
    void abort(String scope, String reason) {
        connection.sendAbort(scope, reason);
    }

    /** Closes the connection (see {@link ClientConnection#close()}). */
    void close() {
        connection.close();
    }

    private RendezvousException unexpectedReply(Frame reply, String request) {
        connection.markBroken("unexpected " + RendezvousProtocol.typeName(reply.type()) + " reply to " + request);
        return new RendezvousException("rank " + rank + ": the rendezvous server at " + serverDescription
                + " answered " + request + " with " + RendezvousProtocol.typeName(reply.type()));
    }
}
