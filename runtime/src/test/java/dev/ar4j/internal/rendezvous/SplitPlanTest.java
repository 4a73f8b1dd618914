package dev.ar4j.internal.rendezvous;

import dev.ar4j.OutOfStepException;
import dev.ar4j.rendezvous.*;

import dev.ar4j.internal.rendezvous.InProcessRendezvous;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Who joins which sub-group in {@link Communicator#split}, and what is refused on every rank. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class SplitPlanTest {

    private static final Duration WAIT = Duration.ofSeconds(10);
    /** Each rank's random number (0x0b, 0x16, ...): the first member's names the namespace. */
    private static final long[] NONCES = {11, 22, 33, 44, 55, 66};

    @Test
    void membersAreOrderedByKeyThenParentRank() {
        int[] colors = {1, 0, 1, 1, 0, 1};
        int[] keys = {5, 0, 2, 5, 0, -1};
        SplitPlan p0 = SplitPlan.of(colors, keys, NONCES, 0, "s/3");
        assertArrayEquals(new int[] {5, 2, 0, 3}, p0.members(), "key -1, 2, 5, 5 (ties by rank)");
        assertEquals(2, p0.subRank());
        assertEquals(1, p0.color());
        assertEquals("s/3/1/42/", p0.namespace(), "step, color, the first member's (rank 5's) number in hex");
        SplitPlan p4 = SplitPlan.of(colors, keys, NONCES, 4, "s/3");
        assertArrayEquals(new int[] {1, 4}, p4.members());
        assertEquals(1, p4.subRank());
        assertNotEquals(p0.namespace(), p4.namespace());
        assertTrue(p0.joins());
    }

    @Test
    void twoSplitsAtTheSameStepOfCommunicatorsSharingARendezvousGetTheirOwnNamespaces() {
        int[] colors = {0, 0};
        int[] keys = {0, 0};
        assertNotEquals(SplitPlan.of(colors, keys, new long[] {1, 2}, 0, "s/0").namespace(),
                SplitPlan.of(colors, keys, new long[] {3, 2}, 0, "s/0").namespace());
    }

    @Test
    void colorMinusOneJoinsNothing() {
        SplitPlan p = SplitPlan.of(new int[] {-1, 0, 0}, new int[] {0, 0, 0}, NONCES, 0, "s/0");
        assertFalse(p.joins());
        assertEquals(-1, p.subRank());
        assertEquals(0, p.members().length);
        assertArrayEquals(new int[] {1, 2}, SplitPlan.of(new int[] {-1, 0, 0}, new int[] {0, 0, 0}, NONCES, 2, "s/0").members());
    }

    @Test
    void aColorBelowMinusOneIsRefusedOnEveryRankNamingTheRank() throws Exception {
        InProcessRendezvous group = InProcessRendezvous.create(3);
        ExecutorService pool = Executors.newFixedThreadPool(3);
        try {
            List<Future<String>> messages = new ArrayList<>();
            for (int r = 0; r < 3; r++) {
                int rank = r;
                messages.add(pool.submit(() -> assertThrows(IllegalArgumentException.class,
                        () -> SplitPlan.agree(group.forRank(rank), "ar4j/comm/split/0", rank == 2 ? -7 : 0, 0, WAIT))
                        .getMessage()));
            }
            for (Future<String> m : messages) {
                String text = m.get(20, TimeUnit.SECONDS);
                assertTrue(text.contains("refused on every rank") && text.contains("rank 2 gave color -7")
                        && text.contains("0 or more") && text.contains("-1 to join none"), text);
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aMalformedRecordIsNamed() throws Exception {
        InProcessRendezvous group = InProcessRendezvous.create(2);
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            Future<byte[][]> stranger = pool.submit(() -> group.forRank(1).allGather("ar4j/comm/split/0",
                    new byte[] {9, 9}, WAIT));
            OutOfStepException e = assertThrows(OutOfStepException.class,
                    () -> SplitPlan.agree(group.forRank(0), "ar4j/comm/split/0", 0, 0, WAIT));
            assertTrue(e.getMessage().contains("rank 1 sent a malformed split record")
                    && e.getMessage().contains("same ar4j version"), e.getMessage());
            assertEquals(2, stranger.get(10, TimeUnit.SECONDS).length);
        } finally {
            pool.shutdownNow();
        }
    }
}
