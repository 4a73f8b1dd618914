package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.*;

import dev.ar4j.rendezvous.Rendezvous;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class HostIdentityTest {

    @Test
    void readsHostnameAndBootIdFiles(@TempDir Path dir) throws Exception {
        Path hostname = Files.writeString(dir.resolve("hostname"), "gpu-node-7\n");
        Path bootId = Files.writeString(dir.resolve("boot_id"), "0f1e2d3c-aaaa-bbbb-cccc-0123456789ab\n");
        HostIdentity id = HostIdentity.read(hostname, bootId, Map.of("HOSTNAME", "ignored"));
        assertEquals(new HostIdentity("gpu-node-7", "0f1e2d3c-aaaa-bbbb-cccc-0123456789ab"), id);
        assertEquals("gpu-node-7/0f1e2d3c-aaaa-bbbb-cccc-0123456789ab", id.key());
    }

    @Test
    void fallsBackToEnvironmentAndEmptyBootId(@TempDir Path dir) {
        HostIdentity id = HostIdentity.read(dir.resolve("absent"), dir.resolve("absent-too"), Map.of("HOSTNAME", "box"));
        assertEquals(new HostIdentity("box", ""), id);
        assertEquals("box", id.key());
        HostIdentity jdk = HostIdentity.read(dir.resolve("absent"), dir.resolve("absent-too"), Map.of());
        assertFalse(jdk.hostname().isBlank());
    }

    @Test
    void localIdentityOnLinuxHasABootId() {
        HostIdentity local = HostIdentity.local();
        assertFalse(local.hostname().isBlank());
        if (Files.isReadable(Path.of("/proc/sys/kernel/random/boot_id"))) {
            assertEquals(36, local.bootId().length(), local.bootId());
        }
    }

    @Test
    void bytesRoundTripAndRejectGarbage() {
        HostIdentity id = new HostIdentity("h", "b");
        assertEquals(id, HostIdentity.fromBytes(id.toBytes()));
        assertThrows(IllegalArgumentException.class, () -> HostIdentity.fromBytes(new byte[] {1, 2}));
        assertThrows(IllegalArgumentException.class, () -> HostIdentity.fromBytes("a\nb\nc".getBytes()));
        assertThrows(IllegalArgumentException.class, () -> new HostIdentity(" ", "b"));
    }

    @Test
    void layoutGroupsRanksByHost() {
        HostIdentity a = new HostIdentity("a", "1");
        HostIdentity b = new HostIdentity("b", "1");
        HostIdentity aRebooted = new HostIdentity("a", "2");
        HostLayout layout = HostLayout.of(List.of(b, a, b, a, aRebooted));
        assertEquals(3, layout.hostCount());
        assertFalse(layout.isSingleHost());
        assertEquals(0, layout.hostIndex(2), "hosts are numbered by their lowest rank");
        assertEquals(List.of(0, 2), layout.ranksOnHost(0));
        assertEquals(List.of(1, 3), layout.ranksSharingHostWith(3));
        assertEquals(List.of(4), layout.ranksSharingHostWith(4), "another boot id is another host");
        assertEquals(1, layout.localIndex(3));
        assertEquals(a, layout.host(1));
        assertThrows(IndexOutOfBoundsException.class, () -> layout.host(5));
        assertEquals("HostLayout[b: ranks 0, 2; a: ranks 1, 3; a: rank 4]", layout.toString());
    }

    @Test
    void exchangeThroughARendezvousFindsOneHost() throws Exception {
        InProcessRendezvous group = InProcessRendezvous.create(3);
        ExecutorService pool = Executors.newFixedThreadPool(3);
        try {
            List<Future<HostLayout>> futures = new ArrayList<>();
            for (int r = 0; r < 3; r++) {
                Rendezvous rv = group.forRank(r);
                futures.add(pool.submit(() -> HostLayout.exchange(rv, "hosts", Duration.ofSeconds(10))));
            }
            for (Future<HostLayout> f : futures) {
                HostLayout layout = f.get(10, TimeUnit.SECONDS);
                assertTrue(layout.isSingleHost());
                assertEquals(List.of(0, 1, 2), layout.ranksSharingHostWith(1));
                assertEquals(HostIdentity.local(), layout.host(0));
            }
        } finally {
            pool.shutdownNow();
        }
    }
}
