package dev.ar4j.internal.rendezvous;

import dev.ar4j.BuildAbortedException;
import dev.ar4j.PeerLostException;
import dev.ar4j.rendezvous.Rendezvous;
import dev.ar4j.rendezvous.RendezvousException;
import dev.ar4j.rendezvous.RendezvousSettings;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A rank that aborts ends its waits and its peers' at once, through the TCP and the in-process
 * rendezvous: the whole rank ({@link Rendezvous#abortRank}, a loss its peers are told of), or one
 * sub-group's scope ({@link SubGroupRendezvous#abortRank}: its members' and its own waits in that
 * sub-group end, the parent group and its other sub-groups go on). Every wait here has a 60 s
 * timeout, so a wait that ended within the asserted bound was ended by the abort. Also: an
 * interrupted TCP wait breaks its connection (instead of leaving its late reply to the next
 * request), an {@link AbortSignal} ends a connect in progress, a rank's aborted scopes are
 * bounded, and (for contrast) a TCP rank that closes with a goodbye ends its peers' waits without
 * being reported lost.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RendezvousAbortTest {

    private static final JobToken TOKEN = JobToken.of("rendezvous-abort-test-secret");
    private static final Duration LONG = Duration.ofSeconds(60);
    /** Far below LONG: a wait that ended within it was ended by the abort, not by its timeout. */
    private static final long PROMPT_MILLIS = 3_000;

    /** Three ranks of one group, over TCP (a server in this JVM) or in process. */
    private static final class Group implements AutoCloseable {
        final List<Rendezvous> ranks = new ArrayList<>();
        final TcpRendezvousServer server;

        Group(String kind, int worldSize) {
            if (kind.equals("tcp")) {
                server = TcpRendezvousServer.start(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), worldSize,
                        TOKEN, RendezvousSettings.resolve(new java.util.Properties(), java.util.Map.of()));
                for (int r = 0; r < worldSize; r++) {
                    ranks.add(TcpRendezvous.builder().rank(r).worldSize(worldSize).serve(false).serverPort(server.port())
                            .token(TOKEN).connectTimeout(Duration.ofSeconds(10)).closeLinger(Duration.ZERO).connect());
                }
            } else {
                server = null;
                InProcessRendezvous group = InProcessRendezvous.create(worldSize);
                for (int r = 0; r < worldSize; r++) {
                    ranks.add(group.forRank(r));
                }
            }
        }

        Rendezvous rank(int r) {
            return ranks.get(r);
        }

        @Override
        public void close() {
            for (Rendezvous r : ranks) {
                r.close();
            }
            if (server != null) {
                server.close();
            }
        }
    }

    private static <T> PeerLostException lostWithin(CompletableFuture<T> wait, long millis) {
        ExecutionException e = assertThrows(ExecutionException.class, () -> wait.get(millis, TimeUnit.MILLISECONDS));
        return assertInstanceOf(PeerLostException.class, e.getCause(), () -> "ended with " + e.getCause());
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "in-process"})
    void aWholeRankAbortEndsThePeersWaitsAndItsOwn(String kind) throws Exception {
        try (Group g = new Group(kind, 3); ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<String> told = new CopyOnWriteArrayList<>();
            g.rank(1).onPeerLost((rank, reason) -> told.add(rank + ": " + reason));
            CompletableFuture<byte[][]> peer1 = CompletableFuture.supplyAsync(
                    () -> g.rank(1).allGather("k", new byte[] {1}, LONG), threads);
            CompletableFuture<byte[][]> peer2 = CompletableFuture.supplyAsync(
                    () -> g.rank(2).allGather("k", new byte[] {2}, LONG), threads);
            // Rank 0's own thread waits for a value nobody publishes.
            CompletableFuture<byte[]> own = CompletableFuture.supplyAsync(
                    () -> g.rank(0).broadcast("never", 2, null, LONG), threads);
            Thread.sleep(300);
            long start = System.nanoTime();
            g.rank(0).abortRank("the test gave up");
            for (CompletableFuture<byte[][]> peer : List.of(peer1, peer2)) {
                PeerLostException lost = lostWithin(peer, PROMPT_MILLIS);
                assertEquals(0, lost.peer(), lost.getMessage());
                assertTrue(lost.getMessage().contains("rank 0 aborted: the test gave up"), lost.getMessage());
            }
            PeerLostException ownEnd = lostWithin(own, PROMPT_MILLIS);
            assertTrue(ownEnd.getMessage().contains("rank 0 aborted: the test gave up")
                    && ownEnd.getMessage().contains("ended with it"), ownEnd.getMessage());
            long elapsed = System.nanoTime() - start;
            TcpRendezvousAttackTest.measured("whole-rank abort (" + kind + ")", "1 call",
                    "both peers' and the rank's own waits: PeerLostException naming it", elapsed);
            long deadline = System.currentTimeMillis() + PROMPT_MILLIS;
            while (told.isEmpty() && System.currentTimeMillis() < deadline) {
                Thread.sleep(10);
            }
            assertEquals(1, told.size(), "rank 1's listener: " + told);
            assertTrue(told.get(0).startsWith("0: ") && told.get(0).contains("aborted"), told.get(0));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "in-process"})
    void aSubGroupAbortEndsItsMembersWaitsAndLeavesTheParentAndOtherSubGroupsWorking(String kind) throws Exception {
        try (Group g = new Group(kind, 4); ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<String> told = new CopyOnWriteArrayList<>();
            for (int r = 0; r < 4; r++) {
                int rank = r;
                g.rank(r).onPeerLost((lost, reason) -> told.add("rank " + rank + " told of " + lost + ": " + reason));
            }
            // Colors: ranks 0, 1, 2 -> color 0; rank 3 -> color 1 (the plan every rank would agree).
            int[] colors = {0, 0, 0, 1};
            int[] keys = {0, 1, 2, 0};
            long[] nonces = {11, 12, 13, 14};
            SubGroupRendezvous[] sub = new SubGroupRendezvous[4];
            for (int r = 0; r < 4; r++) {
                sub[r] = SubGroupRendezvous.over(g.rank(r), SplitPlan.of(colors, keys, nonces, r, "test/split/0"));
            }
            // Sub-ranks 0 and 1 wait in an all-gather for sub-rank 2, which is late: sub-rank 0's contribution is
            // already published, so sub-rank 1's wait is not for the aborting member's key, and still ends.
            CompletableFuture<byte[][]> member = CompletableFuture.supplyAsync(
                    () -> sub[1].allGather("k", new byte[] {1}, LONG), threads);
            CompletableFuture<byte[][]> own = CompletableFuture.supplyAsync(
                    () -> sub[0].allGather("k", new byte[] {0}, LONG), threads);
            Thread.sleep(300);
            long start = System.nanoTime();
            sub[0].abortRank("sub-communicator aborted by the test");
            PeerLostException lost = lostWithin(member, PROMPT_MILLIS);
            assertEquals(0, lost.peer(), "the sub-rank of the aborted member: " + lost.getMessage());
            assertTrue(lost.getMessage().contains("aborted sub-group color 0")
                    && lost.getMessage().contains("sub-communicator aborted by the test"), lost.getMessage());
            PeerLostException ownEnd = lostWithin(own, PROMPT_MILLIS);
            assertTrue(ownEnd.getMessage().contains("sub-communicator aborted by the test"), ownEnd.getMessage());
            long elapsed = System.nanoTime() - start;
            TcpRendezvousAttackTest.measured("sub-group abort (" + kind + ")", "1 call",
                    "the member's and the aborting rank's own waits in the sub-group: PeerLostException", elapsed);
            // The late member still gets the all-gather (every contribution was published before the abort); its
            // next wait in the sub-group ends at once. The other sub-group and the parent group go on, and nobody
            // was told of a loss.
            assertArrayEquals(new byte[] {0}, sub[2].allGather("k", new byte[] {2}, LONG)[0]);
            lostWithin(CompletableFuture.runAsync(() -> sub[2].barrier("late", LONG), threads), PROMPT_MILLIS);
            assertArrayEquals(new byte[] {3}, sub[3].allGather("k", new byte[] {3}, LONG)[0]);
            List<CompletableFuture<byte[][]>> parent = new ArrayList<>();
            for (int r = 0; r < 4; r++) {
                int rank = r;
                parent.add(CompletableFuture.supplyAsync(
                        () -> g.rank(rank).allGather("after", new byte[] {(byte) rank}, LONG), threads));
            }
            for (CompletableFuture<byte[][]> p : parent) {
                byte[][] all = p.get(10, TimeUnit.SECONDS);
                for (int r = 0; r < 4; r++) {
                    assertArrayEquals(new byte[] {(byte) r}, all[r]);
                }
            }
            assertTrue(told.isEmpty(), "a sub-group's abort is no loss of the parent: " + told);
            // The aborted view refuses later calls; its peer's later waits on it end at once too.
            assertThrows(PeerLostException.class, () -> sub[0].barrier("later", LONG));
            lostWithin(CompletableFuture.runAsync(() -> sub[1].barrier("later", LONG), threads), PROMPT_MILLIS);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "in-process"})
    void aNestedSubGroupAbortEndsItsWaitsButNotTheOuterSubGroups(String kind) throws Exception {
        try (Group g = new Group(kind, 4); ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            // Outer: all four ranks, reversed (outer sub-rank j is parent rank 3 - j); inner: outer sub-ranks {0, 1}
            // (parent ranks 3 and 2) and {2, 3} (parent ranks 1 and 0).
            int[] allOne = {0, 0, 0, 0};
            int[] reversed = {3, 2, 1, 0};
            SubGroupRendezvous[] outer = new SubGroupRendezvous[4];
            for (int r = 0; r < 4; r++) {
                outer[r] = SubGroupRendezvous.over(g.rank(r), SplitPlan.of(allOne, reversed, new long[] {1, 2, 3, 4}, r,
                        "test/split/outer"));
            }
            SubGroupRendezvous[] inner = new SubGroupRendezvous[4];
            for (int r = 0; r < 4; r++) {
                int outerRank = outer[r].rank();
                inner[r] = SubGroupRendezvous.over(outer[r], SplitPlan.of(new int[] {0, 0, 1, 1}, new int[] {0, 1, 0, 1},
                        new long[] {5, 6, 7, 8}, outerRank, "test/split/inner"));
            }
            // Parent rank 2 is outer sub-rank 1, inner sub-rank 1 of color 0 (with parent rank 3 as inner sub-rank 0).
            assertEquals(1, inner[2].rank());
            assertEquals(0, inner[3].rank());
            CompletableFuture<byte[][]> member = CompletableFuture.supplyAsync(
                    () -> inner[3].allGather("k", new byte[] {3}, LONG), threads);
            Thread.sleep(300);
            inner[2].abortRank("inner aborted by the test");
            PeerLostException lost = lostWithin(member, PROMPT_MILLIS);
            assertEquals(1, lost.peer(), lost.getMessage());
            assertTrue(lost.getMessage().contains("inner aborted by the test")
                    && lost.getMessage().contains("top-level rank 2"), lost.getMessage());
            // The outer sub-group, parent rank 2 included, goes on.
            List<CompletableFuture<byte[][]>> outerGather = new ArrayList<>();
            for (int r = 0; r < 4; r++) {
                int rank = r;
                outerGather.add(CompletableFuture.supplyAsync(
                        () -> outer[rank].allGather("after", new byte[] {(byte) rank}, LONG), threads));
            }
            for (CompletableFuture<byte[][]> o : outerGather) {
                byte[][] all = o.get(10, TimeUnit.SECONDS);
                for (int j = 0; j < 4; j++) {
                    assertArrayEquals(new byte[] {(byte) (3 - j)}, all[j], "outer sub-rank " + j);
                }
            }
            // The other inner sub-group too.
            CompletableFuture<byte[][]> other = CompletableFuture.supplyAsync(
                    () -> inner[1].allGather("k", new byte[] {1}, LONG), threads);
            assertArrayEquals(new byte[] {1}, inner[0].allGather("k", new byte[] {0}, LONG)[0]);
            assertArrayEquals(new byte[] {0}, other.get(10, TimeUnit.SECONDS)[1]);
        }
    }

    @Test
    void anInterruptedTcpWaitBreaksItsConnectionInsteadOfLeavingItsReplyToTheNextRequest() throws Exception {
        try (Group g = new Group("tcp", 2)) {
            Thread waiter = Thread.currentThread();
            Thread interrupter = Thread.ofVirtual().start(() -> {
                try {
                    Thread.sleep(300);
                } catch (InterruptedException ignored) {
                    return;
                }
                waiter.interrupt();
            });
            RendezvousException e = assertThrows(RendezvousException.class,
                    () -> g.rank(0).allGather("k", new byte[] {0}, LONG));
            assertTrue(Thread.interrupted(), "the interrupt status is kept");
            interrupter.join();
            assertTrue(e.getMessage().contains("interrupted") && e.getMessage().contains("close it"), e.getMessage());
            // Rank 1 arrives now: the server answers the abandoned GET late; rank 0's next request must not take
            // that reply as its own.
            g.rank(1).allGather("k", new byte[] {1}, LONG);
            PeerLostException next = assertThrows(PeerLostException.class,
                    () -> g.rank(0).broadcast("other", 1, null, LONG));
            assertTrue(next.getMessage().contains("interrupted"), next.getMessage());
        }
    }

    @Test
    void anAbortSignalEndsAConnectWhoseServerIsNotThere() throws Exception {
        int freePort;
        try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            freePort = probe.getLocalPort();
        }
        AbortSignal abort = new AbortSignal();
        CompletableFuture<TcpRendezvous> connecting = CompletableFuture.supplyAsync(() -> TcpRendezvous.builder().rank(1)
                .worldSize(2).serve(false).serverPort(freePort).token(TOKEN).connectTimeout(LONG).abortSignal(abort)
                .connect());
        Thread.sleep(500);
        long start = System.nanoTime();
        abort.abort("the job was cancelled");
        ExecutionException e = assertThrows(ExecutionException.class, () -> connecting.get(PROMPT_MILLIS, TimeUnit.MILLISECONDS));
        BuildAbortedException aborted = assertInstanceOf(BuildAbortedException.class, e.getCause());
        assertTrue(aborted.getMessage().contains("the job was cancelled")
                && aborted.getMessage().contains("connecting to the rendezvous server"), aborted.getMessage());
        TcpRendezvousAttackTest.measured("abort of a connect to a server not yet started", "1 call",
                "BuildAbortedException", System.nanoTime() - start);
    }

    @Test
    void anAbortSignalEndsAHandshakeThatTheServerNeverAnswers() throws Exception {
        try (ServerSocket silent = new ServerSocket(0, 8, InetAddress.getLoopbackAddress())) {
            List<Socket> accepted = new CopyOnWriteArrayList<>();
            Thread acceptor = Thread.ofVirtual().start(() -> {
                try {
                    while (true) {
                        accepted.add(silent.accept());  // accepted, never answered
                    }
                } catch (IOException closed) {
                    // the test ends
                }
            });
            AbortSignal abort = new AbortSignal();
            RendezvousSettings settings = RendezvousSettings.resolve(new java.util.Properties(), java.util.Map.of());
            CompletableFuture<TcpRendezvous> connecting = CompletableFuture.supplyAsync(() -> TcpRendezvous.builder()
                    .rank(1).worldSize(2).serve(false).serverPort(silent.getLocalPort()).token(TOKEN).connectTimeout(LONG)
                    .settings(settings).abortSignal(abort).connect());
            long deadline = System.currentTimeMillis() + 5_000;
            while (accepted.isEmpty() && System.currentTimeMillis() < deadline) {
                Thread.sleep(10);
            }
            assertTrue(!accepted.isEmpty(), "the client never connected");
            Thread.sleep(200);  // it now waits in its handshake, for the server's CHALLENGE (10 s by default)
            long start = System.nanoTime();
            abort.abort("the job was cancelled");
            ExecutionException e = assertThrows(ExecutionException.class,
                    () -> connecting.get(PROMPT_MILLIS, TimeUnit.MILLISECONDS));
            BuildAbortedException aborted = assertInstanceOf(BuildAbortedException.class, e.getCause());
            assertTrue(aborted.getMessage().contains("joining the rendezvous server"), aborted.getMessage());
            long elapsed = System.nanoTime() - start;
            assertTrue(elapsed < TimeUnit.SECONDS.toNanos(2), "took " + elapsed / 1_000_000 + " ms");
            silent.close();
            acceptor.join();
            for (Socket s : accepted) {
                s.close();
            }
        }
    }

    @Test
    void aRankAbortsAtMost256ScopesAndAScopeAbortedTwiceKeepsItsFirstReason() {
        AbortedScopes scopes = new AbortedScopes(2);
        for (int i = 0; i < AbortedScopes.MAX_SCOPES_PER_RANK; i++) {
            assertTrue(scopes.add(1, "ns/" + i + "/", "rank 1 aborted scope " + i));
        }
        assertTrue(scopes.add(1, "ns/0/", "a second reason"), "a scope aborted again is no new scope");
        assertEquals(false, scopes.add(1, "ns/256/", "one too many"), "the 257th scope of a rank is dropped");
        assertTrue(scopes.add(0, "ns/256/", "rank 0 aborted it"), "the bound is per rank");
        PeerLostException first = scopes.check(List.of("1/bc/1/ns/0/5/1"), new int[] {0}, 0);
        assertTrue(first != null && first.getMessage().startsWith("rank 1 aborted scope 0;"), String.valueOf(first));
        assertEquals(1, first.peer());
        assertEquals(null, scopes.check(List.of("1/bc/1/other/5/1"), new int[] {0}, 0), "outside every scope");
        assertEquals(null, scopes.check(List.of("1/bc/1/ns/2/5/1"), new int[0], 0), "a key already present");
    }

    @Test
    void aTcpRankThatClosesBeforeContributingFailsTheWaitersAtOnceWithoutALoss() throws Exception {
        try (Group g = new Group("tcp", 3); ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<String> told = new CopyOnWriteArrayList<>();
            g.rank(1).onPeerLost((rank, reason) -> told.add(rank + ": " + reason));
            CompletableFuture<byte[][]> waiting = CompletableFuture.supplyAsync(
                    () -> g.rank(1).allGather("k", new byte[] {1}, LONG), threads);
            Thread.sleep(300);
            g.rank(2).close();  // says goodbye, never contributed
            PeerLostException left = lostWithin(waiting, PROMPT_MILLIS);
            assertEquals(2, left.peer(), left.getMessage());
            assertTrue(left.getMessage().contains("rank 2 left the group") && left.getMessage().contains("without publishing"),
                    left.getMessage());
            Thread.sleep(300);
            assertTrue(told.isEmpty(), "a goodbye is no loss: " + told);
        }
    }
}
