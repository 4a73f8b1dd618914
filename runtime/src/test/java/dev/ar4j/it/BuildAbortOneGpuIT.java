package dev.ar4j.it;

import dev.ar4j.BuildAbort;
import dev.ar4j.BuildAbortedException;
import dev.ar4j.Communicator;
import dev.ar4j.DType;
import dev.ar4j.Health;
import dev.ar4j.PeerLostException;
import dev.ar4j.cuda.Cuda;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Aborting what is still being built, on one GPU with the ranks sharing it (no NCCL): a
 * {@link BuildAbort} ends a build that waits for a rank that never comes, and its peer's build
 * too; it ends a build still connecting; once the build returned it aborts the communicator; a
 * parent's abort ends a split in progress; and a sub-communicator's abort ends its peers'
 * rendezvous waits while the parent goes on. Every rendezvous wait here has a 60 s timeout, so a
 * build or call that ended within the asserted 5 s was ended by the abort. Each test also builds
 * (or uses) a group afterwards on the same GPU: nothing the aborted build made is left behind.
 */
@Tag("gpu")
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class BuildAbortOneGpuIT {

    private static final Duration LONG = Duration.ofSeconds(60);
    private static final long PROMPT_MILLIS = 5_000;

    @BeforeAll
    static void needAGpu() {
        GpuRequirement.requireDevices(1);
    }

    private static int freePort() throws IOException {
        try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return probe.getLocalPort();
        }
    }

    private static Communicator.Builder tcpRank(int rank, int worldSize, int port) {
        return Communicator.builder().rank(rank).worldSize(worldSize).masterAddress("127.0.0.1", port).device(0)
                .nccl(false).rendezvousTimeout(LONG);
    }

    private static <T> Throwable failureWithin(CompletableFuture<T> f, long millis) {
        ExecutionException e = assertThrows(ExecutionException.class, () -> f.get(millis, TimeUnit.MILLISECONDS));
        return e.getCause();
    }

    /** Two ranks on GPU 0 over TCP, built at once; both closed by the caller. */
    private static List<Communicator> tcpPair(ExecutorService threads) throws Exception {
        int port = freePort();
        List<CompletableFuture<Communicator>> builds = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
            int rank = r;
            builds.add(CompletableFuture.supplyAsync(() -> tcpRank(rank, 2, port).build(), threads));
        }
        List<Communicator> pair = new ArrayList<>();
        for (CompletableFuture<Communicator> b : builds) {
            pair.add(b.get(60, TimeUnit.SECONDS));
        }
        return pair;
    }

    /** One exact all-reduce of 1024 fp32 ones over every communicator of the group (each on its own thread). */
    private static void exactAllReduce(List<Communicator> group, ExecutorService threads) throws Exception {
        List<CompletableFuture<float[]>> runs = new ArrayList<>();
        for (Communicator c : group) {
            runs.add(CompletableFuture.supplyAsync(() -> {
                Cuda.setDevice(0);
                try (CudaStream stream = CudaStream.create(); DeviceBuffer x = DeviceBuffer.allocate(4096);
                     java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
                    java.lang.foreign.MemorySegment host = arena.allocate(4096);
                    for (int i = 0; i < 1024; i++) {
                        host.setAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, i, 1f);
                    }
                    x.copyFrom(host);
                    c.allReduce(x, DType.FLOAT32, stream);
                    stream.synchronize();
                    host.fill((byte) 0x7f);  // poisoned before the result is read back
                    x.copyTo(host);
                    return host.toArray(java.lang.foreign.ValueLayout.JAVA_FLOAT);
                }
            }, threads));
        }
        for (CompletableFuture<float[]> run : runs) {
            float[] out = run.get(60, TimeUnit.SECONDS);
            for (float v : out) {
                assertEquals((float) group.size(), v);
            }
        }
    }

    @Test
    void anAbortEndsABuildWaitingForAMissingRankAndThePeersBuildToo() throws Exception {
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            int port = freePort();
            BuildAbort abort = new BuildAbort();
            // World size 3; rank 2 never starts: both builds wait for it in the peer-record exchange.
            CompletableFuture<Communicator> rank0 = CompletableFuture.supplyAsync(
                    () -> tcpRank(0, 3, port).abortWith(abort).build(), threads);
            CompletableFuture<Communicator> rank1 = CompletableFuture.supplyAsync(() -> tcpRank(1, 3, port).build(), threads);
            Thread.sleep(1_500);
            assertFalse(rank0.isDone() || rank1.isDone(), "the builds should be waiting for rank 2");
            long start = System.nanoTime();
            abort.abort("the scheduler cancelled the job");
            BuildAbortedException own = assertInstanceOf(BuildAbortedException.class, failureWithin(rank0, PROMPT_MILLIS));
            assertTrue(own.getMessage().contains("the scheduler cancelled the job"), own.getMessage());
            PeerLostException peer = assertInstanceOf(PeerLostException.class, failureWithin(rank1, PROMPT_MILLIS));
            assertEquals(0, peer.peer(), peer.getMessage());
            assertTrue(peer.getMessage().contains("aborted") && peer.getMessage().contains("the scheduler cancelled the job"),
                    peer.getMessage());
            System.out.printf("MEASURED | build abort, rank 2 missing | own build BuildAbortedException, peer's "
                    + "PeerLostException | %.1f ms%n", (System.nanoTime() - start) / 1e6);
            // The port and the GPU are free again: a group forms there now, and reduces exactly.
            List<Communicator> again = new ArrayList<>();
            List<CompletableFuture<Communicator>> builds = new ArrayList<>();
            for (int r = 0; r < 2; r++) {
                int rank = r;
                builds.add(CompletableFuture.supplyAsync(() -> tcpRank(rank, 2, port).build(), threads));
            }
            try {
                for (CompletableFuture<Communicator> b : builds) {
                    again.add(b.get(60, TimeUnit.SECONDS));
                }
                exactAllReduce(again, threads);
            } finally {
                again.forEach(Communicator::close);
            }
        }
    }

    @Test
    void anAbortEndsABuildStillConnectingToAServerThatNeverStarts() throws Exception {
        int port = freePort();
        BuildAbort abort = new BuildAbort();
        CompletableFuture<Communicator> rank1 = CompletableFuture.supplyAsync(
                () -> tcpRank(1, 2, port).abortWith(abort).build());
        Thread.sleep(1_000);
        long start = System.nanoTime();
        abort.abort("gave up on rank 0");
        BuildAbortedException e = assertInstanceOf(BuildAbortedException.class, failureWithin(rank1, PROMPT_MILLIS));
        assertTrue(e.getMessage().contains("gave up on rank 0") && e.getMessage().contains("connecting"), e.getMessage());
        System.out.printf("MEASURED | build abort while connecting | BuildAbortedException | %.1f ms%n",
                (System.nanoTime() - start) / 1e6);
        BuildAbortedException before = assertThrows(BuildAbortedException.class,
                () -> tcpRank(1, 2, port).abortWith(abortedAlready()).build());
        assertTrue(before.getMessage().contains("before it started"), before.getMessage());
    }

    private static BuildAbort abortedAlready() {
        BuildAbort a = new BuildAbort();
        a.abort("aborted before the build");
        return a;
    }

    @Test
    void afterTheBuildTheHandleAbortsTheCommunicatorItBuilt() throws Exception {
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            int port = freePort();
            BuildAbort abort = new BuildAbort();
            CompletableFuture<Communicator> b0 = CompletableFuture.supplyAsync(
                    () -> tcpRank(0, 2, port).abortWith(abort).build(), threads);
            CompletableFuture<Communicator> b1 = CompletableFuture.supplyAsync(() -> tcpRank(1, 2, port).build(), threads);
            try (Communicator c0 = b0.get(60, TimeUnit.SECONDS); Communicator c1 = b1.get(60, TimeUnit.SECONDS)) {
                assertTrue(c0.health().isHealthy());
                abort.abort("watchdog: the job is stuck");
                assertEquals(Health.Status.ABORTED, c0.health().status());
                // The peer hears of it (a loss reported by the rendezvous) without making a call.
                long deadline = System.currentTimeMillis() + PROMPT_MILLIS;
                while (c1.health().isHealthy() && System.currentTimeMillis() < deadline) {
                    Thread.sleep(10);
                }
                assertFalse(c1.health().isHealthy(), "rank 1 did not learn of rank 0's abort: " + c1.health());
            }
        }
    }

    @Test
    void aParentsAbortEndsASplitInProgress() throws Exception {
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Communicator> group = Communicator.localGroup(new int[] {0, 0}, b -> b.nccl(false).rendezvousTimeout(LONG));
            try {
                CompletableFuture<Communicator> split = CompletableFuture.supplyAsync(() -> group.get(0).split(0, 0), threads);
                Thread.sleep(1_000);
                assertFalse(split.isDone(), "rank 0's split should wait for rank 1's");
                long start = System.nanoTime();
                group.get(0).abort();
                Throwable t = failureWithin(split, PROMPT_MILLIS);
                assertTrue(t.getMessage().contains("abort"), "ended with " + t);
                System.out.printf("MEASURED | parent abort during a split | %s | %.1f ms%n", t.getClass().getSimpleName(),
                        (System.nanoTime() - start) / 1e6);
            } finally {
                group.forEach(Communicator::close);
            }
        }
    }

    @Test
    void aSubCommunicatorsAbortEndsItsPeersWaitsAndTheParentGoesOn() throws Exception {
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            for (String kind : List.of("in-process", "tcp")) {
                List<Communicator> parent = kind.equals("tcp") ? tcpPair(threads)
                        : Communicator.localGroup(new int[] {0, 0}, b -> b.nccl(false).rendezvousTimeout(LONG));
                try {
                    List<CompletableFuture<Communicator>> splits = new ArrayList<>();
                    for (Communicator c : parent) {
                        splits.add(CompletableFuture.supplyAsync(() -> c.split(0, c.rank()), threads));
                    }
                    Communicator sub0 = splits.get(0).get(60, TimeUnit.SECONDS);
                    Communicator sub1 = splits.get(1).get(60, TimeUnit.SECONDS);
                    try (sub0; sub1) {
                        // Sub-rank 1 registers a buffer (collective); sub-rank 0 never does, and is aborted.
                        CompletableFuture<Void> register = CompletableFuture.runAsync(() -> {
                            Cuda.setDevice(0);
                            try (DeviceBuffer x = DeviceBuffer.allocate(1 << 20)) {
                                sub1.register(x);
                            }
                        }, threads);
                        Thread.sleep(1_000);
                        assertFalse(register.isDone(), kind + ": sub-rank 1's register should wait for sub-rank 0");
                        long start = System.nanoTime();
                        sub0.abort();
                        Throwable t = failureWithin(register, PROMPT_MILLIS);
                        PeerLostException lost = assertInstanceOf(PeerLostException.class, t, () -> kind + ": " + t);
                        assertTrue(lost.getMessage().contains("aborted"), lost.getMessage());
                        System.out.printf("MEASURED | sub-communicator abort (%s) | the peer's register: "
                                + "PeerLostException | %.1f ms%n", kind, (System.nanoTime() - start) / 1e6);
                    }
                    assertTrue(parent.get(0).health().isHealthy() && parent.get(1).health().isHealthy(),
                            kind + ": the parent must go on: " + parent.get(0).health() + " / " + parent.get(1).health());
                    exactAllReduce(parent, threads);
                } finally {
                    parent.forEach(Communicator::close);
                }
            }
        }
    }
}
