package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.*;

import dev.ar4j.rendezvous.RendezvousSettings;
import dev.ar4j.internal.rendezvous.RendezvousProtocol.Frame;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Malformed frames sent over a raw socket, before and after the authenticated handshake: the
 * server answers ERROR naming what is wrong, closes that connection, and keeps serving everyone else.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class TcpRendezvousServerWireTest {

    static final JobToken TOKEN = JobToken.of("wire-test-secret");

    private static final int WORLD = 64;
    private TcpRendezvousServer server;
    /** Each join takes a fresh rank: a rank joins once (a second incarnation would fail the group). */
    private int nextRank = 2;

    @BeforeEach
    void startServer() {
        server = TcpRendezvousServer.start(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), WORLD, TOKEN,
                RendezvousSettings.resolve());
    }

    @AfterEach
    void stopServer() {
        server.close();
        assertTrue(server.awaitTermination(Duration.ofSeconds(2)), "server threads still running after close");
    }

    /** Sends raw {@code bytes} on a new connection and returns the ERROR message the server answers. */
    private String preAuthErrorFor(byte[] bytes) throws IOException {
        try (WireClient client = WireClient.open(server)) {
            client.sendRaw(bytes);
            String message = WireClient.refusal(client.receive()).message();
            assertTrue(client.closedByServer(), "the server closes the connection after a malformed frame");
            return message;
        }
    }

    /** Joins as rank 0, sends {@code frame} sealed, returns the ERROR message; the server closes the connection. */
    private String sessionErrorFor(byte type, byte[] body) throws IOException {
        try (WireClient client = WireClient.joined(server, nextRank++, TOKEN)) {
            client.send(type, body);
            String message = WireClient.refusal(client.receive()).message();
            assertTrue(client.closedByServer(), "the server closes the connection after a malformed frame");
            return message;
        }
    }

    private static void assertContains(String text, String part) {
        assertTrue(text.contains(part), () -> "expected '" + part + "' in: " + text);
    }

    @Test
    void wrongMagicIsNamed() throws Exception {
        String error = preAuthErrorFor("GET / HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
        assertContains(error, "not an ar4j rendezvous frame");
        assertContains(error, "\"GET \"");
        serverStillServes();
    }

    @Test
    void unsupportedVersionIsNamed() throws Exception {
        String error = preAuthErrorFor(WireClient.frame(RendezvousProtocol.MAGIC, 7, RendezvousProtocol.HELLO, 8, new byte[8]));
        assertContains(error, "unsupported rendezvous protocol version 7");
        serverStillServes();
    }

    @Test
    void oversizeFrameIsRejectedBeforeItsPayloadIsRead() throws Exception {
        assertContains(preAuthErrorFor(WireClient.frame(RendezvousProtocol.MAGIC, RendezvousProtocol.VERSION,
                RendezvousProtocol.HELLO, 16 << 20, new byte[0])), "HELLO frame announces a payload of 16777216 bytes,"
                + " more than the maximum of " + RendezvousProtocol.MAX_HANDSHAKE_PAYLOAD + " bytes");
        try (WireClient client = WireClient.joined(server, nextRank++, TOKEN)) {
            client.sendRaw(WireClient.frame(RendezvousProtocol.MAGIC, RendezvousProtocol.VERSION,
                    RendezvousProtocol.SET, -5, new byte[0]));
            assertContains(WireClient.refusal(client.receive()).message(), "announces a payload of 4294967291 bytes");
        }
        serverStillServes();
    }

    @Test
    void oversizeKeyAndValueLengthsInsideAFrameAreNamed() throws Exception {
        byte[] longKey = ByteBuffer.allocate(8).putInt(RendezvousProtocol.MAX_KEY_BYTES + 1).putInt(0).array();
        assertContains(sessionErrorFor(RendezvousProtocol.SET, longKey),
                "key of " + (RendezvousProtocol.MAX_KEY_BYTES + 1) + " bytes exceeds the maximum of "
                        + RendezvousProtocol.MAX_KEY_BYTES);
        byte[] hugeValue = ByteBuffer.allocate(9).putInt(1).put((byte) 'k').putInt(RendezvousProtocol.MAX_VALUE_BYTES + 1).array();
        assertContains(sessionErrorFor(RendezvousProtocol.SET, hugeValue),
                "value of " + (RendezvousProtocol.MAX_VALUE_BYTES + 1) + " bytes exceeds the maximum");
        byte[] truncated = ByteBuffer.allocate(6).putInt(10).put((byte) 'a').put((byte) 'b').array();
        assertContains(sessionErrorFor(RendezvousProtocol.SET, truncated), "SET payload is truncated");
        byte[] manyKeys = ByteBuffer.allocate(12).putLong(10).putInt(1_000_000).array();
        assertContains(sessionErrorFor(RendezvousProtocol.GET, manyKeys), "key count 1000000 does not fit");
        byte[] badUtf8 = ByteBuffer.allocate(10).putInt(2).put((byte) 0xc3).put((byte) 0x28).putInt(0).array();
        assertContains(sessionErrorFor(RendezvousProtocol.SET, badUtf8), "key is not valid UTF-8");
        serverStillServes();
    }

    @Test
    void requestsOutOfOrderOrUnknownAreNamed() throws Exception {
        assertContains(preAuthErrorFor(WireClient.frame(RendezvousProtocol.SET, RendezvousProtocol.set("0/k", new byte[0]))),
                "the first frame of a connection must be HELLO, got SET");
        assertContains(sessionErrorFor(RendezvousProtocol.HELLO, new byte[RendezvousProtocol.HELLO_BYTES]),
                "unexpected frame type HELLO");
        assertContains(sessionErrorFor((byte) 0x7f, new byte[0]), "unexpected frame type unknown type 0x7f");
        try (WireClient client = WireClient.open(server)) {
            Frame reply = client.handshake(WORLD + 1, WORLD, 1, TOKEN);
            assertContains(WireClient.refusal(reply).message(), "rank " + (WORLD + 1) + " is out of range for world size " + WORLD);
        }
        assertContains(preAuthErrorFor(WireClient.frame(RendezvousProtocol.HELLO, new byte[3])), "HELLO payload is truncated");
        assertContains(preAuthErrorFor(WireClient.frame(RendezvousProtocol.HELLO, new byte[RendezvousProtocol.HELLO_BYTES + 1])),
                "unexpected trailing bytes");
        serverStillServes();
    }

    @Test
    void aSealedFrameWithAWrongMacIsRefused() throws Exception {
        try (WireClient client = WireClient.joined(server, nextRank++, TOKEN)) {
            byte[] body = RendezvousProtocol.set("0/k", new byte[] {1});
            byte[] forged = new byte[body.length + RendezvousProtocol.MAC_BYTES];
            System.arraycopy(body, 0, forged, 0, body.length);
            client.sendRaw(WireClient.frame(RendezvousProtocol.SET, forged));
            assertContains(WireClient.refusal(client.receive()).message(), "failed authentication");
        }
        serverStillServes();
    }

    @Test
    void connectionThatDiesMidFrameDoesNotHurtTheServer() throws Exception {
        try (Socket socket = new Socket(server.address().getAddress(), server.port())) {
            socket.getOutputStream().write(new byte[] {0x41, 0x52});
            socket.getOutputStream().flush();
        }
        assertEquals(WORLD, server.worldSize());
        serverStillServes();
    }

    /** Two well-behaved clients still complete a collective on the same server. */
    private void serverStillServes() throws Exception {
        try (TcpRendezvous rank0 = TcpRendezvous.builder().rank(0).worldSize(WORLD).serve(false).serverPort(server.port())
                .token(TOKEN).connectTimeout(Duration.ofSeconds(5)).closeLinger(Duration.ZERO).connect();
             TcpRendezvous rank1 = TcpRendezvous.builder().rank(1).worldSize(WORLD).serve(false).serverPort(server.port())
                     .token(TOKEN).connectTimeout(Duration.ofSeconds(5)).closeLinger(Duration.ZERO).connect()) {
            rank1.set("ping", new byte[] {1});
            assertArrayEquals(new byte[] {1}, rank0.get("ping", Duration.ofSeconds(5)));
            rank1.broadcast("b", 1, new byte[] {2}, Duration.ofSeconds(5));
            assertArrayEquals(new byte[] {2}, rank0.broadcast("b", 1, null, Duration.ofSeconds(5)));
        }
    }
}
