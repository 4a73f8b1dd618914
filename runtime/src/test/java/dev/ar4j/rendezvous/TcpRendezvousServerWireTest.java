package dev.ar4j.rendezvous;

import dev.ar4j.rendezvous.RendezvousProtocol.Frame;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Malformed frames sent over a raw socket: the server answers ERROR naming what is wrong, closes
 * that connection, and keeps serving everyone else.
 */
@Timeout(value = 20, unit = TimeUnit.SECONDS)
class TcpRendezvousServerWireTest {

    private TcpRendezvousServer server;

    @BeforeEach
    void startServer() {
        server = TcpRendezvousServer.startOnLoopback(0, 2);
    }

    @AfterEach
    void stopServer() {
        server.close();
        assertTrue(server.awaitTermination(Duration.ofSeconds(2)), "server threads still running after close");
    }

    /** Sends {@code bytes} on a new connection and returns the ERROR message the server answers. */
    private String errorFor(byte[]... messages) throws IOException {
        try (Socket socket = new Socket(server.address().getAddress(), server.port())) {
            socket.setSoTimeout(5_000);
            OutputStream out = socket.getOutputStream();
            DataInputStream in = new DataInputStream(socket.getInputStream());
            Frame reply = null;
            for (byte[] message : messages) {
                out.write(message);
                out.flush();
                reply = RendezvousProtocol.readFrame(in, RendezvousProtocol.MAX_REPLY_PAYLOAD);
                if (reply != null && reply.type() == RendezvousProtocol.ERROR) {
                    break;
                }
            }
            assertTrue(reply != null, "the server closed the connection without an answer");
            assertEquals(RendezvousProtocol.ERROR, reply.type(), "reply type " + RendezvousProtocol.typeName(reply.type()));
            assertEquals(-1, in.read(), "the server closes the connection after a malformed frame");
            return RendezvousProtocol.parseError(reply.payload());
        }
    }

    private static byte[] frame(int magic, int version, int type, int declaredLength, byte[] payload) {
        return ByteBuffer.allocate(RendezvousProtocol.HEADER_BYTES + payload.length)
                .putInt(magic).put((byte) version).put((byte) type).putInt(declaredLength).put(payload).array();
    }

    private static byte[] frame(int type, byte[] payload) {
        return frame(RendezvousProtocol.MAGIC, RendezvousProtocol.VERSION, type, payload.length, payload);
    }

    private static byte[] hello(int rank, int worldSize) {
        return frame(RendezvousProtocol.HELLO, RendezvousProtocol.hello(rank, worldSize));
    }

    private static void assertContains(String text, String part) {
        assertTrue(text.contains(part), () -> "expected '" + part + "' in: " + text);
    }

