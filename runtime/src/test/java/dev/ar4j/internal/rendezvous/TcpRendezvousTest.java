package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.*;

import dev.ar4j.rendezvous.Rendezvous;
import dev.ar4j.Ar4jException;
import dev.ar4j.PeerLostException;
import dev.ar4j.rendezvous.RendezvousException;
import dev.ar4j.rendezvous.RendezvousTimeoutException;
import dev.ar4j.rendezvous.LaunchEnvironment;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** TcpRendezvous with its ranks on threads of this JVM; the process test covers real processes. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class TcpRendezvousTest {

    private static final Duration WAIT = Duration.ofSeconds(10);

    static int freeLoopbackPort() throws IOException {
        try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return probe.getLocalPort();
        }
    }

    private static TcpRendezvous.Builder client(int rank, int worldSize, int port) {
        return TcpRendezvous.builder().rank(rank).worldSize(worldSize).serverPort(port)
                .connectTimeout(WAIT).closeLinger(Duration.ofSeconds(2));
    }

    private static <T> List<T> inParallel(List<Callable<T>> tasks) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(tasks.size());
        try {
            List<Future<T>> futures = new ArrayList<>();
            for (Callable<T> task : tasks) {
                futures.add(pool.submit(task));
            }
            List<T> results = new ArrayList<>();
            for (Future<T> f : futures) {
                results.add(f.get(20, TimeUnit.SECONDS));
            }
            return results;
        } finally {
            pool.shutdownNow();
        }
    }

    private static String collectives(TcpRendezvous rv) {
        StringBuilder out = new StringBuilder();
        for (byte[] g : rv.allGather("ids", ("id" + rv.rank()).getBytes(StandardCharsets.UTF_8), WAIT)) {
            out.append(new String(g, StandardCharsets.UTF_8)).append(' ');
        }
        byte[] b = rv.broadcast("uid", 1, rv.rank() == 1 ? new byte[] {4, 2} : null, WAIT);
        out.append(b[0]).append(b[1]).append(' ');
        rv.barrier("sync", WAIT);
        out.append(new String(rv.allGather("ids", new byte[] {(byte) ('a' + rv.rank())}, WAIT)[2], StandardCharsets.UTF_8));
        return out.toString();
    }

    @Test
    void collectivesAcrossThreeClientsOfAnEphemeralServer() throws Exception {
        TcpRendezvous rank0 = client(0, 3, 0).connect();
        int port = rank0.servingPort();
        assertTrue(rank0.isServing());
        List<Callable<String>> tasks = new ArrayList<>();
        tasks.add(() -> {
            try (rank0) {
                return collectives(rank0);
            }
        });
        for (int r = 1; r < 3; r++) {
            int rank = r;
            tasks.add(() -> {
                try (TcpRendezvous rv = client(rank, 3, port).connect()) {
                    assertFalse(rv.isServing());
                    return collectives(rv);
                }
            });
        }
        assertEquals(List.of("id0 id1 id2 42 c", "id0 id1 id2 42 c", "id0 id1 id2 42 c"), inParallel(tasks));
    }

    @Test
    void clientsWaitForAServerThatStartsLater() throws Exception {
        int port = freeLoopbackPort();
        List<Callable<String>> tasks = List.of(
                () -> {
                    try (TcpRendezvous rv = client(1, 2, port).connect()) {
                        return new String(rv.get("greeting", WAIT), StandardCharsets.UTF_8);
                    }
                },
                () -> {
                    Thread.sleep(400);
                    try (TcpRendezvous rv = client(0, 2, port).connect()) {
                        rv.set("greeting", "hello".getBytes(StandardCharsets.UTF_8));
                        return "served";
                    }
                });
        assertEquals(List.of("hello", "served"), inParallel(tasks));
    }

    @Test
    void servingRankLingersUntilALateRankHasReadItsBroadcast() throws Exception {
        TcpRendezvous rank0 = client(0, 2, 0).connect();
        int port = rank0.servingPort();
        rank0.broadcast("config", 0, new byte[] {9}, WAIT);
        List<Callable<byte[]>> tasks = List.of(
                () -> {
                    rank0.close();
                    return new byte[0];
                },
                () -> {
                    Thread.sleep(300);
                    try (TcpRendezvous rv = client(1, 2, port).connect()) {
                        return rv.broadcast("config", 0, null, WAIT);
                    }
                });
        assertArrayEquals(new byte[] {9}, inParallel(tasks).get(1));
    }

    @Test
    void wrongWorldSizeIsRefusedByTheServer() {
        try (TcpRendezvousServer server = TcpRendezvousServer.startOnLoopback(0, 2)) {
            RendezvousException e = assertThrows(RendezvousException.class,
                    () -> client(1, 3, server.port()).serve(false).connect());
            assertTrue(e.getMessage().contains("rank 1 says world size 3, server expects 2"), e.getMessage());
        }
    }

    @Test
    void secondClientClaimingAConnectedRankIsRefused() {
        try (TcpRendezvousServer server = TcpRendezvousServer.startOnLoopback(0, 2);
             TcpRendezvous first = client(1, 2, server.port()).connect()) {
            RendezvousException e = assertThrows(RendezvousException.class, () -> client(1, 2, server.port()).connect());
            assertTrue(e.getMessage().contains("rank 1 is already connected"), e.getMessage());
            first.set("still", new byte[] {1});
            assertEquals(1, first.get("still", WAIT)[0], "the first connection is unaffected");
        }
    }

    @Test
    void timeoutOverTcpNamesTheAbsentRank() {
        try (TcpRendezvous rank0 = client(0, 3, 0).closeLinger(Duration.ofMillis(200)).connect();
             TcpRendezvous rank2 = client(2, 3, rank0.servingPort()).connect()) {
            RendezvousTimeoutException e = assertThrows(RendezvousTimeoutException.class,
                    () -> rank2.allGather("late", new byte[] {2}, Duration.ofMillis(300)));
            assertEquals(List.of(0, 1), e.missingRanks());
            assertTrue(e.getMessage().contains("ranks 0, 1 never arrived"), e.getMessage());
            RendezvousTimeoutException get = assertThrows(RendezvousTimeoutException.class,
                    () -> rank0.get("unset", Duration.ofMillis(100)));
            assertEquals("unset", get.key());
        }
    }

    @Test
    void unreachableServerTimesOutNamingTheAddress() throws Exception {
        int port = freeLoopbackPort();
        RendezvousTimeoutException e = assertThrows(RendezvousTimeoutException.class,
                () -> client(1, 2, port).connectTimeout(Duration.ofMillis(400)).connect());
        assertTrue(e.getMessage().contains("could not reach the rendezvous server at 127.0.0.1:" + port), e.getMessage());
        assertTrue(e.getMessage().contains("MASTER_ADDR"), e.getMessage());
    }

    @Test
    void aServerSpeakingAnotherProtocolIsNamedAsSuch() throws Exception {
        try (ServerSocket http = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Thread responder = Thread.ofVirtual().start(() -> {
                try (Socket s = http.accept(); OutputStream out = s.getOutputStream()) {
                    out.write("HTTP/1.1 400 Bad Request\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
                    out.flush();
                    s.getInputStream().read();
                } catch (IOException ignored) {
                    // the client hung up, which is what the test expects
                }
            });
            RendezvousException e = assertThrows(RendezvousException.class,
                    () -> client(1, 2, http.getLocalPort()).connect());
            assertTrue(e.getMessage().contains("does not answer with the ar4j rendezvous protocol"), e.getMessage());
            assertTrue(e.getMessage().contains("\"HTTP\""), e.getMessage());
            responder.join(Duration.ofSeconds(5));
        }
    }

    @Test
    void oversizeValuesAreRefusedBeforeSending() {
        try (TcpRendezvous rv = client(0, 1, 0).connect()) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> rv.set("big", new byte[Rendezvous.MAX_VALUE_BYTES + 1]));
            assertTrue(e.getMessage().contains("too large"), e.getMessage());
            byte[] largest = new byte[Rendezvous.MAX_VALUE_BYTES];
            largest[largest.length - 1] = 7;
            rv.set("largest", largest);
            assertArrayEquals(largest, rv.get("largest", WAIT));
        }
    }

    @Test
    void builderChecksItsParameters() {
        assertThrows(IllegalArgumentException.class, () -> TcpRendezvous.builder().rank(0).connect());
        assertTrue(assertThrows(IllegalArgumentException.class, () -> TcpRendezvous.builder().rank(2).worldSize(2).connect())
                .getMessage().contains("out of range"));
        assertTrue(assertThrows(IllegalArgumentException.class,
                        () -> TcpRendezvous.builder().rank(1).worldSize(2).serverPort(0).connect())
                .getMessage().contains("servingPort()"));
    }

    @Test
    void portInUseIsReportedWithTheVariablesToChange() throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            RendezvousException e = assertThrows(RendezvousException.class,
                    () -> client(0, 2, taken.getLocalPort()).connect());
            assertTrue(e.getMessage().contains("cannot serve the rendezvous on 127.0.0.1:" + taken.getLocalPort()), e.getMessage());
            assertTrue(e.getMessage().contains("AR4J_MASTER_PORT"), e.getMessage());
        }
    }

    @Test
    void connectFromLaunchEnvironment() throws Exception {
        LaunchEnvironment single = LaunchEnvironment.fromEnvironment(java.util.Map.of());
        try (TcpRendezvous rv = TcpRendezvous.connect(single, WAIT)) {
            assertEquals(1, rv.worldSize());
            assertArrayEquals(new byte[] {5}, rv.allGather("solo", new byte[] {5}, WAIT)[0]);
        }
        int port = freeLoopbackPort();
        List<Callable<Integer>> tasks = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
            LaunchEnvironment env = LaunchEnvironment.builder().rank(r).worldSize(2).localRank(r).localWorldSize(2)
                    .masterPort(port).build(java.util.Map.of());
            tasks.add(() -> {
                try (TcpRendezvous rv = TcpRendezvous.connect(env, WAIT)) {
                    return rv.allGather("x", new byte[] {(byte) rv.rank()}, WAIT).length;
                }
            });
        }
        assertEquals(List.of(2, 2), inParallel(tasks));
    }

    @Test
    void closingTheServerEndsItsThreadsAndWakesWaiters() throws Exception {
        TcpRendezvousServer server = TcpRendezvousServer.startOnLoopback(0, 2);
        TcpRendezvous rank1 = client(1, 2, server.port()).serve(false).connect();
        Future<Ar4jException> waiter;
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            waiter = pool.submit(() -> assertThrows(Ar4jException.class, () -> rank1.get("never", WAIT)));
            Thread.sleep(200);
            server.close();
            Ar4jException e = waiter.get(5, TimeUnit.SECONDS);
            assertFalse(e instanceof RendezvousTimeoutException, "the wait ends at close, not at its timeout");
            assertTrue(e.getMessage().contains("closed the connection") || e.getMessage().contains("lost its connection"),
                    e.getMessage());
            assertTrue(server.awaitTermination(Duration.ofSeconds(2)), "server threads still running after close");
            assertEquals(-1, assertInstanceOf(PeerLostException.class, e).peer(), "the server's loss is the group's");
            assertTrue(assertThrows(PeerLostException.class, () -> rank1.set("k", new byte[0]))
                    .getMessage().contains("is gone"));
        } finally {
            rank1.close();
            pool.shutdownNow();
        }
    }
}
