package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.*;

import dev.ar4j.rendezvous.RendezvousAuthenticationException;
import dev.ar4j.rendezvous.RendezvousSettings;
import dev.ar4j.rendezvous.LaunchEnvironment;
import dev.ar4j.ConfigurationException;
import org.junit.jupiter.api.Test;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Job tokens, settings resolution, key ownership and rate-limited warnings. */
class RendezvousConfigurationTest {

    @Test
    void theTokenComesFromTheUserThenTheLaunchers() {
        assertEquals("AR4J_RDZV_TOKEN", JobToken.fromEnvironment(Map.of("AR4J_RDZV_TOKEN", "s", "SLURM_JOB_ID", "1")).source());
        assertEquals("derived from TORCHELASTIC_RUN_ID", JobToken.fromEnvironment(Map.of("TORCHELASTIC_RUN_ID", "r")).source());
        assertEquals("derived from SLURM_JOB_ID and SLURM_STEP_ID",
                JobToken.fromEnvironment(Map.of("SLURM_JOB_ID", "7", "SLURM_STEP_ID", "0")).source());
        assertEquals("derived from OMPI_MCA_ess_base_jobid",
                JobToken.fromEnvironment(Map.of("OMPI_MCA_ess_base_jobid", "42")).source());
        assertFalse(JobToken.fromEnvironment(Map.of("AR4J_RDZV_TOKEN", " ")).isPresent(), "a blank token is none");
        assertFalse(JobToken.fromEnvironment(Map.of()).isPresent());
    }

    @Test
    void differentJobsGetDifferentKeysAndTheSecretIsNeverShown() {
        JobToken a = JobToken.fromEnvironment(Map.of("SLURM_JOB_ID", "7", "SLURM_STEP_ID", "0"));
        JobToken b = JobToken.fromEnvironment(Map.of("SLURM_JOB_ID", "7", "SLURM_STEP_ID", "1"));
        assertNotEquals(java.util.HexFormat.of().formatHex(a.key()), java.util.HexFormat.of().formatHex(b.key()));
        assertFalse(JobToken.of("hunter2").toString().contains("hunter2"));
        assertThrows(IllegalArgumentException.class, () -> JobToken.of(" "));
    }

    @Test
    void withoutATokenOnlyLoopbackIsServed() {
        RendezvousAuthenticationException e = assertThrows(RendezvousAuthenticationException.class,
                () -> TcpRendezvousServer.start(new InetSocketAddress(0), 2, JobToken.none(), RendezvousSettings.resolve()));
        assertTrue(e.getMessage().contains("without a job token"), e.getMessage());
        assertTrue(e.getMessage().contains("AR4J_RDZV_TOKEN"), e.getMessage());
    }

