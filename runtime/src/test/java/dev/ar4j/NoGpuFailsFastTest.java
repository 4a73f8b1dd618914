package dev.ar4j;

import dev.ar4j.cuda.CudaDriverMissingException;
import dev.ar4j.internal.platform.TestLibraries;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * On a machine without a GPU driver every rank fails at once, with the driver's message, before
 * it waits for any other rank: the GPU is checked before the rendezvous (rank 1 no longer waits
 * out the rendezvous timeout for a rank 0 that died on its GPU).
 */
class NoGpuFailsFastTest {

    /**
     * A bound on a hang, not a speed figure: far below the default rendezvous timeout (2 min), which
     * a rank waiting on the network would wait out. That no rank reached the network at all is
     * checked deterministically (the rendezvous port stays free).
     */
    private static final long LIMIT_NANOS = TimeUnit.SECONDS.toNanos(20);

    @Test
    void everyTorchrunRankFailsBeforeAnyNetworkWaitNamingTheDriver() throws Exception {
        Assumptions.assumeFalse(TestLibraries.cudaDriverInstalled(), "a driver is installed: this test is for a "
                + "machine without one");
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            List<Future<Throwable>> ranks = new ArrayList<>();
            for (int r = 0; r < 2; r++) {
                Map<String, String> torchrun = Map.of("RANK", Integer.toString(r), "WORLD_SIZE", "2",
                        "LOCAL_RANK", Integer.toString(r), "LOCAL_WORLD_SIZE", "2", "MASTER_ADDR", "127.0.0.1",
                        "MASTER_PORT", Integer.toString(port));
                ranks.add(pool.submit(() -> buildAndTime(torchrun)));
            }
            for (int r = 0; r < 2; r++) {
                Throwable t = ranks.get(r).get(30, TimeUnit.SECONDS);
                assertInstanceOf(CudaDriverMissingException.class, t, "rank " + r + ": " + t);
                assertTrue(t.getMessage().toLowerCase().contains("driver"), "rank " + r + ": " + t.getMessage());
            }
        } finally {
            pool.shutdownNow();
        }
        try (ServerSocket s = new ServerSocket(port)) {
            assertTrue(s.isBound(), "no rank served the rendezvous: the port is still free");
        } catch (IOException e) {
            fail("port " + port + " is taken: a rank started the rendezvous server before checking its GPU", e);
        }
    }

    @Test
    void fromEnvironmentWithoutALauncherFailsNamingTheDriver() {
        Assumptions.assumeFalse(TestLibraries.cudaDriverInstalled(), "a driver is installed: this test is for a "
                + "machine without one");
        Throwable t = buildAndTime(Map.of());
        assertInstanceOf(CudaDriverMissingException.class, t, String.valueOf(t));
    }

    /** Builds from {@code environment}; returns what it threw, failing if that took {@link #LIMIT_NANOS} or more. */
    private static Throwable buildAndTime(Map<String, String> environment) {
        long start = System.nanoTime();
        try (Communicator c = Communicator.builder().fromEnvironment().environment(environment)
                .systemProperties(new Properties()).build()) {
            fail("built " + c + " on a machine without a driver");
            return null;
        } catch (RuntimeException e) {
            long took = System.nanoTime() - start;
            assertTrue(took < LIMIT_NANOS, "failing took " + took / 1_000_000 + " ms (" + e + ")");
            return e;
        }
    }
}
