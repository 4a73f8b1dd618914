package dev.ar4j.internal.engine;

import dev.ar4j.rendezvous.LaunchEnvironment;
import dev.ar4j.rendezvous.Rendezvous;
import dev.ar4j.internal.rendezvous.TcpRendezvous;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/**
 * A world of one meets nobody: no TCP rendezvous, so no port and none of the TCP rendezvous's
 * job-token security warning (only the TCP rendezvous logs it).
 */
class WorldOfOneTest {

    @Test
    void aWorldOfOneGetsAnInProcessRendezvous() throws Exception {
        LaunchEnvironment noLauncher = LaunchEnvironment.builder().build(Map.of());
        assertEquals(1, noLauncher.worldSize(), "no launcher variables: a world of one");
        try (Rendezvous r = GroupRendezvous.rendezvousFor(noLauncher, Duration.ofSeconds(5),
                dev.ar4j.internal.rendezvous.AbortSignal.none())) {
            assertFalse(r instanceof TcpRendezvous, "a world of one needs no TCP rendezvous: " + r);
            assertEquals(0, r.rank());
            assertEquals(1, r.worldSize());
            byte[][] all = r.allGather("k", new byte[] {7}, Duration.ofSeconds(1));
            assertArrayEquals(new byte[][] {{7}}, all);
            r.barrier("b", Duration.ofSeconds(1));
        }
    }
}
