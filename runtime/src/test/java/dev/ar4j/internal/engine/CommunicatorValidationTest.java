package dev.ar4j.internal.engine;

import dev.ar4j.ConfigurationException;
import dev.ar4j.Communicator;
import dev.ar4j.CommunicatorInternals;
import dev.ar4j.cuda.CudaDriverMissingException;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Builder values are refused before any rendezvous or GPU work, naming what is accepted; a build
 * that fails after the rendezvous was formed frees it (the port), so a retry in the same JVM works.
 * CPU only: the first CUDA call fails here (no driver), which is the "failure after setup began".
 */
class CommunicatorValidationTest {

    private static void assertMessage(Throwable e, String... parts) {
        for (String p : parts) {
            assertTrue(e.getMessage().contains(p), "expected '" + p + "' in: " + e.getMessage());
        }
    }

    @Test
    void absurdKernelTimeoutIsRefusedWithTheAcceptedRange() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Communicator.builder().kernelTimeout(Duration.ofDays(365L * 300)));
        assertMessage(e, "1 ms", "24 h");
        assertThrows(IllegalArgumentException.class, () -> Communicator.builder().kernelTimeout(Duration.ofNanos(10)));
        Communicator.builder().kernelTimeout(Duration.ofHours(24));  // the limit itself is accepted
    }

    @Test
    void badLaunchConfigIsRefusedWithTheAcceptedRanges() {
        for (int[] bad : new int[][] {{0, 512}, {129, 512}, {64, 0}, {64, 33}, {64, 2048}, {-1, -1}}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> Communicator.builder().launchConfig(bad[0], bad[1]));
            assertMessage(e, "1 to 128", "multiple of 32", "32 to 1024");
        }
        Communicator.builder().launchConfig(128, 1024);
        Communicator.builder().launchConfig(1, 32);
    }

    @Test
    void launchLimitsMatchTheCHeader() {
        String header = readHeader();
        assertTrue(header.contains("AR4J_MAX_BLOCKS = " + BuilderChecks.MAX_LAUNCH_BLOCKS + ","), "AR4J_MAX_BLOCKS");
        assertTrue(header.contains("AR4J_MAX_THREADS = " + BuilderChecks.MAX_LAUNCH_THREADS + ","), "AR4J_MAX_THREADS");
    }

    private static String readHeader() {
        java.nio.file.Path p = java.nio.file.Path.of(System.getProperty("user.dir")).resolveSibling("cuda")
                .resolve("include/ar4j/custom_all_reduce.h");
        try {
            return java.nio.file.Files.readString(p);
        } catch (IOException e) {
            throw new AssertionError("cannot read the C header at " + p, e);
        }
    }

    @Test
    void absurdSizesAreRefused() {
        assertMessage(assertThrows(IllegalArgumentException.class,
                () -> Communicator.builder().stagingBytes(1L << 40)), "4 GiB", "multiple of 16");
        assertMessage(assertThrows(IllegalArgumentException.class,
                () -> Communicator.builder().maxRegistrations(Integer.MAX_VALUE)), "between 1 and");
        assertThrows(IllegalArgumentException.class, () -> Communicator.builder().rendezvousTimeout(Duration.ofDays(400)));
    }

    @Test
    void watchdogIntervalIsValidatedInTheBuilderAndFromTheEnvironment() {
        assertMessage(assertThrows(IllegalArgumentException.class,
                () -> Communicator.builder().watchdogInterval(Duration.ofMinutes(5))), "1 ms to 60 s");
        assertThrows(IllegalArgumentException.class, () -> Communicator.builder().watchdogInterval(Duration.ofNanos(5)));
        Communicator.builder().watchdogInterval(Duration.ZERO);

        Communicator.Builder b = Communicator.builder().environment(Map.of(BuilderChecks.WATCHDOG_ENV, "soon"))
                .systemProperties(new Properties());
        assertMessage(assertThrows(ConfigurationException.class, () -> BuilderChecks.watchdogInterval(settings(b))),
                BuilderChecks.WATCHDOG_ENV, "soon");
        Properties props = new Properties();
        props.setProperty(BuilderChecks.WATCHDOG_PROPERTY, "25");
        Communicator.Builder fromProperty = Communicator.builder().systemProperties(props)
                .environment(Map.of(BuilderChecks.WATCHDOG_ENV, "999999"));
        assertEquals(Duration.ofMillis(25), BuilderChecks.watchdogInterval(settings(fromProperty)), "property beats environment");
        assertEquals(Duration.ofMillis(7), BuilderChecks.watchdogInterval(settings(
                fromProperty.watchdogInterval(Duration.ofMillis(7)))), "builder beats property");
        assertEquals(Communicator.DEFAULT_WATCHDOG_INTERVAL, BuilderChecks.watchdogInterval(settings(
                Communicator.builder().systemProperties(new Properties()).environment(Map.of()))));
        assertTrue(Communicator.DEFAULT_WATCHDOG_INTERVAL.toMillis() <= 100);
    }

    @Test
    void ncclSwitchIsResolvedAndUnknownValuesAreRefused() {
        Properties none = new Properties();
        assertTrue(BuilderChecks.ncclEnabled(settings(Communicator.builder().systemProperties(none).environment(Map.of()))));
        assertFalse(BuilderChecks.ncclEnabled(settings(Communicator.builder().systemProperties(none)
                .environment(Map.of(BuilderChecks.NCCL_ENV, "0")))));
        assertTrue(BuilderChecks.ncclEnabled(settings(Communicator.builder().nccl(true).systemProperties(none)
                .environment(Map.of(BuilderChecks.NCCL_ENV, "0")))), "builder beats environment");
        assertMessage(assertThrows(ConfigurationException.class, () -> BuilderChecks.ncclEnabled(settings(
                Communicator.builder().systemProperties(none).environment(Map.of(BuilderChecks.NCCL_ENV, "maybe"))))),
                BuilderChecks.NCCL_ENV, "maybe", "0, false");
    }

    @Test
    void badEnvironmentValueFailsTheBuildBeforeTheRendezvousIsFormed() throws IOException {
        int port = freePort();
        ConfigurationException e = assertThrows(ConfigurationException.class, () -> Communicator.builder()
                .environment(Map.of(BuilderChecks.NCCL_ENV, "perhaps")).systemProperties(new Properties())
                .rank(0).worldSize(1).masterAddress("127.0.0.1", port).build());
        assertMessage(e, "perhaps");
        assertPortFree(port);
    }

    @Test
    void rankOutOfRangeIsRefusedBeforeTheNetwork() {
        assertMessage(assertThrows(IllegalArgumentException.class,
                () -> Communicator.builder().rank(2).worldSize(2).build()), "rank 2", "0..1");
    }

    @Test
    void aFailedBuildFreesTheRendezvousPortAndARetryWorks() throws IOException {
        int port = freePort();
        for (int attempt = 0; attempt < 3; attempt++) {
            // Rank 0 serves the TCP rendezvous on the port, then the first CUDA call fails (no driver).
            RuntimeException e = assertThrows(RuntimeException.class, () -> Communicator.builder()
                    .rank(0).worldSize(1).masterAddress("127.0.0.1", port).rendezvousTimeout(Duration.ofSeconds(10))
                    .build());
            assertTrue(e instanceof CudaDriverMissingException, "attempt " + attempt + ": expected the driver to be "
                    + "named (not a port in use), got " + e);
            assertPortFree(port);
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    private static void assertPortFree(int port) throws IOException {
        try (ServerSocket s = new ServerSocket()) {
            s.setReuseAddress(true);
            s.bind(new java.net.InetSocketAddress(InetAddress.getLoopbackAddress(), port));
        }
    }

    private static Settings settings(Communicator.Builder b) {
        return CommunicatorInternals.settings(b);
    }
}
