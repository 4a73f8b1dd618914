package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.*;

import dev.ar4j.rendezvous.Rendezvous;
import dev.ar4j.rendezvous.RendezvousTimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

@Timeout(value = 20, unit = TimeUnit.SECONDS)
class InProcessRendezvousTest {

    private static final Duration WAIT = Duration.ofSeconds(10);

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static String text(byte[] b) {
        return new String(b, StandardCharsets.UTF_8);
    }

    /** Runs {@code body} on one thread per rank and returns the results by rank. */
    private static <T> List<T> onEveryRank(InProcessRendezvous group, Function<Rendezvous, T> body) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(group.worldSize());
        try {
            List<Future<T>> futures = new ArrayList<>();
            for (int r = 0; r < group.worldSize(); r++) {
                Rendezvous view = group.forRank(r);
                futures.add(pool.submit(() -> body.apply(view)));
            }
            List<T> results = new ArrayList<>();
            for (Future<T> f : futures) {
                results.add(f.get(15, TimeUnit.SECONDS));
            }
            return results;
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void allGatherBroadcastBarrierAcrossFourThreads() throws Exception {
        InProcessRendezvous group = InProcessRendezvous.create(4);
        List<String> results = onEveryRank(group, rv -> {
            StringBuilder out = new StringBuilder();
            byte[][] gathered = rv.allGather("ids", utf8("id" + rv.rank()), WAIT);
            for (byte[] g : gathered) {
                out.append(text(g)).append(' ');
            }
            byte[] root = rv.broadcast("cfg", 2, rv.rank() == 2 ? utf8("from-2") : null, WAIT);
            out.append(text(root)).append(' ');
            rv.barrier("done", WAIT);
            byte[][] again = rv.allGather("ids", utf8("second" + rv.rank()), WAIT);
            out.append(text(again[3]));
            return out.toString();
        });
        for (String r : results) {
            assertEquals("id0 id1 id2 id3 from-2 second3", r);
        }
    }

    @Test
    void barrierHoldsEveryRankUntilTheLastArrives() throws Exception {
        InProcessRendezvous group = InProcessRendezvous.create(3);
        AtomicInteger arrived = new AtomicInteger();
        List<Integer> seenAfterBarrier = onEveryRank(group, rv -> {
            if (rv.rank() == 1) {
                sleep(300);
            }
            arrived.incrementAndGet();
            rv.barrier("b", WAIT);
            return arrived.get();
        });
        assertEquals(List.of(3, 3, 3), seenAfterBarrier);
    }

    @Test
    void repeatedBarriersAndBroadcastsWithOneKeyStayInStep() throws Exception {
        InProcessRendezvous group = InProcessRendezvous.create(3);
        List<String> results = onEveryRank(group, rv -> {
            StringBuilder seen = new StringBuilder();
            for (int round = 0; round < 20; round++) {
                int root = round % 3;
                byte[] v = rv.broadcast("round", root, rv.rank() == root ? utf8("r" + round) : null, WAIT);
                seen.append(text(v)).append(',');
                rv.barrier("step", WAIT);
            }
            return seen.toString();
        });
        assertEquals(results.get(0), results.get(1));
        assertEquals(results.get(0), results.get(2));
        assertTrue(results.get(0).startsWith("r0,r1,r2,r3,"), results.get(0));
    }

    @Test
    void timeoutNamesTheRankThatNeverArrived() throws Exception {
        InProcessRendezvous group = InProcessRendezvous.create(3);
        Duration shortWait = Duration.ofMillis(300);
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            List<Future<RendezvousTimeoutException>> futures = new ArrayList<>();
            for (int r = 0; r < 2; r++) {
                Rendezvous view = group.forRank(r);
                futures.add(pool.submit(() -> assertThrows(RendezvousTimeoutException.class,
                        () -> view.allGather("handles", new byte[] {1}, shortWait))));
            }
            for (Future<RendezvousTimeoutException> f : futures) {
                RendezvousTimeoutException e = f.get(10, TimeUnit.SECONDS);
                assertEquals(List.of(2), e.missingRanks());
                assertEquals("handles", e.key());
                assertEquals(shortWait, e.timeout());
                assertTrue(e.getMessage().contains("allGather 'handles'") && e.getMessage().contains("rank 2 never arrived"),
                        e.getMessage());
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void broadcastAndBarrierTimeoutsNameTheirRanks() {
        InProcessRendezvous group = InProcessRendezvous.create(4);
        Rendezvous rank1 = group.forRank(1);
        RendezvousTimeoutException b = assertThrows(RendezvousTimeoutException.class,
                () -> rank1.broadcast("uid", 3, null, Duration.ofMillis(100)));
        assertEquals(List.of(3), b.missingRanks());
        assertTrue(b.getMessage().contains("root rank 3 never published"), b.getMessage());
        RendezvousTimeoutException bar = assertThrows(RendezvousTimeoutException.class,
                () -> rank1.barrier("sync", Duration.ofMillis(100)));
        assertEquals(List.of(0, 2, 3), bar.missingRanks());
        assertTrue(bar.getMessage().contains("ranks 0, 2, 3 never entered it"), bar.getMessage());
        RendezvousTimeoutException get = assertThrows(RendezvousTimeoutException.class,
                () -> rank1.get("nobody-sets-this", Duration.ofMillis(50)));
        assertEquals(List.of(), get.missingRanks());
        assertTrue(get.getMessage().contains("no rank has set this key"), get.getMessage());
    }

    @Test
    void keyValueSetGetAndCopies() {
        InProcessRendezvous group = InProcessRendezvous.create(2);
        byte[] value = {1, 2, 3};
        group.forRank(0).set("k", value);
        value[0] = 99;
        byte[] read = group.forRank(1).get("k", WAIT);
        assertArrayEquals(new byte[] {1, 2, 3}, read, "the store keeps a copy");
        read[1] = 42;
        assertArrayEquals(new byte[] {1, 2, 3}, group.forRank(1).get("k", WAIT), "readers get copies");
        group.forRank(1).set("k", new byte[] {7});
        assertArrayEquals(new byte[] {7}, group.forRank(0).get("k", WAIT), "set replaces");
    }

    @Test
    void getWaitsForALaterSet() throws Exception {
        InProcessRendezvous group = InProcessRendezvous.create(2);
        List<String> results = onEveryRank(group, rv -> {
            if (rv.rank() == 0) {
                sleep(200);
                rv.set("late", utf8("here"));
                return "set";
            }
            return text(rv.get("late", WAIT));
        });
        assertEquals(List.of("set", "here"), results);
    }

    @Test
    void argumentsAreChecked() {
        assertThrows(IllegalArgumentException.class, () -> InProcessRendezvous.create(0));
        InProcessRendezvous group = InProcessRendezvous.create(2);
        assertThrows(IllegalArgumentException.class, () -> group.forRank(2));
        assertSame(group.forRank(1), group.forRank(1));
        assertNotSame(group.forRank(0), group.forRank(1));
        Rendezvous rv = group.forRank(0);
        assertTrue(assertThrows(IllegalArgumentException.class, () -> rv.broadcast("k", 0, null, WAIT))
                .getMessage().contains("is the root"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> rv.broadcast("k", 5, null, WAIT))
                .getMessage().contains("root 5 is out of range"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> rv.allGather("k", new byte[0], Duration.ZERO))
                .getMessage().contains("must be positive"));
        assertThrows(IllegalArgumentException.class, () -> rv.set("", new byte[0]));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> rv.set("x".repeat(Rendezvous.MAX_KEY_BYTES + 1), new byte[0]))
                .getMessage().contains("too long"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> rv.set("big", new byte[Rendezvous.MAX_VALUE_BYTES + 1]))
                .getMessage().contains("too large"));
        rv.close();
        rv.close();
        assertThrows(IllegalStateException.class, () -> rv.set("k", new byte[0]));
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
