package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.*;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Large groups on one server, every rank a thread of this JVM joining at the same moment over
 * loopback: the handshake queue (256 slots by default) applies back-pressure and the ranks that
 * find it full retry, so a group of 1024 forms; and a flood of connections that never
 * authenticate (idle sockets and slowloris) makes no legitimate rank fail.
 *
 * <p>Heartbeats run every 1 s with a 30 s timeout here, so that a loaded two-core machine
 * running a thousand ranks in one JVM does not declare a healthy rank lost; formation itself
 * uses the default handshake settings.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class TcpRendezvousScaleTest {

    private static final JobToken TOKEN = JobToken.of("scale-test-secret");
    private static final RendezvousSettings SETTINGS = RendezvousSettings.resolve(new java.util.Properties(), java.util.Map.of())
            .withHeartbeat(Duration.ofSeconds(1), Duration.ofSeconds(30));

    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {64, 256, 1024})
    void aGroupFormsWithEveryRankJoiningAtOnce(int worldSize) throws Exception {
        try (TcpRendezvousServer server = TcpRendezvousServer.start(
                new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), worldSize, TOKEN, SETTINGS)) {
            long[] connected = new long[1];
            long nanos = formGroup(server, worldSize, Duration.ofSeconds(90), connected);
            TcpRendezvousAttackTest.measured("formation: " + worldSize + " ranks join at once (threads of one JVM)",
                    worldSize + " connections", "every rank connected and authenticated; " + server.evictions()
                            + " handshakes evicted as busy and retried", connected[0]);
            TcpRendezvousAttackTest.measured("formation and first all-gather: " + worldSize + " ranks (threads of one JVM)",
                    worldSize + " connections", "every rank finished one all-gather of 4 bytes", nanos);
        }
    }

    @Test
    void aFloodOfConnectionsThatNeverAuthenticateMakesNoRankFail() throws Exception {
        int idleSockets = 1000;
        int slowloris = 20;
        int worldSize = 16;
        RendezvousSettings settings = SETTINGS.withMaxPendingConnections(64);
        List<Socket> flood = new ArrayList<>();
        AtomicBoolean stop = new AtomicBoolean();
        Thread dribbler = null;
        try (TcpRendezvousServer server = TcpRendezvousServer.start(
                new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), worldSize, TOKEN, settings)) {
            for (int i = 0; i < idleSockets + slowloris; i++) {
                Socket socket = new Socket();
                socket.connect(server.address(), 5_000);
                flood.add(socket);
            }
            List<Socket> slow = List.copyOf(flood.subList(idleSockets, flood.size()));
            dribbler = Thread.ofPlatform().daemon().start(() -> dribble(slow, stop));
            long nanos = formGroup(server, worldSize, Duration.ofSeconds(60), new long[1]);
            TcpRendezvousAttackTest.measured("flood: " + idleSockets + " idle sockets + " + slowloris
                            + " slowloris, then " + worldSize + " ranks (handshake queue of 64)",
                    (idleSockets + slowloris + worldSize) + " connections",
                    "every rank joined; " + server.evictions() + " connections evicted as busy", nanos);
        } finally {
            stop.set(true);
            if (dribbler != null) {
                dribbler.join(Duration.ofSeconds(5));
            }
            for (Socket socket : flood) {
                socket.close();
            }
        }
    }

    /** Sends one byte of a HELLO header every 100 ms on each connection, never completing it. */
    private static void dribble(List<Socket> sockets, AtomicBoolean stop) {
        byte[] header = ByteBuffer.allocate(RendezvousProtocol.HEADER_BYTES).putInt(RendezvousProtocol.MAGIC)
                .put(RendezvousProtocol.VERSION).put(RendezvousProtocol.HELLO).putInt(RendezvousProtocol.HELLO_BYTES).array();
        for (int i = 0; i < header.length - 1 && !stop.get(); i++) {
            for (Socket socket : sockets) {
                try {
                    OutputStream out = socket.getOutputStream();
                    out.write(header[i]);
                    out.flush();
                } catch (java.io.IOException closed) {
                    // the server evicted or timed it out, as it should
                }
            }
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    /**
     * Starts {@code worldSize} ranks at once, each connecting and taking part in one all-gather.
     *
     * @param connected receives the time from the start until every rank had connected
     * @return the time from the start until every rank finished
     */
    static long formGroup(TcpRendezvousServer server, int worldSize, Duration connectTimeout, long[] connected)
            throws Exception {
        java.util.concurrent.atomic.AtomicLong lastConnected = new java.util.concurrent.atomic.AtomicLong();
        ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
        CountDownLatch ready = new CountDownLatch(worldSize);
        CountDownLatch go = new CountDownLatch(1);
        List<Thread> ranks = new ArrayList<>();
        byte[][] expected = new byte[worldSize][];
        for (int r = 0; r < worldSize; r++) {
            expected[r] = ByteBuffer.allocate(4).putInt(r).array();
        }
        for (int r = 0; r < worldSize; r++) {
            int rank = r;
            ranks.add(Thread.ofVirtual().name("scale-rank-" + r).start(() -> {
                ready.countDown();
                try {
                    go.await();
                    try (TcpRendezvous rendezvous = TcpRendezvous.builder().rank(rank).worldSize(worldSize).serve(false)
                            .serverPort(server.port()).token(TOKEN).settings(server.settings())
                            .connectTimeout(connectTimeout).closeLinger(Duration.ZERO).connect()) {
                        lastConnected.accumulateAndGet(System.nanoTime(), Math::max);
                        byte[][] all = rendezvous.allGather("formed", expected[rank], Duration.ofSeconds(90));
                        assertArrayEquals(expected, all, "rank " + rank + " gathered wrong values");
                    }
                } catch (Throwable failure) {
                    failures.add(failure);
                }
            }));
        }
        assertTrue(ready.await(30, TimeUnit.SECONDS), "the rank threads did not start");
        long start = System.nanoTime();
        go.countDown();
        for (Thread rank : ranks) {
            assertTrue(rank.join(Duration.ofSeconds(110)), "a rank thread hung: " + rank.getName());
        }
        long nanos = System.nanoTime() - start;
        connected[0] = lastConnected.get() - start;
        assertEquals(List.of(), failures.stream().limit(5).map(String::valueOf).toList(),
                failures.size() + " of " + worldSize + " ranks failed");
        return nanos;
    }
}
