package dev.ar4j.benchmarks.perf;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

/**
 * The launcher's process handling, on a machine without GPUs: the workers start with this class
 * path and the NVLS-off environment, fail to find a GPU, and the launcher stops the others and
 * reports the failure instead of waiting.
 */
class WorkerLauncherTest {

    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void aFailingWorkerStopsTheRunAndItsCodeIsReported(@TempDir Path dir) throws Exception {
        assumeFalse(GpuCheck.probe().usable(), "this machine has GPUs: the workers would run the benchmark");
        Path log = dir.resolve("workers.log");
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        long start = System.nanoTime();
        int code = WorkerLauncher.run(List.of("-b", "1K", "-e", "1K", "--timeout", "60", "--out-dir", dir.toString()),
                "ar4j-perf test", 2, false, 1, Duration.ofSeconds(80), new PrintStream(err, true, StandardCharsets.UTF_8),
                ProcessBuilder.Redirect.to(log.toFile()));
        long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start);
        String launcher = err.toString(StandardCharsets.UTF_8);
        String workers = Files.readString(log, StandardCharsets.UTF_8);
        assertEquals(1, code, launcher + workers);
        assertTrue(launcher.contains("started 2 worker JVMs, one per GPU"), launcher);
        assertTrue(launcher.matches("(?s).*rank [01] exited with code 1; stopping the other workers.*"), launcher);
        assertTrue(seconds < 60, "the other rank was stopped, not waited for: " + seconds + " s");
        assertTrue(workers.matches("(?s).*ar4j-perf rank [01]: failed:.*") && workers.contains("cudaErrorInsufficientDriver"), workers);
        assertTrue(!Files.exists(dir.resolve("ar4j-perf.csv")), "nothing is written after a failure");
    }

    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void sharedGpuRanksRunAsThreadsOfOneWorkerJvm(@TempDir Path dir) throws Exception {
        assumeFalse(GpuCheck.probe().usable(), "this machine has GPUs: the workers would run the benchmark");
        Path log = dir.resolve("workers.log");
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        List<String> args = List.of("--share-gpu", "--scenario", "verify-fused", "--pdl", "on,off", "--timeout", "60",
                "--out-dir", dir.toString());
        int code = WorkerLauncher.run(args, "ar4j-perf test", 2, WorkerLauncher.threads(true, null), 2,
                Duration.ofSeconds(80), new PrintStream(err, true, StandardCharsets.UTF_8),
                ProcessBuilder.Redirect.to(log.toFile()));
        String launcher = err.toString(StandardCharsets.UTF_8);
        String workers = Files.readString(log, StandardCharsets.UTF_8);
        // Exit 1 at the first CUDA call, not 2: the one worker took --share-gpu with --worker-threads.
        assertEquals(1, code, launcher + workers);
        assertTrue(launcher.contains("started 1 worker JVM running 2 ranks, one thread each"), launcher);
        assertTrue(workers.contains("ar4j-perf worker (2 ranks in threads): failed:")
                && workers.contains("cudaErrorInsufficientDriver"), workers);
    }

    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void workersOfAnAllGatherWithBothPdlSettingsTakeTheirPortsAndReachTheGpu(@TempDir Path dir) throws Exception {
        assumeFalse(GpuCheck.probe().usable(), "this machine has GPUs: the workers would run the benchmark");
        Path log = dir.resolve("workers.log");
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = WorkerLauncher.run(List.of("-o", "allgather", "--pdl", "on,off", "-b", "1K", "-e", "1K", "--timeout",
                "60", "--out-dir", dir.toString()), "ar4j-perf test", 2, false, 2, Duration.ofSeconds(80),
                new PrintStream(err, true, StandardCharsets.UTF_8), ProcessBuilder.Redirect.to(log.toFile()));
        String workers = Files.readString(log, StandardCharsets.UTF_8);
        // Exit 1 at the first CUDA call, not 2: the options, the settings and the two ports all parsed in the workers.
        assertEquals(1, code, err.toString(StandardCharsets.UTF_8) + workers);
        assertTrue(workers.contains("cudaErrorInsufficientDriver"), workers);
        assertTrue(!workers.contains("--worker-port"), "no complaint about the ports: " + workers);
    }

    @Test
    void eachCommunicatorBuildGetsItsOwnPort() throws Exception {
        String[] ports = WorkerLauncher.freeLoopbackPorts(3).split(",");
        assertEquals(3, java.util.Set.of(ports).size(), String.join(",", ports));
        for (String p : ports) {
            assertTrue(Integer.parseInt(p) > 0, p);
        }
        assertThrows(IllegalArgumentException.class, () -> WorkerLauncher.freeLoopbackPorts(0));
    }
}
