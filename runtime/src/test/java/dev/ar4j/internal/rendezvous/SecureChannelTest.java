package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.*;

import dev.ar4j.internal.rendezvous.RendezvousProtocol.Frame;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The channel's sequence numbers and memory charges: a frame that fails before it is written
 * spends no sequence number, so the peer accepts the next one; a streamed values frame carries
 * the same MAC as one built whole; a large frame that does not fit the server's budget is read,
 * authenticated and refused without being kept, and the stream goes on.
 */
@Timeout(value = 20, unit = TimeUnit.SECONDS)
class SecureChannelTest {

    private static final byte[] SESSION_KEY = "0123456789abcdef0123456789abcdef".getBytes(java.nio.charset.StandardCharsets.US_ASCII);

    private ServerSocket listener;
    private Socket clientSocket;
    private Socket serverSocket;

    @BeforeEach
    void connect() throws Exception {
        listener = new ServerSocket(0, 4, InetAddress.getLoopbackAddress());
        clientSocket = new Socket(InetAddress.getLoopbackAddress(), listener.getLocalPort());
        serverSocket = listener.accept();
        serverSocket.setSoTimeout(10_000);
        clientSocket.setSoTimeout(10_000);
    }

    @AfterEach
    void close() throws Exception {
        clientSocket.close();
        serverSocket.close();
        listener.close();
    }

    private SecureChannel established(Socket socket, boolean clientSide, ServerMemoryBudget budget) throws Exception {
        SecureChannel channel = new SecureChannel(socket, clientSide, budget);
        channel.establish(SESSION_KEY);
        return channel;
    }

    @Test
    void aSendThatFailsBeforeWritingSpendsNoSequenceNumber() throws Exception {
        SecureChannel server = established(serverSocket, false, null);
        SecureChannel client = established(clientSocket, true, null);
        byte[][] values = {new byte[1_000], new byte[1_000]};
        assertThrows(RendezvousProtocol.ProtocolViolation.class,
                () -> server.sendValues(RendezvousProtocol.OK, values, 1_500));
        assertEquals(0, server.nextSendSequence(), "a frame never sent spent a sequence number");
        server.send(RendezvousProtocol.HEARTBEAT, new byte[0]);
        assertEquals(1, server.nextSendSequence());
        Frame heartbeat = client.receive(RendezvousProtocol.MAX_MESSAGE_PAYLOAD);
        assertEquals(RendezvousProtocol.HEARTBEAT, heartbeat.type(), "the peer refused the frame after the failed send");
    }

    @Test
    void aStreamedValuesFrameIsTheFrameBuiltWhole() throws Exception {
        SecureChannel server = established(serverSocket, false, null);
        SecureChannel client = established(clientSocket, true, null);
        byte[][] values = {{1, 2, 3}, new byte[0], new byte[70_000]};
        values[2][69_999] = 9;
        server.sendValues(RendezvousProtocol.OK, values, RendezvousProtocol.MAX_REPLY_PAYLOAD);
        server.send(RendezvousProtocol.OK, RendezvousProtocol.values(values));
        for (int i = 0; i < 2; i++) {
            Frame frame = client.receive(RendezvousProtocol.MAX_REPLY_PAYLOAD);
            assertArrayEquals(values, RendezvousProtocol.parseValues(frame.payload()), "frame " + i);
        }
    }

    @Test
    void aLargeFrameBeyondTheBudgetIsAuthenticatedRefusedAndTheStreamGoesOn() throws Exception {
        ServerMemoryBudget budget = new ServerMemoryBudget(1 << 20, 1);
        SecureChannel server = established(serverSocket, false, budget);
        SecureChannel client = established(clientSocket, true, null);
        Thread sender = Thread.ofVirtual().start(() -> {
            try {
                client.send(RendezvousProtocol.SET, new byte[2 << 20]);
                client.send(RendezvousProtocol.SET, new byte[512 << 10]);
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        SecureChannel.FrameNotAdmitted refused = assertThrows(SecureChannel.FrameNotAdmitted.class,
                () -> server.receive(RendezvousProtocol.MAX_REQUEST_PAYLOAD));
        assertTrue(refused.getMessage().contains("memory budget has no room for a SET request of 2097152 bytes"),
                refused.getMessage());
        assertEquals(0, budget.used(), "a refused frame was charged");
        Frame next = server.receive(RendezvousProtocol.MAX_REQUEST_PAYLOAD);
        assertEquals(512 << 10, next.payload().length, "the frame after the refused one");
        assertEquals(512 << 10, budget.used(), "the frame being served is charged");
        server.close();
        assertEquals(0, budget.used(), "closing the channel releases its charge");
        sender.join();
    }

    /** A socket whose output accepts {@code limit} bytes and then fails, as a connection reset mid-frame does. */
    private static final class CutOffSocket extends Socket {
        private final int limit;
        private int written;

        CutOffSocket(int limit) {
            this.limit = limit;
        }

        @Override
        public java.io.InputStream getInputStream() {
            return java.io.InputStream.nullInputStream();
        }

        @Override
        public java.io.OutputStream getOutputStream() {
            return new java.io.OutputStream() {
                @Override
                public void write(int b) throws java.io.IOException {
                    write(new byte[] {(byte) b}, 0, 1);
                }

                @Override
                public void write(byte[] b, int off, int len) throws java.io.IOException {
                    if (written + len > limit) {
                        throw new java.io.IOException("connection reset (test: cut off after " + limit + " bytes)");
                    }
                    written += len;
                }
            };
        }
    }

    @Test
    void aFrameCutOffMidwayMarksTheChannelBrokenAndSpendsNoSequenceNumber() throws Exception {
        SecureChannel channel = new SecureChannel(new CutOffSocket(20_000), true, null);
        channel.establish(SESSION_KEY);
        long before = channel.nextSendSequence();
        java.io.IOException cut = org.junit.jupiter.api.Assertions.assertThrows(java.io.IOException.class,
                () -> channel.send(RendezvousProtocol.SET, new byte[100_000]));
        assertTrue(cut.getMessage().contains("cut off after 20000 bytes"), cut.getMessage());
        org.junit.jupiter.api.Assertions.assertEquals(before, channel.nextSendSequence(), "no sequence number spent");
        java.io.IOException next = org.junit.jupiter.api.Assertions.assertThrows(java.io.IOException.class,
                () -> channel.send(RendezvousProtocol.HEARTBEAT, new byte[0]));
        assertTrue(next.getMessage().contains("cut off midway"), next.getMessage());
    }
}
