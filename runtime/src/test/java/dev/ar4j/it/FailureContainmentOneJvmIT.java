package dev.ar4j.it;

import dev.ar4j.Communicator;
import dev.ar4j.DType;
import dev.ar4j.Health;
import dev.ar4j.dispatch.Algorithm;
import dev.ar4j.dispatch.Decision;
import dev.ar4j.cuda.Cuda;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.internal.platform.ChildJvm;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Failure containment in one JVM driving two ranks that share GPU 0 (no NCCL): abort() from a
 * third thread unblocks both ranks; a second thread is refused naming both threads and never
 * changes a result; 10,000 rounds of abort/close racing allReduce never crash the JVM
 * ({@code -Dar4j.race.rounds=N}, {@code -Dar4j.race.seconds=S} to change the load).
 */
@Tag("gpu")
class FailureContainmentOneJvmIT {

    static final int RACE_ROUNDS = Integer.getInteger("ar4j.race.rounds", 10_000);
    static final long RACE_SECONDS = Long.getLong("ar4j.race.seconds", 480);
    static final long SEED = Long.getLong("ar4j.race.seed", 20261201L);

    @BeforeAll
    static void needAGpu() {
        GpuRequirement.requireDevices(1);
    }

    private static List<Communicator> twoRanksOnGpu0() {
        List<Communicator> group = Communicator.localGroup(new int[] {0, 0}, b -> b.nccl(false));
        for (Communicator c : group) {
            assertTrue(c.hasCustomKernels(), "two ranks on one GPU must get the custom kernels: " + c);
        }
        return group;
    }

