package dev.ar4j.internal.rendezvous;

import dev.ar4j.OutOfStepException;
import dev.ar4j.rendezvous.*;

import dev.ar4j.internal.rendezvous.DroppableRank;
import dev.ar4j.internal.rendezvous.InProcessRendezvous;
import dev.ar4j.PeerLostException;
import dev.ar4j.rendezvous.Rendezvous;
import dev.ar4j.rendezvous.RendezvousTimeoutException;
import dev.ar4j.internal.rendezvous.TcpRendezvous;
import dev.ar4j.internal.rendezvous.TcpRendezvousServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The sub-group rendezvous of {@link Communicator#split} over an in-process group and over a real
 * TCP group of 4 ranks split into colors {0, 1} by rank % 2 with keys reversing the order: each
 * sub-group's collectives see exactly its members in sub-rank order, keys never collide between
 * colors or successive splits, members out of step are named, and a lost rank is reported to its
 * own sub-group only.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SubGroupRendezvousTest {

    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final int WORLD = 4;
    private static final long[] NONCES = {11, 22, 33, 44};

    /** What one parent rank saw through its sub-group. */
    record Seen(int parentRank, SplitPlan plan, List<String> gathered, String broadcast, List<String> again,
                String sharedValue) {
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static List<String> strings(byte[][] values) {
        List<String> out = new ArrayList<>();
        for (byte[] v : values) {
            out.add(new String(v, StandardCharsets.UTF_8));
        }
        return out;
    }

    private static <T> List<T> onEveryRank(int n, IntFunction<T> task) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            List<Future<T>> futures = new ArrayList<>();
            for (int r = 0; r < n; r++) {
                int rank = r;
                futures.add(pool.submit(() -> task.apply(rank)));
            }
            List<T> results = new ArrayList<>();
            for (Future<T> f : futures) {
                results.add(f.get(40, TimeUnit.SECONDS));
            }
            return results;
        } finally {
            pool.shutdownNow();
        }
    }

    /** Split by color rank % 2, key -rank; then gather, broadcast from sub-rank 1, barrier, gather again, set/get. */
    private static Seen exercise(Rendezvous parent) {
        int me = parent.rank();
        SplitPlan plan = SplitPlan.agree(parent, "ar4j/comm/split/0", me % 2, -me, WAIT);
        try (SubGroupRendezvous sub = SubGroupRendezvous.over(parent, plan)) {
            List<String> gathered = strings(sub.allGather("ids", utf8("p" + me), WAIT));
            byte[] b = sub.broadcast("uid", 1, sub.rank() == 1 ? utf8("from p" + me) : null, WAIT);
            sub.barrier("sync", WAIT);
            List<String> again = strings(sub.allGather("ids", utf8("q" + me), WAIT));
            if (sub.rank() == 0) {
                sub.set("shared", utf8("color " + plan.color()));
            }
            String shared = new String(sub.get("shared", WAIT), StandardCharsets.UTF_8);
            sub.barrier("done", WAIT);  // no member leaves before every member has read
            return new Seen(me, plan, gathered, new String(b, StandardCharsets.UTF_8), again, shared);
        }
    }

    private static void checkSplit(List<Seen> seen) {
        for (Seen s : seen) {
            int color = s.parentRank() % 2;
            // Keys -rank reverse the order: color 0 is parent ranks {2, 0}, color 1 is {3, 1}.
            int[] expectedMembers = color == 0 ? new int[] {2, 0} : new int[] {3, 1};
            assertArrayEquals(expectedMembers, s.plan().members(), "members of " + s);
            assertEquals(s.parentRank() < 2 ? 1 : 0, s.plan().subRank(), "sub-rank of parent rank " + s.parentRank());
            assertEquals(List.of("p" + expectedMembers[0], "p" + expectedMembers[1]), s.gathered(), "gather of " + s);
            assertEquals("from p" + expectedMembers[1], s.broadcast(), "broadcast from sub-rank 1 in " + s);
            assertEquals(List.of("q" + expectedMembers[0], "q" + expectedMembers[1]), s.again(),
                    "a repeated key must give the new values, not the first round's: " + s);
            assertEquals("color " + color, s.sharedValue(), "set/get stays inside its color: " + s);
        }
        assertNotEquals(seen.get(0).plan().namespace(), seen.get(1).plan().namespace(), "colors share a namespace");
    }

    @Test
    void inProcessGroupSplitsIntoTwoOrderedSubGroups() throws Exception {
        InProcessRendezvous group = InProcessRendezvous.create(WORLD);
        checkSplit(onEveryRank(WORLD, r -> exercise(group.forRank(r))));
    }

    @Test
    void tcpGroupSplitsIntoTwoOrderedSubGroups() throws Exception {
        try (TcpRendezvousServer server = TcpRendezvousServer.start(
                new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), WORLD)) {
            checkSplit(onEveryRank(WORLD, r -> {
                try (TcpRendezvous rv = tcpRank(server, r)) {
                    Seen seen = exercise(rv);
                    rv.barrier("leave", WAIT);
                    return seen;
                }
            }));
        }
    }

    private static TcpRendezvous tcpRank(TcpRendezvousServer server, int rank) {
        return TcpRendezvous.builder().rank(rank).worldSize(WORLD).serve(false).serverPort(server.port())
                .connectTimeout(WAIT).closeLinger(Duration.ZERO).connect();
    }

    @Test
    void successiveSplitsAndColorsNeverShareAKey() throws Exception {
        InProcessRendezvous group = InProcessRendezvous.create(WORLD);
        List<List<String>> seen = onEveryRank(WORLD, r -> {
            Rendezvous parent = group.forRank(r);
            // Two live splits with the same colors but other members: by rank % 2, then by rank / 2.
            SplitPlan first = SplitPlan.agree(parent, "ar4j/comm/split/1", r % 2, r, WAIT);
            SplitPlan second = SplitPlan.agree(parent, "ar4j/comm/split/2", r / 2, r, WAIT);
            try (SubGroupRendezvous a = SubGroupRendezvous.over(parent, first);
                 SubGroupRendezvous b = SubGroupRendezvous.over(parent, second)) {
                List<String> out = new ArrayList<>();
                for (int i = 0; i < 3; i++) {
                    out.add(String.join(",", strings(a.allGather("x", utf8("a" + r), WAIT))));
                    out.add(String.join(",", strings(b.allGather("x", utf8("b" + r), WAIT))));
                }
                a.barrier("end", WAIT);
                b.barrier("end", WAIT);
                return out;
            }
        });
        for (int r = 0; r < WORLD; r++) {
            String byParity = r % 2 == 0 ? "a0,a2" : "a1,a3";
            String byHalf = r / 2 == 0 ? "b0,b1" : "b2,b3";
            assertEquals(List.of(byParity, byHalf, byParity, byHalf, byParity, byHalf), seen.get(r), "rank " + r);
        }
        // The keys themselves: disjoint across colors and splits, for every call and contributor.
        Set<String> keys = new HashSet<>();
        int expected = 0;
        for (String step : List.of("ar4j/comm/split/1", "ar4j/comm/split/2")) {
            for (int color = 0; color < 2; color++) {
                int[] colors = {color, color, color, color};
                SplitPlan plan = SplitPlan.of(colors, new int[WORLD], NONCES, 0, step);
                SubGroupRendezvous view = SubGroupRendezvous.over(InProcessRendezvous.create(WORLD).forRank(0), plan);
                for (long call = 0; call < 20; call++) {
                    for (int from = 0; from < WORLD; from++) {
                        keys.add(view.contributionKey(call, from));
                        expected++;
                    }
                }
                keys.add(view.sharedKey("k"));
                expected++;
                view.close();
            }
        }
        assertEquals(expected, keys.size(), "two keys of different colors, splits, calls or members coincide");
    }

    @Test
    void membersOutOfStepAreNamedInsteadOfGettingWrongValues() throws Exception {
        InProcessRendezvous group = InProcessRendezvous.create(2);
        List<String> messages = onEveryRank(2, r -> {
            SplitPlan plan = SplitPlan.of(new int[] {0, 0}, new int[] {0, 1}, NONCES, r, "ar4j/comm/split/0");
            try (SubGroupRendezvous sub = SubGroupRendezvous.over(group.forRank(r), plan)) {
                OutOfStepException e = assertThrows(OutOfStepException.class, () -> {
                    if (r == 0) {
                        sub.allGather("a", new byte[] {1}, WAIT);
                    } else {
                        sub.barrier("b", WAIT);
                    }
                });
                return e.getMessage();
            }
        });
        for (String m : messages) {
            assertTrue(m.contains("out of step") && m.contains("allGather 'a'") && m.contains("barrier 'b'"), m);
        }
    }

    @Test
    void aWaitForAMemberThatNeverComesTimesOutNamingIt() {
        InProcessRendezvous group = InProcessRendezvous.create(WORLD);
        SplitPlan plan = SplitPlan.of(new int[] {0, 1, 0, 1}, new int[] {0, 0, 0, 0}, NONCES, 0, "ar4j/comm/split/0");
        try (SubGroupRendezvous sub = SubGroupRendezvous.over(group.forRank(0), plan)) {
            long start = System.nanoTime();
            RendezvousTimeoutException e = assertThrows(RendezvousTimeoutException.class,
                    () -> sub.allGather("lonely", new byte[0], Duration.ofMillis(300)));
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertEquals(List.of(1), e.missingRanks(), e.getMessage());
            assertTrue(e.getMessage().contains("sub-rank 1 (parent rank 2)"), e.getMessage());
            assertTrue(ms < 3_000, "the wait took " + ms + " ms for a 300 ms timeout");
        }
    }

    @Test
    void argumentsAreCheckedNamingWhatIsAccepted() {
        InProcessRendezvous group = InProcessRendezvous.create(2);
        SplitPlan plan = SplitPlan.of(new int[] {0, 0}, new int[] {0, 0}, NONCES, 0, "ar4j/comm/split/0");
        SubGroupRendezvous sub = SubGroupRendezvous.over(group.forRank(0), plan);
        assertTrue(assertThrows(IllegalArgumentException.class, () -> sub.broadcast("k", 2, null, WAIT))
                .getMessage().contains("sub-ranks 0..1"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> sub.broadcast("k", 0, null, WAIT))
                .getMessage().contains("must pass the value"));
        assertThrows(IllegalArgumentException.class, () -> sub.allGather("", new byte[0], WAIT));
        assertThrows(IllegalArgumentException.class, () -> sub.barrier("k", Duration.ZERO));
        String longKey = "k".repeat(Rendezvous.MAX_KEY_BYTES);
        sub.set(longKey, new byte[] {7});  // too long for the parent with the namespace: hashed
        assertArrayEquals(new byte[] {7}, sub.get(longKey, WAIT));
        assertTrue(assertThrows(IllegalArgumentException.class,
                () -> sub.allGather("k", new byte[Rendezvous.MAX_VALUE_BYTES], WAIT)).getMessage().contains("at most"));
        SplitPlan none = SplitPlan.of(new int[] {-1, 0}, new int[] {0, 0}, NONCES, 0, "ar4j/comm/split/0");
        assertThrows(IllegalArgumentException.class, () -> SubGroupRendezvous.over(group.forRank(0), none));
        sub.close();
        assertTrue(assertThrows(IllegalStateException.class, () -> sub.barrier("k", WAIT)).getMessage()
                .contains("closed"));
        // The parent stays open after the view's close.
        assertEquals(1, group.forRank(0).broadcast("still-open", 0, new byte[] {1}, WAIT)[0]);
    }

    /** Records what a view's listener was told. */
    private static final class Losses {
        final List<String> told = new CopyOnWriteArrayList<>();
        final CountDownLatch once = new CountDownLatch(1);

        void listen(Rendezvous rv) {
            rv.onPeerLost((rank, reason) -> {
                told.add(rank + ": " + reason);
                once.countDown();
            });
        }
    }

    @Test
    void aLostRankOfAnInProcessGroupIsReportedToItsSubGroupOnly() throws Exception {
        InProcessRendezvous group = InProcessRendezvous.create(WORLD);
        int[] colors = {0, 1, 0, 1};
        int[] keys = {0, -1, -2, -3};
        List<SubGroupRendezvous> views = new ArrayList<>();
        List<Losses> losses = new ArrayList<>();
        for (int r = 0; r < WORLD; r++) {
            views.add(SubGroupRendezvous.over(group.forRank(r), SplitPlan.of(colors, keys, NONCES, r, "ar4j/comm/split/0")));
            Losses l = new Losses();
            l.listen(views.get(r));
            losses.add(l);
        }
        // Parent rank 1 (sub-rank 1 of color 1; rank 3 is its sub-rank 0) waits for rank 3.
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            Future<PeerLostException> waiter = pool.submit(() -> assertThrows(PeerLostException.class,
                    () -> views.get(1).allGather("never", new byte[0], WAIT)));
            Thread.sleep(200);
            long abortedAt = System.nanoTime();
            group.abort(3, "test kill");
            PeerLostException e = waiter.get(5, TimeUnit.SECONDS);
            assertTrue(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - abortedAt) < 2_000, "the wait did not end at once");
            assertEquals(0, e.peer(), "the lost rank in sub-group terms: " + e.getMessage());
            assertTrue(e.getMessage().contains("parent rank 3"), e.getMessage());
        } finally {
            pool.shutdownNow();
        }
        // InProcessRendezvous tells its listeners on the aborting thread: every report is in.
        for (int r : new int[] {1, 3}) {
            assertEquals(1, losses.get(r).told.size(), "color 1's rank " + r + ": " + losses.get(r).told);
            assertTrue(losses.get(r).told.get(0).startsWith("0: ") && losses.get(r).told.get(0).contains("test kill"),
                    losses.get(r).told.toString());
        }
        for (int r : new int[] {0, 2}) {
            assertEquals(List.of(), losses.get(r).told, "color 0 must not hear of rank 3's loss");
        }
        // Color 0 still works.
        List<Integer> sizes = onEveryRank(2, i -> views.get(i * 2).allGather("alive", new byte[] {1}, WAIT).length);
        assertEquals(List.of(2, 2), sizes);
        views.forEach(SubGroupRendezvous::close);
    }

    @Test
    void aLostRankOfATcpGroupIsReportedToItsSubGroupOnly() throws Exception {
        int[] colors = {0, 1, 0, 1};
        int[] keys = {0, -1, -2, -3};
        try (TcpRendezvousServer server = TcpRendezvousServer.start(
                new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), WORLD)) {
            List<TcpRendezvous> ranks = onEveryRank(3, r -> tcpRank(server, r));
            DroppableRank rank3 = DroppableRank.join(server, 3);
            List<SubGroupRendezvous> views = new ArrayList<>();
            List<Losses> losses = new ArrayList<>();
            List<Losses> parentLosses = new ArrayList<>();
            ExecutorService pool = Executors.newSingleThreadExecutor();
            try {
                for (int r = 0; r < 3; r++) {
                    views.add(SubGroupRendezvous.over(ranks.get(r), SplitPlan.of(colors, keys, NONCES, r, "ar4j/comm/split/0")));
                    Losses l = new Losses();
                    l.listen(views.get(r));
                    losses.add(l);
                    Losses p = new Losses();  // subscribed after the view: told after the view's forwarder ran
                    p.listen(ranks.get(r));
                    parentLosses.add(p);
                }
                Future<PeerLostException> waiter = pool.submit(() -> assertThrows(PeerLostException.class,
                        () -> views.get(1).allGather("never", new byte[0], WAIT)));
                Thread.sleep(200);
                long droppedAt = System.nanoTime();
                rank3.drop();
                PeerLostException e = waiter.get(8, TimeUnit.SECONDS);
                assertTrue(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - droppedAt) < 5_000,
                        "the wait did not end at the loss");
                assertEquals(0, e.peer(), "parent rank 3 is sub-rank 0 of color 1: " + e.getMessage());
                assertTrue(losses.get(1).once.await(8, TimeUnit.SECONDS), "color 1 was not told");
                assertTrue(losses.get(1).told.get(0).startsWith("0: "), losses.get(1).told.toString());
                for (int r : new int[] {0, 2}) {
                    assertTrue(parentLosses.get(r).once.await(8, TimeUnit.SECONDS), "the parent of rank " + r
                            + " was not told (the control)");
                    assertTrue(parentLosses.get(r).told.get(0).startsWith("3: "), parentLosses.get(r).told.toString());
                    assertEquals(List.of(), losses.get(r).told, "color 0 must not hear of rank 3's loss");
                }
                assertEquals(List.of(2, 2), onEveryRank(2, i -> views.get(i * 2).allGather("alive", new byte[] {1},
                        WAIT).length), "color 0 keeps working");
            } finally {
                pool.shutdownNow();
                views.forEach(SubGroupRendezvous::close);
                ranks.forEach(TcpRendezvous::close);
            }
        }
    }

    @Test
    void abortFailsTheViewsLaterCallsAndTellsItsListeners() {
        InProcessRendezvous group = InProcessRendezvous.create(2);
        SplitPlan plan = SplitPlan.of(new int[] {0, 0}, new int[] {0, 0}, NONCES, 1, "ar4j/comm/split/0");
        SubGroupRendezvous sub = SubGroupRendezvous.over(group.forRank(1), plan);
        Losses l = new Losses();
        l.listen(sub);
        sub.abortRank("user abort");
        assertEquals(1, l.told.size());
        assertTrue(l.told.get(0).startsWith("1: ") && l.told.get(0).contains("user abort"), l.told.toString());
        PeerLostException e = assertThrows(PeerLostException.class, () -> sub.barrier("after", WAIT));
        assertEquals(1, e.peer());
        Losses late = new Losses();
        late.listen(sub);
        assertEquals(1, late.told.size(), "a listener added after the loss is told at once");
        // The parent was not declared lost: its other rank's waits on rank 1 are not ended by the abort.
        assertInstanceOf(RendezvousTimeoutException.class, assertThrows(RuntimeException.class,
                () -> group.forRank(0).broadcast("from-1", 1, null, Duration.ofMillis(100))));
        sub.close();
    }
}
