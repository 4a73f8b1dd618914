package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.*;

import dev.ar4j.internal.rendezvous.RendezvousProtocol.Frame;
import dev.ar4j.internal.rendezvous.RendezvousProtocol.Refusal;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;

/**
 * A hand-driven rendezvous client for tests that speak the wire protocol directly: raw bytes, a
 * handshake with any rank, world size, incarnation and token, then sealed frames of any content.
 */
final class WireClient implements AutoCloseable {
    final Socket socket;
    final SecureChannel channel;
    private final OutputStream raw;

    private WireClient(Socket socket) throws IOException {
        this.socket = socket;
        this.channel = new SecureChannel(socket, true);
        this.raw = socket.getOutputStream();
        socket.setSoTimeout(10_000);
        socket.setTcpNoDelay(true); // frames without a reply (heartbeats) must not hold back the next one
    }

    static WireClient open(TcpRendezvousServer server) throws IOException {
        return new WireClient(new Socket(server.address().getAddress(), server.port()));
    }

    /** Opens a connection and authenticates as {@code rank}; the returned client's session is established. */
    static WireClient joined(TcpRendezvousServer server, int rank, JobToken token) throws IOException {
        WireClient client = open(server);
        Frame reply = client.handshake(rank, server.worldSize(), RendezvousAuth.incarnation(), token);
        if (reply.type() != RendezvousProtocol.WELCOME) {
            client.close();
            throw new AssertionError("rank " + rank + " was not admitted: " + describe(reply));
        }
        return client;
    }

    /** Runs the handshake; returns WELCOME (session established) or the server's ERROR. */
    Frame handshake(int rank, int worldSize, long incarnation, JobToken token) throws IOException {
        byte[] hello = RendezvousProtocol.hello(rank, worldSize, incarnation, RendezvousAuth.nonce());
        channel.send(RendezvousProtocol.HELLO, hello);
        Frame challenge = channel.receive(RendezvousProtocol.MAX_MESSAGE_PAYLOAD);
        if (challenge == null || challenge.type() != RendezvousProtocol.CHALLENGE) {
            return challenge;
        }
        channel.send(RendezvousProtocol.AUTH, RendezvousAuth.clientProof(token.key(), hello, challenge.payload()));
        Frame reply = channel.receive(RendezvousProtocol.MAX_MESSAGE_PAYLOAD);
        if (reply != null && reply.type() == RendezvousProtocol.WELCOME) {
            channel.establish(RendezvousAuth.sessionKey(token.key(), hello, challenge.payload()));
        }
        return reply;
    }

    void sendRaw(byte[] bytes) throws IOException {
        raw.write(bytes);
        raw.flush();
    }

    void send(byte type, byte[] body) throws IOException {
        channel.send(type, body);
    }

    /** The next frame that is not a heartbeat or peer-loss notice; null when the server closed the connection. */
    Frame receive() throws IOException {
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
        while (true) {
            if (System.nanoTime() > deadline) {
                throw new SocketTimeoutException("no reply other than heartbeats within 10 s");
            }
            Frame frame = channel.receive(RendezvousProtocol.MAX_REPLY_PAYLOAD);
            if (frame == null || (frame.type() != RendezvousProtocol.HEARTBEAT && frame.type() != RendezvousProtocol.PEER_LOST)) {
                return frame;
            }
        }
    }

    /** Reads until the server closes the connection; true if it did within the socket timeout. */
    boolean closedByServer() throws IOException {
        InputStream in = socket.getInputStream();
        byte[] sink = new byte[4096];
        try {
            while (in.read(sink) >= 0) {
                // drain heartbeats and the like
            }
            return true;
        } catch (SocketTimeoutException e) {
            return false;
        } catch (IOException reset) {
            return true;
        }
    }

    static Refusal refusal(Frame frame) {
        if (frame == null) {
            throw new AssertionError("the server closed the connection without an answer");
        }
        if (frame.type() != RendezvousProtocol.ERROR) {
            throw new AssertionError("expected ERROR, got " + RendezvousProtocol.typeName(frame.type()));
        }
        return RendezvousProtocol.parseError(frame.payload());
    }

    static String describe(Frame frame) {
        if (frame == null) {
            return "(connection closed)";
        }
        return frame.type() == RendezvousProtocol.ERROR ? "ERROR " + RendezvousProtocol.parseError(frame.payload()).message()
                : RendezvousProtocol.typeName(frame.type());
    }

    static byte[] frame(int magic, int version, int type, int declaredLength, byte[] payload) {
        return ByteBuffer.allocate(RendezvousProtocol.HEADER_BYTES + payload.length)
                .putInt(magic).put((byte) version).put((byte) type).putInt(declaredLength).put(payload).array();
    }

    static byte[] frame(int type, byte[] payload) {
        return frame(RendezvousProtocol.MAGIC, RendezvousProtocol.VERSION, type, payload.length, payload);
    }

    @Override
    public void close() {
        channel.close();
    }
}