    @Test
    void abortFromAThirdThreadUnblocksBothRanks() throws Exception {
        List<Communicator> group = twoRanksOnGpu0();
        CountDownLatch bothStalled = new CountDownLatch(2);
        long[] endedAt = new long[2];
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            List<Future<Throwable>> loops = new ArrayList<>();
            for (int r = 0; r < 2; r++) {
                Communicator comm = group.get(r);
                int rank = r;
                loops.add(pool.submit(() -> {
                    Cuda.setDevice(0);
                    try (CudaStream stream = CudaStream.create(); DeviceBuffer x = DeviceBuffer.allocate(1024)) {
                        x.fill(0);
                        for (int i = 0; ; i++) {
                            if (i == 200) {
                                bothStalled.countDown();
                                if (rank == 1) {
                                    // The late rank stops calling until it is aborted.
                                    while (comm.health().isHealthy()) {
                                        Thread.sleep(1);
                                    }
                                }
                            }
                            comm.allReduce(x, DType.BFLOAT16, stream);
                            stream.synchronize();
                            comm.checkPeers();
                        }
                    } catch (RuntimeException e) {
                        endedAt[rank] = System.nanoTime();
                        return e;
                    }
                }));
            }
            assertTrue(bothStalled.await(60, TimeUnit.SECONDS), "the ranks did not reach the stall");
            Thread.sleep(300);  // rank 0 is now blocked in its kernel, waiting for rank 1
            long abortedAt = System.nanoTime();
            Thread third = Thread.ofPlatform().name("third-thread").start(() -> group.forEach(Communicator::abort));
            third.join(TimeUnit.SECONDS.toMillis(10));
            for (int r = 0; r < 2; r++) {
                Throwable t = loops.get(r).get(30, TimeUnit.SECONDS);
                assertTrue(t instanceof IllegalStateException, "rank " + r + " ended with " + t);
                long ms = TimeUnit.NANOSECONDS.toMillis(endedAt[r] - abortedAt);
                assertTrue(ms <= 2000, "rank " + r + " returned " + ms + " ms after abort()");
                assertEquals(Health.Status.ABORTED, group.get(r).health().status());
            }
        } finally {
            pool.shutdownNow();
            for (Communicator c : group) {
                c.close();
            }
        }
    }

    @Test
    void aSecondThreadIsRefusedNamingBothThreadsAndResultsStayExact() throws Exception {
        List<Communicator> group = twoRanksOnGpu0();
        CountDownLatch intruderRefused = new CountDownLatch(1);
        AtomicReference<String> refusal = new AtomicReference<>();
        AtomicLong otherErrors = new AtomicLong();
        ExecutorService pool = Executors.newFixedThreadPool(3, r -> new Thread(r, "owner-" + r.hashCode()));
        int buffers = 8;
        try {
            List<Future<List<DeviceBuffer>>> owners = new ArrayList<>();
            for (int r = 0; r < 2; r++) {
                Communicator comm = group.get(r);
                int rank = r;
                owners.add(pool.submit(() -> {
                    Thread.currentThread().setName("rank-" + rank + "-owner");
                    Cuda.setDevice(0);
                    if (rank == 1) {
                        // Rank 0 waits inside register() for rank 1, which waits for the intruder's refusal.
                        assertTrue(intruderRefused.await(60, TimeUnit.SECONDS), "the intruder was never refused");
                    }
                    List<DeviceBuffer> registered = new ArrayList<>();
                    for (int i = 0; i < buffers; i++) {
                        DeviceBuffer b = DeviceBuffer.allocate(4096);
                        for (int attempt = 0; ; attempt++) {
                            try {
                                comm.register(b);
                                break;
                            } catch (IllegalStateException e) {
                                // The intruder was inside checkPeers() at that instant: refused before any
                                // collective step, so the group is still in step and the call may be retried.
                                if (!e.getMessage().contains("intruder") || attempt > 1000) {
                                    throw e;
                                }
                            }
                        }
                        registered.add(b);
                    }
                    return registered;
                }));
            }
            Thread intruder = Thread.ofPlatform().name("intruder").start(() -> {
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (System.nanoTime() < deadline && refusal.get() == null) {
                    try {
                        group.get(0).checkPeers();  // harmless when it gets in; refused while register() runs
                    } catch (IllegalStateException e) {
                        refusal.set(e.getMessage());
                    } catch (RuntimeException e) {
                        otherErrors.incrementAndGet();
                    }
                }
                intruderRefused.countDown();
            });
            intruder.join(TimeUnit.SECONDS.toMillis(60));
            String message = refusal.get();
            assertTrue(message != null, "the intruder was never refused");
            assertTrue(message.contains("intruder") && message.contains("rank-0-owner"), message);
            assertEquals(0, otherErrors.get());
            List<List<DeviceBuffer>> registered = new ArrayList<>();
            for (Future<List<DeviceBuffer>> f : owners) {
                registered.add(f.get(60, TimeUnit.SECONDS));
            }
            // Every registered buffer is reduced exactly (zero-copy lookups answered right).
            List<Future<Long>> checks = new ArrayList<>();
            for (int r = 0; r < 2; r++) {
                Communicator comm = group.get(r);
                List<DeviceBuffer> mine = registered.get(r);
                int rank = r;
                checks.add(pool.submit(() -> {
                    Cuda.setDevice(0);
                    long bad = 0;
                    try (CudaStream stream = CudaStream.create(); Arena arena = Arena.ofConfined()) {
                        MemorySegment host = arena.allocate(4096);
                        for (DeviceBuffer b : mine) {
                            for (int i = 0; i < 1024; i++) {
                                host.setAtIndex(ValueLayout.JAVA_FLOAT, i, rank + 1 + i);
                            }
                            b.copyFrom(host);
                            // One-stage reads the registered buffer in place: the zero-copy lookup decides.
                            Decision d = comm.allReduce(b.address(), b.address(), 1024, DType.FLOAT32, stream.handle(),
                                    Algorithm.ONE_STAGE);
                            assertEquals(Algorithm.ONE_STAGE, d.algorithm(), d.toString());
                            stream.synchronize();
                            comm.checkPeers();
                            b.copyTo(host);
                            for (int i = 0; i < 1024; i++) {
                                if (host.getAtIndex(ValueLayout.JAVA_FLOAT, i) != 3 + 2f * i) {
                                    bad++;
                                }
                            }
                        }
                    }
                    return bad;
                }));
            }
            for (Future<Long> c : checks) {
                assertEquals(0L, c.get(60, TimeUnit.SECONDS), "wrong elements after concurrent use");
            }
            registered.forEach(list -> list.forEach(DeviceBuffer::close));
        } finally {
            pool.shutdownNow();
            for (Communicator c : group) {
                c.close();
            }
        }
    }

    @Test
    void unregisteredBuffersAreStagedAndTheirAddressesRegisterAgain() throws Exception {
        List<Communicator> group = twoRanksOnGpu0();
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            List<Future<String>> results = new ArrayList<>();
            for (int r = 0; r < 2; r++) {
                Communicator comm = group.get(r);
                int rank = r;
                results.add(pool.submit(() -> {
                    Cuda.setDevice(0);
                    try (CudaStream stream = CudaStream.create(); DeviceBuffer b = DeviceBuffer.allocate(8192);
                         Arena arena = Arena.ofConfined()) {
                        MemorySegment host = arena.allocate(8192);
                        comm.register(b);
                        comm.unregister(b);
                        // Staged now, and still exact.
                        for (int i = 0; i < 2048; i++) {
                            host.setAtIndex(ValueLayout.JAVA_FLOAT, i, rank + 1);
                        }
                        b.copyFrom(host);
                        comm.allReduce(b.address(), b.address(), 2048, DType.FLOAT32, stream.handle(),
                                Algorithm.ONE_STAGE);
                        stream.synchronize();
                        comm.checkPeers();
                        b.copyTo(host);
                        for (int i = 0; i < 2048; i++) {
                            if (host.getAtIndex(ValueLayout.JAVA_FLOAT, i) != 3f) {
                                return "element " + i + " is " + host.getAtIndex(ValueLayout.JAVA_FLOAT, i);
                            }
                        }
                        // The library freed the slot (no graph names the buffer), so the same address
                        // registers again, and all-reduces in it are zero-copy and exact.
                        comm.register(b);
                        for (int i = 0; i < 2048; i++) {
                            host.setAtIndex(ValueLayout.JAVA_FLOAT, i, 10 * (rank + 1));
                        }
                        b.copyFrom(host);
                        comm.allReduce(b.address(), b.address(), 2048, DType.FLOAT32, stream.handle(),
                                Algorithm.ONE_STAGE);
                        stream.synchronize();
                        comm.checkPeers();
                        b.copyTo(host);
                        for (int i = 0; i < 2048; i++) {
                            if (host.getAtIndex(ValueLayout.JAVA_FLOAT, i) != 30f) {
                                return "after re-registering, element " + i + " is "
                                        + host.getAtIndex(ValueLayout.JAVA_FLOAT, i);
                            }
                        }
                        comm.unregister(b);
                        if (!comm.health().isHealthy()) {
                            return "register/unregister/register failed the communicator: " + comm.health();
                        }
                        try {
                            comm.unregister(b);
                            return "unregistering twice was accepted";
                        } catch (IllegalArgumentException expected) {
                            return comm.health().isHealthy() ? "OK" : "unregister twice failed the group";
                        }
                    }
                }));
            }
            for (int r = 0; r < 2; r++) {
                assertEquals("OK", results.get(r).get(60, TimeUnit.SECONDS), "rank " + r);
            }
        } finally {
            pool.shutdownNow();
            for (Communicator c : group) {
                c.close();
            }
        }
    }

    @Test
    void abortAndCloseRacingAllReduceNeverCrashTheJvm() throws Exception {
        Path log = Files.createTempFile("ar4j-close-race-", ".log");
        ChildJvm child = ChildJvm.start(CloseRaceChild.class, List.of(String.valueOf(RACE_ROUNDS), String.valueOf(SEED),
                String.valueOf(RACE_SECONDS)), log);
        try {
            int exit = child.await(RACE_SECONDS + 60);
            String out = child.output();
            String result = out.lines().filter(l -> l.startsWith("RESULT ")).findFirst()
                    .orElseGet(() -> fail("no RESULT line (a JVM crash?), exit " + exit + ":\n" + tail(out)));
            System.out.println("[close race] " + result);
            assertEquals(0, exit, result + "\n" + tail(out));
            assertTrue(result.contains("rounds=" + RACE_ROUNDS + " "), "not every round ran: " + result
                    + " (lower -Dar4j.race.rounds or raise -Dar4j.race.seconds)");
        } finally {
            child.kill();
        }
    }

    private static String tail(String out) {
        return out.length() <= 8000 ? out : out.substring(out.length() - 8000);
    }
}