    @Test
    void wrongMagicIsNamed() throws Exception {
        String error = errorFor("GET / HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
        assertContains(error, "not an ar4j rendezvous frame");
        assertContains(error, "\"GET \"");
        serverStillServes();
    }

    @Test
    void unsupportedVersionIsNamed() throws Exception {
        String error = errorFor(frame(RendezvousProtocol.MAGIC, 7, RendezvousProtocol.HELLO, 8, RendezvousProtocol.hello(0, 2)));
        assertContains(error, "unsupported rendezvous protocol version 7");
        serverStillServes();
    }

    @Test
    void oversizeFrameIsRejectedBeforeItsPayloadIsRead() throws Exception {
        String error = errorFor(hello(0, 2), frame(RendezvousProtocol.MAGIC, RendezvousProtocol.VERSION,
                RendezvousProtocol.SET, Integer.MAX_VALUE, new byte[0]));
        assertContains(error, "SET frame announces a payload of 2147483647 bytes, more than the maximum");
        error = errorFor(hello(0, 2), frame(RendezvousProtocol.MAGIC, RendezvousProtocol.VERSION,
                RendezvousProtocol.SET, -5, new byte[0]));
        assertContains(error, "announces a payload of 4294967291 bytes");
        serverStillServes();
    }

    @Test
    void oversizeKeyAndValueLengthsInsideAFrameAreNamed() throws Exception {
        byte[] longKey = ByteBuffer.allocate(8).putInt(RendezvousProtocol.MAX_KEY_BYTES + 1).putInt(0).array();
        assertContains(errorFor(hello(0, 2), frame(RendezvousProtocol.SET, longKey)),
                "key of " + (RendezvousProtocol.MAX_KEY_BYTES + 1) + " bytes exceeds the maximum of "
                        + RendezvousProtocol.MAX_KEY_BYTES);
        byte[] hugeValue = ByteBuffer.allocate(9).putInt(1).put((byte) 'k').putInt(RendezvousProtocol.MAX_VALUE_BYTES + 1).array();
        assertContains(errorFor(hello(0, 2), frame(RendezvousProtocol.SET, hugeValue)),
                "value of " + (RendezvousProtocol.MAX_VALUE_BYTES + 1) + " bytes exceeds the maximum");
        byte[] truncated = ByteBuffer.allocate(6).putInt(10).put((byte) 'a').put((byte) 'b').array();
        assertContains(errorFor(hello(0, 2), frame(RendezvousProtocol.SET, truncated)), "SET payload is truncated");
        byte[] manyKeys = ByteBuffer.allocate(12).putLong(10).putInt(1_000_000).array();
        assertContains(errorFor(hello(0, 2), frame(RendezvousProtocol.GET, manyKeys)), "key count 1000000 does not fit");
        byte[] badUtf8 = ByteBuffer.allocate(10).putInt(2).put((byte) 0xc3).put((byte) 0x28).putInt(0).array();
        assertContains(errorFor(hello(0, 2), frame(RendezvousProtocol.SET, badUtf8)), "key is not valid UTF-8");
        serverStillServes();
    }

    @Test
    void requestsOutOfOrderOrUnknownAreNamed() throws Exception {
        assertContains(errorFor(frame(RendezvousProtocol.SET, RendezvousProtocol.set("k", new byte[0]))),
                "the first request of a connection must be HELLO, got SET");
        assertContains(errorFor(hello(0, 2), hello(0, 2)), "HELLO sent twice");
        assertContains(errorFor(hello(0, 2), frame(0x7f, new byte[0])), "unexpected frame type unknown type 0x7f");
        assertContains(errorFor(hello(5, 2)), "rank 5 is out of range for world size 2");
        assertContains(errorFor(frame(RendezvousProtocol.HELLO, new byte[3])), "HELLO payload is truncated");
        assertContains(errorFor(frame(RendezvousProtocol.HELLO, new byte[9])), "unexpected trailing bytes");
        serverStillServes();
    }

    @Test
    void connectionThatDiesMidFrameDoesNotHurtTheServer() throws Exception {
        try (Socket socket = new Socket(server.address().getAddress(), server.port())) {
            socket.getOutputStream().write(new byte[] {0x41, 0x52});
            socket.getOutputStream().flush();
        }
        serverStillServes();
    }

    /** Two well-behaved clients still complete a collective on the same server. */
    private void serverStillServes() throws Exception {
        try (TcpRendezvous rank0 = TcpRendezvous.builder().rank(0).worldSize(2).serve(false).serverPort(server.port())
                .connectTimeout(Duration.ofSeconds(5)).connect();
             TcpRendezvous rank1 = TcpRendezvous.builder().rank(1).worldSize(2).serverPort(server.port())
                     .connectTimeout(Duration.ofSeconds(5)).connect()) {
            rank1.set("ping", new byte[] {1});
            assertArrayEquals(new byte[] {1}, rank0.get("ping", Duration.ofSeconds(5)));
            Thread other = Thread.ofVirtual().start(() -> rank1.barrier("b", Duration.ofSeconds(5)));
            rank0.barrier("b", Duration.ofSeconds(5));
            other.join(Duration.ofSeconds(5));
        }
    }
}
