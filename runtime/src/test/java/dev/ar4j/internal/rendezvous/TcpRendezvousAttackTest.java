package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.*;

import dev.ar4j.PeerLostException;
import dev.ar4j.rendezvous.RendezvousAuthenticationException;
import dev.ar4j.rendezvous.RendezvousRefusedException;
import dev.ar4j.rendezvous.RendezvousSettings;
import dev.ar4j.internal.rendezvous.RendezvousProtocol.Frame;
import dev.ar4j.internal.rendezvous.RendezvousProtocol.Refusal;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Each attack of issue 10 against a live server: refused with a named error, nothing wrong
 * delivered, and the legitimate group still forms afterwards. Each test prints one
 * {@code MEASURED} line (attack, frames or connections, outcome, time) for docs/RELIABILITY.md.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class TcpRendezvousAttackTest {

    static final JobToken TOKEN = JobToken.of("attack-test-secret");
    static final RendezvousSettings SETTINGS = RendezvousSettings.resolve(new java.util.Properties(), java.util.Map.of())
            .withHeartbeat(Duration.ofMillis(100), Duration.ofMillis(1_000))
            .withHandshakeTimeout(Duration.ofMillis(500))
            .withQuota(1_000, 1 << 20)
            .withMaxPendingConnections(32)
            .withMaxWait(Duration.ofSeconds(5));
    private static final Duration WAIT = Duration.ofSeconds(10);

    private TcpRendezvousServer server;

    @BeforeEach
    void startServer() {
        server = TcpRendezvousServer.start(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 2, TOKEN, SETTINGS);
    }

    @AfterEach
    void stopServer() {
        server.close();
        assertTrue(server.awaitTermination(Duration.ofSeconds(2)), "server threads still running after close");
    }

    static void measured(String attack, String load, String outcome, long nanos) {
        System.out.printf(java.util.Locale.ROOT, "MEASURED | %s | %s | %s | %.1f ms%n", attack, load, outcome, nanos / 1e6);
    }

    private TcpRendezvous.Builder rank(int rank) {
        return TcpRendezvous.builder().rank(rank).worldSize(2).serve(false).serverPort(server.port()).token(TOKEN)
                .settings(SETTINGS).connectTimeout(Duration.ofSeconds(5)).closeLinger(Duration.ZERO);
    }

    /** The legitimate group of two forms and exchanges the right values. */
    private void groupForms() throws Exception {
        try (TcpRendezvous rank0 = rank(0).connect(); TcpRendezvous rank1 = rank(1).connect()) {
            CompletableFuture<byte[][]> other = CompletableFuture.supplyAsync(
                    () -> rank1.allGather("ids", new byte[] {11}, WAIT));
            byte[][] mine = rank0.allGather("ids", new byte[] {10}, WAIT);
            assertArrayEquals(new byte[][] {{10}, {11}}, mine);
            assertArrayEquals(new byte[][] {{10}, {11}}, other.get(10, TimeUnit.SECONDS));
        }
    }

    private static void assertContains(String text, String part) {
        assertTrue(text.contains(part), () -> "expected '" + part + "' in: " + text);
    }

    @Test
    void headerBombIsRefusedBeforeAnyAllocation() throws Exception {
        int connections = 300;
        Runtime runtime = Runtime.getRuntime();
        long start = System.nanoTime();
        for (int i = 0; i < connections; i++) {
            try (WireClient client = WireClient.open(server)) {
                client.sendRaw(WireClient.frame(RendezvousProtocol.MAGIC, RendezvousProtocol.VERSION,
                        RendezvousProtocol.HELLO, 16 << 20, new byte[0]));
                assertContains(WireClient.refusal(client.receive()).message(), "more than the maximum of "
                        + RendezvousProtocol.MAX_HANDSHAKE_PAYLOAD + " bytes");
            }
        }
        long elapsed = System.nanoTime() - start;
        // 300 × 16 MiB would be 4.7 GiB; the test JVM's heap could not hold it, so reaching here means no allocation.
        assertTrue(runtime.totalMemory() < (long) connections * (16 << 20), "heap grew as if the payloads were allocated");
        measured("header bomb (10-byte header announcing 16 MiB, before HELLO)", connections + " connections",
                "each refused: \"more than the maximum of 64 bytes\"", elapsed / connections);
        groupForms();
    }

    @Test
    void storeFloodStopsAtTheRanksQuota() throws Exception {
        int frames = 0;
        long start = System.nanoTime();
        String refusal = null;
        try (WireClient client = WireClient.joined(server, 0, TOKEN)) {
            byte[] value = new byte[64 * 1024];
            while (frames < 1_000) {
                client.send(RendezvousProtocol.SET, RendezvousProtocol.set("0/flood/" + frames, value));
                frames++;
                Frame reply = client.receive();
                if (reply.type() == RendezvousProtocol.ERROR) {
                    refusal = RendezvousProtocol.parseError(reply.payload()).message();
                    break;
                }
            }
        }
        long elapsed = System.nanoTime() - start;
        assertTrue(refusal != null, "the flood was never refused");
        assertContains(refusal, "exceeds its store quota");
        assertEquals(17, frames, "1 MiB quota of 64 KiB values: 16 stored, the 17th refused");
        measured("store flood (64 KiB SETs, quota 1 MiB)", frames + " SET frames", "refused: \"exceeds its store quota\"",
                elapsed);
    }

    @Test
    void hugeGetIsRefusedByItsKeyCount() throws Exception {
        try (WireClient client = WireClient.joined(server, 0, TOKEN)) {
            List<String> keys = new ArrayList<>();
            for (int i = 0; i < 5_000; i++) {
                keys.add("1/" + i);
            }
            long start = System.nanoTime();
            client.send(RendezvousProtocol.GET, RendezvousProtocol.get(60_000, keys));
            String message = WireClient.refusal(client.receive()).message();
            long elapsed = System.nanoTime() - start;
            assertContains(message, "GET of 5000 keys exceeds the maximum of 4096 keys per read");
            measured("huge GET (5,000 keys)", "1 frame", "refused: \"exceeds the maximum of 4096 keys per read\"", elapsed);
        }
        try (WireClient client = WireClient.open(server)) {
            // 3.3 M one-byte keys do not even fit a frame.
            client.sendRaw(ByteBuffer.allocate(10).putInt(RendezvousProtocol.MAGIC).put(RendezvousProtocol.VERSION)
                    .put(RendezvousProtocol.GET).putInt(3_300_000 * 5 + 12).array());
            assertContains(WireClient.refusal(client.receive()).message(), "more than the maximum");
        }
    }

    @Test
    void idleAndSlowlorisConnectionsAreClosedAtTheHandshakeTimeout() throws Exception {
        long start = System.nanoTime();
        try (WireClient idle = WireClient.open(server); WireClient slow = WireClient.open(server)) {
            byte[] hello = WireClient.frame(RendezvousProtocol.HELLO, new byte[RendezvousProtocol.HELLO_BYTES]);
            for (int i = 0; i < 4; i++) {
                slow.sendRaw(new byte[] {hello[i]});
                Thread.sleep(100);
            }
            assertTrue(idle.closedByServer(), "idle connection not closed");
            assertTrue(slow.closedByServer(), "slowloris connection not closed");
        }
        long elapsed = System.nanoTime() - start;
        assertTrue(elapsed < TimeUnit.MILLISECONDS.toNanos(500 + 2_000), "closed after " + elapsed / 1_000_000 + " ms");
        measured("idle + slowloris (1 byte / 100 ms) before HELLO", "2 connections",
                "closed at the handshake timeout (500 ms here, 10 s default)", elapsed);
        groupForms();
    }

    @Test
    void aFullHandshakeQueueEvictsTheConnectionThatWaitedLongestAsBusy() throws Exception {
        List<Socket> idle = new ArrayList<>();
        long start = System.nanoTime();
        try (WireClient oldest = WireClient.open(server)) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (server.pendingConnections() < 1 && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            for (int i = 0; i < 31; i++) {
                idle.add(new Socket(server.address().getAddress(), server.port()));
            }
            while (server.pendingConnections() < 32 && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            assertEquals(32, server.pendingConnections());
            long full = System.nanoTime();
            idle.add(new Socket(server.address().getAddress(), server.port())); // the 33rd: waits, then evicts the oldest
            Frame busy = oldest.receive();
            long evictedAfter = System.nanoTime() - full;
            assertEquals(RendezvousProtocol.ERROR, busy.type(), WireClient.describe(busy));
            assertEquals(RendezvousProtocol.CODE_BUSY, WireClient.refusal(busy).code());
            assertTrue(WireClient.refusal(busy).message().contains("the server is busy"), WireClient.describe(busy));
            assertTrue(oldest.closedByServer(), "the evicted connection was kept");
            // Evicted once it had waited its share (the handshake timeout / 8 = 62 ms here), not at the timeout.
            assertTrue(evictedAfter < TimeUnit.MILLISECONDS.toNanos(450), "evicted after " + evictedAfter / 1_000_000 + " ms");
            assertTrue(server.pendingConnections() <= 32, server.pendingConnections() + " pending, more than the queue");
            measured("handshake queue full (32 idle + 1, queue of 32)", "33 connections",
                    "the oldest told 'the server is busy' and closed; the 33rd queued", evictedAfter);
        } finally {
            for (Socket s : idle) {
                s.close();
            }
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (server.pendingConnections() > 0 && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertEquals(0, server.pendingConnections(), "the attackers' slots were not freed");
        measured("handshake queue drained", "33 connections", "every slot freed; group forms after", System.nanoTime() - start);
        groupForms();
    }

    @Test
    void aFullHandshakeQueueWithNoNewcomerEvictsNobody() throws Exception {
        List<Socket> idle = new ArrayList<>();
        try {
            long opened = System.nanoTime();
            long deadline = opened + TimeUnit.SECONDS.toNanos(5);
            for (int i = 0; i < 32; i++) {
                idle.add(new Socket(server.address().getAddress(), server.port()));
            }
            while (server.pendingConnections() < 32 && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            assertEquals(32, server.pendingConnections());
            // Past the oldest's share (handshake timeout / 8 = 62 ms here), still before the handshake timeout (500 ms).
            Thread.sleep(150);
            int pending = server.pendingConnections();
            boolean beforeAnyTimeout = System.nanoTime() - opened < TimeUnit.MILLISECONDS.toNanos(480);
            assertEquals(0, server.evictions(), "a connection was evicted though no other one was waiting to enter");
            if (beforeAnyTimeout) { // on a machine so loaded that 32 accepts took ~300 ms, timeouts may have begun
                assertEquals(32, pending, "the full queue lost a connection though none was waiting");
            }
        } finally {
            for (Socket s : idle) {
                s.close();
            }
        }
        groupForms();
    }

    @Test
    void anAbandonedGetFreesItsSlotAndReportsTheRankAtOnce() throws Exception {
        CompletableFuture<String> lost = new CompletableFuture<>();
        server.onPeerLost((r, reason) -> lost.complete(r + ": " + reason));
        WireClient client = WireClient.joined(server, 1, TOKEN);
        client.send(RendezvousProtocol.GET, RendezvousProtocol.get(Long.MAX_VALUE, List.of("0/ag/1/x")));
        Thread.sleep(50);
        long start = System.nanoTime();
        client.socket.setSoLinger(true, 0);
        client.close();
        String reason = lost.get(5, TimeUnit.SECONDS);
        long elapsed = System.nanoTime() - start;
        assertContains(reason, "1: rank 1 disconnected");
        assertTrue(elapsed < TimeUnit.SECONDS.toNanos(1), "reported after " + elapsed / 1_000_000 + " ms");
        assertTrue(server.awaitConnectedRanksGone(Duration.ofSeconds(1)), "the dead connection still holds rank 1");
        measured("abandoned GET (client gone mid-wait, timeout Long.MAX_VALUE)", "1 connection",
                "slot freed, \"rank 1 disconnected\" reported", elapsed);
    }

    @Test
    void aSquatterOfAConnectedRankIsRefused() throws Exception {
        try (TcpRendezvous rank0 = rank(0).connect()) {
            long start = System.nanoTime();
            RendezvousRefusedException e = assertThrows(RendezvousRefusedException.class, () -> rank(0).connect());
            assertContains(e.getMessage(), "rank 0 is already connected");
            measured("rank squatting (second process claims connected rank 0)", "1 connection",
                    "refused: \"rank 0 is already connected ... two processes claim rank 0\"", System.nanoTime() - start);
            RendezvousAuthenticationException stranger = assertThrows(RendezvousAuthenticationException.class,
                    () -> rank(1).token(JobToken.of("a stranger")).connect());
            assertContains(stranger.getMessage(), "another job's rank (token mismatch)");
            try (TcpRendezvous rank1 = rank(1).connect()) {
                CompletableFuture<byte[]> other = CompletableFuture.supplyAsync(() -> rank1.broadcast("b", 0, null, WAIT));
                rank0.broadcast("b", 0, new byte[] {7}, WAIT);
                assertArrayEquals(new byte[] {7}, other.get(10, TimeUnit.SECONDS));
            }
        }
    }

    @Test
    void aForgedSetOfAnotherRanksKeyIsRefusedAndNothingWrongIsDelivered() throws Exception {
        try (WireClient forger = WireClient.joined(server, 1, TOKEN)) {
            long start = System.nanoTime();
            forger.send(RendezvousProtocol.SET, RendezvousProtocol.set("0/ag/1/ids", new byte[] {66}));
            Refusal refusal = WireClient.refusal(forger.receive());
            measured("forged SET of rank 0's key by rank 1", "1 frame", "refused: \"forged SET refused\"",
                    System.nanoTime() - start);
            assertEquals(RendezvousProtocol.CODE_REFUSED, refusal.code());
            assertContains(refusal.message(), "rank 1 may not set '0/ag/1/ids': it is rank 0's key");
            assertContains(refusal.message(), "(forged SET refused)");
            forger.send(RendezvousProtocol.SET, RendezvousProtocol.set("kv/ids", new byte[] {66}));
            assertContains(WireClient.refusal(forger.receive()).message(), "a key without an owner rank prefix");
        }
        try (TcpRendezvous rank0 = rank(0).connect()) {
            PeerLostException e = assertThrows(PeerLostException.class, () -> rank0.allGather("ids", new byte[] {10}, WAIT));
            assertEquals(1, e.peer(), "rank 1 (the forger) left; its key is missing, rank 0's value was not replaced");
        }
    }

    @Test
    void nobodyWithoutTheTokenReadsAValue() throws Exception {
        try (TcpRendezvous rank0 = rank(0).connect()) {
            rank0.set("nccl-id", new byte[] {42});
            long start = System.nanoTime();
            try (WireClient thief = WireClient.open(server)) {
                Frame reply = thief.handshake(1, 2, 1, JobToken.of("guess"));
                Refusal refusal = WireClient.refusal(reply);
                assertEquals(RendezvousProtocol.CODE_AUTH, refusal.code());
                assertContains(refusal.message(), "another job's rank (token mismatch)");
                assertTrue(thief.closedByServer(), "the thief's connection was kept");
            }
            measured("read another rank's value without the token", "1 connection",
                    "refused: \"another job's rank (token mismatch)\"", System.nanoTime() - start);
            try (WireClient thief = WireClient.open(server)) {
                thief.sendRaw(WireClient.frame(RendezvousProtocol.GET, RendezvousProtocol.get(10, List.of("*/kv/nccl-id"))));
                assertContains(WireClient.refusal(thief.receive()).message(), "must be HELLO");
            }
        }
    }

    @Test
    void aSecondJobOnTheSamePortIsRefusedAndTheFirstJobIsUnharmed() throws Exception {
        long start = System.nanoTime();
        RendezvousAuthenticationException e = assertThrows(RendezvousAuthenticationException.class,
                () -> rank(0).token(JobToken.fromEnvironment(java.util.Map.of("SLURM_JOB_ID", "999", "SLURM_STEP_ID", "0")))
                        .connect());
        measured("second job's rank on the same port", "1 connection", "refused: \"another job's rank (token mismatch)\"",
                System.nanoTime() - start);
        assertContains(e.getMessage(), "another job's rank (token mismatch)");
        groupForms();
    }

    @Test
    void aRestartedRankFailsTheGroupInsteadOfGettingStaleValues() throws Exception {
        try (TcpRendezvous rank0 = rank(0).connect()) {
            TcpRendezvous first = rank(1).connect();
            CompletableFuture<byte[][]> gather = CompletableFuture.supplyAsync(() -> first.allGather("ids", new byte[] {1}, WAIT));
            rank0.allGather("ids", new byte[] {0}, WAIT);
            gather.get(10, TimeUnit.SECONDS);
            first.close();
            long start = System.nanoTime();
            PeerLostException e = assertThrows(PeerLostException.class, () -> rank(1).connect());
            measured("restarted rank (rank 1 joins again, new incarnation)", "1 connection",
                    "refused, group failed: \"joined again as a new incarnation\"", System.nanoTime() - start);
            assertEquals(1, e.peer());
            assertContains(e.getMessage(), "rank 1 joined again as a new incarnation");
            PeerLostException survivor = assertThrows(PeerLostException.class,
                    () -> rank0.allGather("ids", new byte[] {0}, WAIT));
            assertEquals(1, survivor.peer());
        }
    }

    @Test
    void aConnectedRankLostMidGatherFailsTheWaiterAtOnceNamingIt() throws Exception {
        try (TcpRendezvous rank0 = rank(0).connect()) {
            CompletableFuture<String> told = new CompletableFuture<>();
            rank0.onPeerLost((r, reason) -> told.complete(r + ": " + reason));
            WireClient rank1 = WireClient.joined(server, 1, TOKEN);
            CompletableFuture<PeerLostException> waiter = CompletableFuture.supplyAsync(
                    () -> assertThrows(PeerLostException.class, () -> rank0.allGather("ids", new byte[] {0}, WAIT)));
            Thread.sleep(100);
            long start = System.nanoTime();
            rank1.socket.setSoLinger(true, 0);
            rank1.close();
            PeerLostException e = waiter.get(5, TimeUnit.SECONDS);
            long elapsed = System.nanoTime() - start;
            assertEquals(1, e.peer());
            assertContains(e.getMessage(), "rank 1 disconnected");
            assertContains(told.get(5, TimeUnit.SECONDS), "1: rank 1 disconnected");
            assertTrue(elapsed < TimeUnit.SECONDS.toNanos(1), "took " + elapsed / 1_000_000 + " ms");
            measured("rank connection dropped during an all-gather (in-JVM)", "1 connection",
                    "PeerLostException(1) \"rank 1 disconnected\"", elapsed);
        }
    }

    @Test
    void aSilentRankIsLostAtTheHeartbeatTimeout() throws Exception {
        try (TcpRendezvous rank0 = rank(0).connect();
             WireClient silent = WireClient.joined(server, 1, TOKEN)) {
            long start = System.nanoTime();
            PeerLostException e = assertThrows(PeerLostException.class, () -> rank0.allGather("ids", new byte[] {0}, WAIT));
            long elapsed = System.nanoTime() - start;
            assertEquals(1, e.peer());
            assertContains(e.getMessage(), "rank 1's heartbeat stopped");
            assertTrue(elapsed >= TimeUnit.MILLISECONDS.toNanos(900) && elapsed < TimeUnit.MILLISECONDS.toNanos(2_500),
                    "took " + elapsed / 1_000_000 + " ms with a 1 s heartbeat timeout");
            assertTrue(silent.socket.isConnected());
            measured("silent rank (joined, never sends a heartbeat)", "1 connection",
                    "PeerLostException(1) \"heartbeat stopped\" (timeout 1 s)", elapsed);
        }
    }
}