    @Test
    void ranksSpanningHostsWithoutATokenAreRefusedWhileOneHostUsesLoopback() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeFalse(JobToken.fromSystem().isPresent(),
                "this process's environment gives a job token");
        LaunchEnvironment twoHosts = LaunchEnvironment.builder().rank(0).worldSize(2).localRank(0).localWorldSize(1)
                .masterAddr("127.0.0.1").masterPort(TcpRendezvousTest.freeLoopbackPort()).build(Map.of());
        RendezvousAuthenticationException e = assertThrows(RendezvousAuthenticationException.class,
                () -> TcpRendezvous.connect(twoHosts, Duration.ofSeconds(5)));
        assertTrue(e.getMessage().contains("without a job token"), e.getMessage());
        LaunchEnvironment oneHost = LaunchEnvironment.builder().rank(0).worldSize(1).build(Map.of());
        try (TcpRendezvous alone = TcpRendezvous.connect(oneHost, Duration.ofSeconds(5))) {
            assertTrue(alone.isServing());
            assertArrayEquals(new byte[][] {{1}}, alone.allGather("x", new byte[] {1}, Duration.ofSeconds(5)));
        }
    }

    @Test
    void settingsComeFromPropertiesThenEnvironmentThenDefaults() {
        Properties properties = new Properties();
        properties.setProperty("ar4j.rdzv.heartbeatInterval", "50");
        RendezvousSettings s = RendezvousSettings.resolve(properties,
                Map.of("AR4J_RDZV_HEARTBEAT_INTERVAL_MS", "70", "AR4J_RDZV_HEARTBEAT_TIMEOUT_MS", "300"));
        assertEquals(Duration.ofMillis(50), s.heartbeatInterval());
        assertEquals(Duration.ofMillis(300), s.heartbeatTimeout());
        RendezvousSettings defaults = RendezvousSettings.resolve(new Properties(), Map.of());
        assertEquals(Duration.ofMillis(500), defaults.heartbeatInterval());
        assertEquals(Duration.ofSeconds(4), defaults.heartbeatTimeout());
        assertEquals(Duration.ofMillis(300), s.heartbeatTimeout(1024), "a timeout given is not adapted");
        properties.setProperty("ar4j.rdzv.heartbeatInterval", "2000");
        assertEquals(Duration.ofSeconds(16), RendezvousSettings.resolve(properties, Map.of()).heartbeatTimeout(8),
                "the default timeout is at least eight intervals");
        assertEquals(4096, defaults.maxKeysPerGet(16));
        assertEquals(10_000, defaults.maxKeysPerGet(10_000));
    }

    @Test
    void badSettingsAreNamed() {
        ConfigurationException fromEnvironment = assertThrows(ConfigurationException.class,
                () -> RendezvousSettings.resolve(new Properties(), Map.of("AR4J_RDZV_HEARTBEAT_TIMEOUT_MS", "soon")));
        assertTrue(fromEnvironment.getMessage().contains("AR4J_RDZV_HEARTBEAT_TIMEOUT_MS='soon'"),
                fromEnvironment.getMessage());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> RendezvousSettings.resolve(new Properties(), Map.of())
                .withHeartbeat(Duration.ofMillis(500), Duration.ofMillis(600)));
        assertTrue(e.getMessage().contains("at least twice the heartbeat interval"), e.getMessage());
    }

    @Test
    void keyOwnersAreParsedStrictly() {
        assertEquals(3, StoreKeys.owner("3/ag/1/x", 4));
        assertEquals(StoreKeys.SHARED, StoreKeys.owner("*/kv/x", 4));
        assertEquals(-2, StoreKeys.owner("4/ag/1/x", 4), "out of range");
        assertEquals(-2, StoreKeys.owner("03/ag/1/x", 4), "leading zero");
        assertEquals(-2, StoreKeys.owner("kv/x", 4), "no owner");
        assertEquals(-2, StoreKeys.owner("/x", 4), "empty owner");
        assertEquals(-2, StoreKeys.owner("99999999999/x", Integer.MAX_VALUE), "too long");
    }

    @Test
    void warningsAreRateLimited() {
        java.util.List<String> logged = new java.util.ArrayList<>();
        System.Logger logger = new System.Logger() {
            public String getName() {
                return "test";
            }

            public boolean isLoggable(Level level) {
                return true;
            }

            public void log(Level level, java.util.ResourceBundle bundle, String msg, Throwable thrown) {
                logged.add(msg);
            }

            public void log(Level level, java.util.ResourceBundle bundle, String format, Object... params) {
                logged.add(format);
            }
        };
        WarningLimiter limiter = new WarningLimiter(logger, 60_000, 5);
        for (int i = 0; i < 1_000; i++) {
            limiter.warn("bad frame " + i);
        }
        assertEquals(5, logged.size());
        assertEquals(995, limiter.suppressedCount());
    }

    @Test
    void theDefaultsAreTheDocumentedOnes() {
        RendezvousSettings d = RendezvousSettings.resolve(new java.util.Properties(), java.util.Map.of());
        assertEquals(java.time.Duration.ofMillis(500), d.heartbeatInterval());
        assertEquals(java.time.Duration.ofSeconds(4), d.heartbeatTimeout());
        assertEquals(java.time.Duration.ofSeconds(4), d.heartbeatTimeout(8));
        assertEquals(java.time.Duration.ofSeconds(4), d.heartbeatTimeout(266));
        assertEquals(java.time.Duration.ofMillis(15_360), d.heartbeatTimeout(1024), "15 ms per rank beyond 266 ranks");
        assertEquals(java.time.Duration.ofSeconds(1), d.withHeartbeat(java.time.Duration.ofMillis(100),
                java.time.Duration.ofSeconds(1)).heartbeatTimeout(1024), "a timeout given is not adapted");
        assertEquals(java.time.Duration.ofSeconds(10), d.handshakeTimeout());
        assertEquals(java.time.Duration.ofHours(1), d.maxWait());
        assertEquals(256, d.maxPendingConnections());
        assertEquals(65_536, d.maxKeysPerRank());
        assertEquals(64L << 20, d.maxBytesPerRank());
        assertEquals(4096, d.maxKeysPerGet(16));
        assertEquals(5000, d.maxKeysPerGet(5000), "at least the world size");
        long half = Runtime.getRuntime().maxMemory() / 2;
        assertEquals(Math.clamp(half, 64L << 20, 1L << 30), d.maxServerBytes(), "half the heap, 64 MiB to 1 GiB");
    }

    @Test
    void ranksOfOneHostMeetOverLoopbackWhateverTheMasterAddress() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeFalse(JobToken.fromSystem().isPresent(),
                "this process's environment gives a job token");
        int port = TcpRendezvousTest.freeLoopbackPort();
        // 192.0.2.1 is TEST-NET-1: routed nowhere, so a rank that dialled it would wait out its connect timeout.
        java.util.List<java.util.concurrent.CompletableFuture<byte[][]>> ranks = new java.util.ArrayList<>();
        java.util.List<TcpRendezvous> opened = new java.util.concurrent.CopyOnWriteArrayList<>();
        long start = System.nanoTime();
        long millis;
        try (java.util.concurrent.ExecutorService threads = java.util.concurrent.Executors.newVirtualThreadPerTaskExecutor()) {
            for (int r = 0; r < 2; r++) {
                LaunchEnvironment env = LaunchEnvironment.builder().rank(r).worldSize(2).localRank(r).localWorldSize(2)
                        .masterAddr("192.0.2.1").masterPort(port).build(Map.of());
                int rank = r;
                ranks.add(java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                    TcpRendezvous rv = TcpRendezvous.connect(env, Duration.ofSeconds(20));
                    opened.add(rv);
                    return rv.allGather("x", new byte[] {(byte) rank}, Duration.ofSeconds(20));
                }, threads));
            }
            for (java.util.concurrent.CompletableFuture<byte[][]> f : ranks) {
                assertArrayEquals(new byte[][] {{0}, {1}}, f.get(20, java.util.concurrent.TimeUnit.SECONDS));
            }
            millis = (System.nanoTime() - start) / 1_000_000;
            assertTrue(opened.stream().allMatch(rv -> rv.toString().contains("127.0.0.1")), opened.toString());
        } finally {
            // The serving rank last: its close waits for the others to leave.
            opened.stream().filter(rv -> !rv.isServing()).forEach(TcpRendezvous::close);
            opened.stream().filter(TcpRendezvous::isServing).forEach(TcpRendezvous::close);
        }
        assertTrue(millis < 10_000, "formed over loopback, not by dialling the master address: " + millis + " ms");
    }

    @Test
    void theServerAnswersAWaitingReadAtItsLongestWaitWhateverTheClientAsked() throws Exception {
        JobToken token = JobToken.of("longest-wait-test");
        RendezvousSettings settings = RendezvousSettings.resolve(new Properties(), Map.of())
                .withMaxWait(Duration.ofMillis(300));
        try (TcpRendezvousServer server = TcpRendezvousServer.start(
                new InetSocketAddress(java.net.InetAddress.getLoopbackAddress(), 0), 2, token, settings);
             TcpRendezvous rank0 = TcpRendezvous.builder().rank(0).worldSize(2).serve(false).serverPort(server.port())
                     .token(token).connectTimeout(Duration.ofSeconds(10)).closeLinger(Duration.ZERO).connect()) {
            long start = System.nanoTime();
            RendezvousTimeoutException e = assertThrows(RendezvousTimeoutException.class,
                    () -> rank0.allGather("never", new byte[] {0}, Duration.ofSeconds(60)));
            long millis = (System.nanoTime() - start) / 1_000_000;
            assertTrue(millis >= 250 && millis < 10_000, "answered after " + millis + " ms (the server's longest wait is"
                    + " 300 ms, the client asked for 60 s)");
            assertEquals(java.util.List.of(1), e.missingRanks(), e.getMessage());
        }
    }
}
