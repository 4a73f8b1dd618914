package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.*;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * One rank launched with another world size fails the group: the rank itself is refused, and the
 * ranks already waiting (and any that come later) fail at once naming it, instead of waiting out
 * their timeout for a rank that will never arrive.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class TcpRendezvousWorldSizeTest {

    private static final JobToken TOKEN = JobToken.of("world-size-test-secret");

    @Test
    void theOtherRanksFailPromptlyNamingTheMisconfiguredRank() throws Exception {
        try (TcpRendezvousServer server = TcpRendezvousServer.start(
                new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 3, TOKEN,
                RendezvousSettings.resolve(new java.util.Properties(), java.util.Map.of()));
             TcpRendezvous rank0 = rank(0, 3, server.port()); TcpRendezvous rank1 = rank(1, 3, server.port());
             java.util.concurrent.ExecutorService threads = java.util.concurrent.Executors.newVirtualThreadPerTaskExecutor()) {
            Duration timeout = Duration.ofSeconds(60);
            CompletableFuture<byte[][]> waiting0 = CompletableFuture.supplyAsync(
                    () -> rank0.allGather("ids", new byte[] {0}, timeout), threads);
            CompletableFuture<byte[][]> waiting1 = CompletableFuture.supplyAsync(
                    () -> rank1.allGather("ids", new byte[] {1}, timeout), threads);
            Thread.sleep(200); // both are waiting on the server for rank 2
            long start = System.nanoTime();
            RendezvousRefusedException own = assertThrows(RendezvousRefusedException.class, () -> rank(2, 4, server.port()));
            assertTrue(own.getMessage().contains("rank 2 says world size 4, server expects 3"), own.getMessage());
            for (CompletableFuture<byte[][]> waiting : java.util.List.of(waiting0, waiting1)) {
                ExecutionException e = assertThrows(ExecutionException.class, () -> waiting.get(5, TimeUnit.SECONDS));
                RendezvousRefusedException refused = assertInstanceOf(RendezvousRefusedException.class, e.getCause());
                assertTrue(refused.getMessage().contains("the group cannot form: rank 2 says world size 4, server expects 3"),
                        refused.getMessage());
            }
            long elapsed = System.nanoTime() - start;
            assertTrue(elapsed < TimeUnit.SECONDS.toNanos(5), "took " + elapsed / 1_000_000 + " ms");
            TcpRendezvousAttackTest.measured("a rank with another world size", "1 connection",
                    "the waiting ranks: RendezvousRefusedException naming it", elapsed);
            RendezvousRefusedException later = assertThrows(RendezvousRefusedException.class,
                    () -> rank0.barrier("after", Duration.ofSeconds(60)));
            assertTrue(later.getMessage().contains("the group cannot form"), later.getMessage());
        }
    }

    private static TcpRendezvous rank(int rank, int worldSize, int port) {
        return TcpRendezvous.builder().rank(rank).worldSize(worldSize).serve(false).serverPort(port).token(TOKEN)
                .connectTimeout(Duration.ofSeconds(10)).closeLinger(Duration.ZERO).connect();
    }
}
