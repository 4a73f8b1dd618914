package dev.ar4j.it;

import dev.ar4j.Communicator;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The all-reduce correctness matrix on two GPUs, in both process models: one JVM driving both
 * GPUs (two threads, peer access) and one JVM per GPU (CUDA IPC, TCP rendezvous).
 * {@code -Dar4j.matrix.quick=true} runs a reduced size list; {@code -Dar4j.matrix.rounds=N}.
 */
@Tag("gpu")
class AllReduceMatrixIT {

    static final long SEED = Long.getLong("ar4j.matrix.seed", System.nanoTime());
    static final int ROUNDS = Integer.getInteger("ar4j.matrix.rounds", 10);
    static final boolean QUICK = Boolean.getBoolean("ar4j.matrix.quick");

    @BeforeAll
    static void needTwoGpus() {
        GpuRequirement.requireDevices(2);
    }

    @Test
    void oneJvmTwoThreads() throws Exception {
        List<Communicator> group = Communicator.localGroup(new int[] {0, 1}, null);
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            List<Future<AllReduceMatrix.Summary>> futures = new ArrayList<>();
            for (Communicator comm : group) {
                assertTrue(comm.hasCustomKernels(), "custom kernels must be set up on 2 P2P GPUs: " + comm);
                futures.add(pool.submit(() -> new AllReduceMatrix(comm, SEED, ROUNDS, QUICK).run()));
            }
            int failed = 0;
            for (Future<AllReduceMatrix.Summary> f : futures) {
                AllReduceMatrix.Summary s = f.get(20, TimeUnit.MINUTES);
                System.out.println("[one JVM] SUMMARY " + s.line());
                s.failures().forEach(x -> System.out.println("[one JVM] FAILURE " + x));
                failed += s.failed();
                assertTrue(s.cases() > 0);
            }
            assertEquals(0, failed, "failed cases in the one-JVM model");
        } finally {
            pool.shutdownNow();
            for (Communicator c : group) {
                c.close();
            }
        }
    }

    @Test
    void oneJvmPerGpu() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        String java = ProcessHandle.current().info().command().orElse("java");
        List<Process> children = new ArrayList<>();
        List<Future<List<String>>> outputs = new ArrayList<>();
        ExecutorService readers = Executors.newFixedThreadPool(2);
        try {
            for (int rank = 0; rank < 2; rank++) {
                ProcessBuilder pb = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED",
                        "-cp", System.getProperty("java.class.path"), AllReduceMatrixChild.class.getName(),
                        String.valueOf(rank), "2", String.valueOf(port), String.valueOf(SEED), String.valueOf(ROUNDS),
                        String.valueOf(QUICK));
                pb.redirectErrorStream(true);
                Process p = pb.start();
                children.add(p);
                int r = rank;
                outputs.add(readers.submit(() -> {
                    List<String> lines = new ArrayList<>();
                    try (BufferedReader in = new BufferedReader(
                            new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                        String line;
                        while ((line = in.readLine()) != null) {
                            System.out.println("[JVM " + r + "] " + line);
                            lines.add(line);
                        }
                    }
                    return lines;
                }));
            }
            for (int rank = 0; rank < 2; rank++) {
                Process p = children.get(rank);
                assertTrue(p.waitFor(20, TimeUnit.MINUTES), "rank " + rank + " did not finish in 20 minutes");
                List<String> lines = outputs.get(rank).get(1, TimeUnit.MINUTES);
                assertTrue(lines.stream().anyMatch(l -> l.startsWith("SUMMARY ")), "rank " + rank + " printed no summary");
                assertEquals(0, p.exitValue(), "rank " + rank + " failed; see its output above");
            }
        } finally {
            children.forEach(Process::destroyForcibly);
            readers.shutdownNow();
        }
    }
}
