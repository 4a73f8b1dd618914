package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.*;

import dev.ar4j.rendezvous.Rendezvous;
import dev.ar4j.PeerLostException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The in-process group ends waits at once when a participant closes or is aborted, and reports aborts. */
@Timeout(value = 20, unit = TimeUnit.SECONDS)
class InProcessRendezvousLivenessTest {

    private static final Duration LONG = Duration.ofSeconds(30);

    @Test
    void aRankThatClosesBeforeContributingFailsTheWaitersAtOnce() throws Exception {
        InProcessRendezvous group = InProcessRendezvous.create(2);
        Rendezvous rank0 = group.forRank(0);
        CompletableFuture<PeerLostException> waiter = CompletableFuture.supplyAsync(
                () -> assertThrows(PeerLostException.class, () -> rank0.allGather("x", new byte[] {0}, LONG)));
        Thread.sleep(50);
        long start = System.nanoTime();
        group.forRank(1).close();
        PeerLostException e = waiter.get(5, TimeUnit.SECONDS);
        assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(1));
        assertEquals(1, e.peer());
        assertTrue(e.getMessage().contains("rank 1 closed its rendezvous without publishing"), e.getMessage());
    }

    @Test
    void valuesPublishedBeforeClosingAreStillDelivered() {
        InProcessRendezvous group = InProcessRendezvous.create(2);
        Rendezvous root = group.forRank(1);
        root.broadcast("cfg", 1, new byte[] {9}, LONG);
        root.close();
        assertArrayEquals(new byte[] {9}, group.forRank(0).broadcast("cfg", 1, null, LONG));
    }

    @Test
    void anAbortFailsTheWaitersAndTellsEveryListenerOnce() throws Exception {
        InProcessRendezvous group = InProcessRendezvous.create(3);
        CompletableFuture<String> told = new CompletableFuture<>();
        group.forRank(0).onPeerLost((rank, reason) -> told.complete(rank + ": " + reason));
        CompletableFuture<PeerLostException> waiter = CompletableFuture.supplyAsync(
                () -> assertThrows(PeerLostException.class, () -> group.forRank(1).barrier("b", LONG)));
        Thread.sleep(50);
        group.abort(2, "its thread died");
        assertEquals("2: rank 2 aborted: its thread died", told.get(5, TimeUnit.SECONDS));
        assertEquals(2, waiter.get(5, TimeUnit.SECONDS).peer());
        CompletableFuture<String> late = new CompletableFuture<>();
        group.forRank(1).onPeerLost((rank, reason) -> late.complete(rank + ": " + reason));
        assertEquals("2: rank 2 aborted: its thread died", late.getNow("not told at once"), "a late listener is told at once");
    }

    @Test
    void aListenerThatUnsubscribesIsNotTold() throws Exception {
        InProcessRendezvous group = InProcessRendezvous.create(2);
        CompletableFuture<String> told = new CompletableFuture<>();
        AutoCloseable handle = group.forRank(0).onPeerLost((rank, reason) -> told.complete(reason));
        handle.close();
        group.abort(1, "test");
        assertTrue(!told.isDone(), "an unsubscribed listener was told");
    }
}
