package dev.ar4j.it;

import dev.ar4j.Ar4jException;
import dev.ar4j.Communicator;
import dev.ar4j.rendezvous.RendezvousTimeoutException;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.net.ServerSocket;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A world of two through NCCL whose rank 1 never starts: rank 0's build ends within the deadline
 * with an exception naming rank 1, never a hang in {@code ncclCommInitRank}; and the port is free
 * for a retry.
 */
@Tag("gpu")
class NcclMissingRankIT {

    @BeforeAll
    static void needAGpu() {
        GpuRequirement.requireDevices(1);
    }

    @Test
    void rankOneNeverStartedIsNamedWithinTheDeadline() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        Duration deadline = Duration.ofSeconds(5);
        long start = System.nanoTime();
        Ar4jException e = assertThrows(Ar4jException.class, () -> Communicator.builder().rank(0).worldSize(2)
                .localRank(0).masterAddress("127.0.0.1", port).rendezvousTimeout(deadline).build());
        long ms = (System.nanoTime() - start) / 1_000_000;
        System.out.println("MEASURED NCCL missing rank: " + e.getClass().getSimpleName() + " after " + ms + " ms ("
                + deadline.toMillis() + " ms deadline): " + e.getMessage());
        assertTrue(ms <= deadline.toMillis() + 5000, "took " + ms + " ms for a " + deadline.toMillis() + " ms deadline");
        boolean named = e instanceof RendezvousTimeoutException t ? t.missingRanks().contains(1)
                : e.getMessage().contains("rank 1");
        assertTrue(named, "the exception must name rank 1: " + e);
        try (ServerSocket again = new ServerSocket()) {
            again.bind(new java.net.InetSocketAddress("127.0.0.1", port));  // the failed build freed the port
        }
    }
}
