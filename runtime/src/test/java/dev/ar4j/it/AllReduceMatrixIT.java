package dev.ar4j.it;

import dev.ar4j.Communicator;
import dev.ar4j.internal.platform.ChildJvm;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
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
        List<ChildJvm> children = new ArrayList<>();
        try {
            for (int rank = 0; rank < 2; rank++) {
                Path log = Files.createTempFile("ar4j-matrix-rank" + rank + "-", ".log");
                children.add(ChildJvm.start(AllReduceMatrixChild.class, List.of(String.valueOf(rank), "2",
                        String.valueOf(port), String.valueOf(SEED), String.valueOf(ROUNDS), String.valueOf(QUICK)), log));
            }
            int[] exits = new int[2];
            for (int rank = 0; rank < 2; rank++) {
                exits[rank] = children.get(rank).await(20 * 60);
            }
            for (int rank = 0; rank < 2; rank++) {
                String output = children.get(rank).output();
                output.lines().forEach(l -> System.out.println("[JVM] " + l));
                assertTrue(output.lines().anyMatch(l -> l.startsWith("SUMMARY ")), "rank " + rank
                        + " printed no summary");
                assertEquals(0, exits[rank], "rank " + rank + " failed; see its output above");
            }
        } finally {
            children.forEach(ChildJvm::kill);
        }
    }
}
