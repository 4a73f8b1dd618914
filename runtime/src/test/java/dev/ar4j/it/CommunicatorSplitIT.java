package dev.ar4j.it;

import dev.ar4j.CommunicatorInternals;
import dev.ar4j.Communicator;
import dev.ar4j.DType;
import dev.ar4j.cuda.Cuda;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.cuda.PinnedHostBuffer;
import dev.ar4j.dispatch.Algorithm;
import dev.ar4j.dispatch.Decision;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link Communicator#split} on one GPU: four ranks of one JVM sharing GPU 0 (no NCCL) split by
 * color rank % 2 into {0, 2} and {1, 3}; each sub-communicator gets its own custom kernels and
 * all-reduces bf16 exactly (integer-valued inputs, outputs poisoned with NaN first) while the
 * other sub-group runs at the same time, and the parent still all-reduces exactly afterwards.
 * Needs one GPU; {@code -Dar4j.gpu.required=true} turns a missing GPU into a failure.
 */
@Tag("gpu")
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class CommunicatorSplitIT {

    private static final Duration WAIT = Duration.ofSeconds(60);
    /** bf16 element counts: push, push, one-stage or two-stage sizes; all multiples of 8 (16 bytes). */
    private static final long[] COUNTS = {512, 7680, 262_520, 1_048_576};

    @BeforeAll
    static void needAGpu() {
        GpuRequirement.requireDevices(1);
    }

    /**
     * Four ranks on GPU 0, the default launch geometry. The two sub-groups run their kernels at the
     * same time on the same GPU, and a custom kernel waits for its peer's blocks: the children size
     * their grid for all four parent ranks on the GPU (not only their own two), so that every
     * rank's blocks are resident at once.
     */
    private static List<Communicator> fourRanksOnGpu0() {
        return Communicator.localGroup(new int[] {0, 0, 0, 0}, b -> b.nccl(false).rendezvousTimeout(WAIT));
    }

    private static <T> List<T> onEveryRank(int n, IntFunction<T> task) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            List<Future<T>> futures = new ArrayList<>();
            for (int r = 0; r < n; r++) {
                int rank = r;
                Callable<T> c = () -> {
                    Cuda.setDevice(0);
                    return task.apply(rank);
                };
                futures.add(pool.submit(c));
            }
            List<T> results = new ArrayList<>();
            for (Future<T> f : futures) {
                results.add(f.get(240, TimeUnit.SECONDS));
            }
            return results;
        } finally {
            pool.shutdownNow();
        }
    }

    /** The input of parent rank {@code rank} at element {@code i}: an integer in [-16, 16]. */
    private static int input(int rank, long i, int round) {
        return (int) ((i * 7 + rank * 13 + round * 5) % 33) - 16;
    }

    private static short bf16(int value) {
        return (short) (Float.floatToRawIntBits(value) >>> 16);
    }

    /** The largest call of {@link #COUNTS} in bytes. */
    private static final long MAX_BYTES = COUNTS[COUNTS.length - 1] * 2;

    /**
     * One rank's device and host buffers, allocated before its first kernel and freed after the
     * last barrier. Ranks sharing one GPU in one process share its CUDA context, and cudaFree (like
     * cudaDeviceSynchronize) waits for every kernel on the device: a rank freeing a buffer while a
     * peer's kernel waits for that rank's next launch would wait for it until the kernel deadline
     * (the likely cause of the PeerTimeoutException seen on the H200 when each round allocated its own).
     * Building and closing communicators allocate and free too: the test keeps them between
     * barriers of the parent group.
     */
    private record RankBuffers(CudaStream stream, DeviceBuffer in, DeviceBuffer out, PinnedHostBuffer host,
                               PinnedHostBuffer got) implements AutoCloseable {
        /**
         * Pinned host buffers: a copy from or to pageable memory goes through the driver's staging
         * buffer, which a rank whose copy waits behind its own spinning kernel may hold while a peer's
         * copy, and so the peer's next launch, waits for it.
         */
        static RankBuffers allocate() {
            return new RankBuffers(CudaStream.create(), DeviceBuffer.allocate(MAX_BYTES), DeviceBuffer.allocate(MAX_BYTES),
                    PinnedHostBuffer.allocate(MAX_BYTES), PinnedHostBuffer.allocate(MAX_BYTES));
        }

        @Override
        public void close() {
            try (stream; in; out; host; got) {
                // closed in reverse order
            }
        }
    }

    /**
     * All-reduces every count out of place (output poisoned first) and once in place on {@code comm},
     * whose ranks are the parent ranks {@code members}; returns the failures (empty when exact).
     */
    private static List<String> allReduceExactly(Communicator comm, RankBuffers b, int parentRank, int[] members,
                                                 int round) {
        List<String> failures = new ArrayList<>();
        CudaStream stream = b.stream();
        DeviceBuffer in = b.in();
        DeviceBuffer out = b.out();
        MemorySegment host = b.host().segment();
        MemorySegment got = b.got().segment();
        for (long count : COUNTS) {
            for (boolean inPlace : new boolean[] {false, true}) {
                long bytes = count * 2;
                for (long i = 0; i < count; i++) {
                    host.set(ValueLayout.JAVA_SHORT_UNALIGNED, i * 2, bf16(input(parentRank, i, round)));
                }
                // Everything on the rank's own stream: ranks sharing the GPU never wait on each other's copies.
                in.copyFromAsync(host.asSlice(0, bytes), stream);
                out.fillAsync(0xff, stream);  // NaN in bf16: an element the all-reduce does not write stays wrong
                DeviceBuffer target = inPlace ? in : out;
                Decision d = comm.allReduce(in.address(), target.address(), count, DType.BFLOAT16,
                        stream.handle(), Algorithm.AUTO);
                target.copyToAsync(got.asSlice(0, bytes), stream);
                stream.synchronize();
                comm.checkPeers();
                if (d.algorithm() == Algorithm.NCCL) {
                    failures.add(count + " elements went to NCCL (" + d + ") in a group without NCCL");
                    continue;
                }
                for (long i = 0; i < count; i++) {
                    int sum = 0;
                    for (int m : members) {
                        sum += input(m, i, round);
                    }
                    short want = bf16(sum);
                    short have = got.get(ValueLayout.JAVA_SHORT_UNALIGNED, i * 2);
                    if (have != want) {
                        failures.add("rank " + comm.rank() + "/" + comm.worldSize() + " (parent rank " + parentRank
                                + "), " + count + " elements " + (inPlace ? "in place" : "out of place") + " by "
                                + d.algorithm() + ": element " + i + " is 0x" + Integer.toHexString(have & 0xffff)
                                + ", expected 0x" + Integer.toHexString(want & 0xffff) + " (" + sum + ")");
                        break;
                    }
                }
            }
        }
        return failures;
    }

    @Test
    void fourRanksOnOneGpuSplitIntoTwoPairsWithTheirOwnKernels() throws Exception {
        List<Communicator> parent = fourRanksOnGpu0();
        try {
            for (Communicator c : parent) {
                assertTrue(c.hasCustomKernels(), "the parent must have custom kernels: " + c);
            }
            List<List<String>> failures = onEveryRank(4, r -> {
                Communicator comm = parent.get(r);
                List<String> mine = new ArrayList<>();
                try (RankBuffers buffers = RankBuffers.allocate()) {
                    CommunicatorInternals.rendezvous(comm).barrier("allocated", WAIT);
                    try (Communicator sub = comm.split(r % 2, r)) {
                        // Building a communicator allocates and synchronises the device: no sub-group
                        // launches before both are built (ranks sharing one GPU: docs/DEPLOYING.md).
                        CommunicatorInternals.rendezvous(comm).barrier("subs-built", WAIT);
                        int[] members = r % 2 == 0 ? new int[] {0, 2} : new int[] {1, 3};
                        assertEquals(2, sub.worldSize(), "sub-group size of parent rank " + r);
                        assertEquals(r / 2, sub.rank(), "sub-rank of parent rank " + r + " (key = rank)");
                        assertEquals(0, sub.device());
                        assertTrue(sub.hasCustomKernels(), "the sub-communicator must have its own custom kernels: " + sub);
                        assertFalse(sub.hasNccl(), "nccl(false) is inherited");
                        assertNotEquals(CommunicatorInternals.rendezvous(comm), CommunicatorInternals.rendezvous(sub), "the sub-group has its own rendezvous view");
                        for (int round = 0; round < 3; round++) {
                            mine.addAll(allReduceExactly(sub, buffers, r, members, round));
                        }
                        assertTrue(sub.health().isHealthy(), "sub-communicator of rank " + r + ": " + sub.health());
                        // Close only once every member's last all-reduce completed (peers read this rank's
                        // buffers), and, since closing frees device memory, once both sub-groups' did.
                        CommunicatorInternals.rendezvous(sub).barrier("done", WAIT);
                        CommunicatorInternals.rendezvous(comm).barrier("subs-done", WAIT);
                    }
                    // Closing frees device memory: no rank starts the parent's all-reduces before every
                    // sub-communicator is closed (see RankBuffers).
                    CommunicatorInternals.rendezvous(comm).barrier("subs-closed", WAIT);
                    // The parent still works, over all four ranks.
                    mine.addAll(allReduceExactly(comm, buffers, r, new int[] {0, 1, 2, 3}, 7));
                    assertTrue(comm.health().isHealthy(), "parent rank " + r + ": " + comm.health());
                    CommunicatorInternals.rendezvous(comm).barrier("parent-done", WAIT);
                }
                return mine;
            });
            for (List<String> f : failures) {
                assertEquals(List.of(), f);
            }
        } finally {
            for (Communicator c : parent) {
                c.close();
            }
        }
    }

    /**
     * A split of a split: the four ranks into one reversed group, that group into pairs. The inner
     * sub-groups' keys live in the top-level rendezvous (a nested sub-group is made over it, with
     * its own namespace); their kernels and the middle group's all-reduce exactly.
     */
    @Test
    void aSplitOfASplitAllReducesExactlyOnEveryLevel() throws Exception {
        List<Communicator> parent = fourRanksOnGpu0();
        try {
            List<List<String>> failures = onEveryRank(4, r -> {
                Communicator comm = parent.get(r);
                List<String> mine = new ArrayList<>();
                try (RankBuffers buffers = RankBuffers.allocate()) {
                    CommunicatorInternals.rendezvous(comm).barrier("allocated", WAIT);
                    try (Communicator middle = comm.split(0, -r)) {
                        assertEquals(3 - r, middle.rank(), "middle rank of parent rank " + r + " (key -rank)");
                        CommunicatorInternals.rendezvous(comm).barrier("middle-built", WAIT);
                        try (Communicator inner = middle.split(middle.rank() % 2, middle.rank())) {
                            CommunicatorInternals.rendezvous(comm).barrier("inner-built", WAIT);
                            int[] members = r % 2 == 1 ? new int[] {3, 1} : new int[] {2, 0};
                            assertEquals(2, inner.worldSize());
                            assertTrue(inner.hasCustomKernels(), "the inner sub-communicator's kernels: " + inner);
                            for (int round = 0; round < 2; round++) {
                                mine.addAll(allReduceExactly(inner, buffers, r, members, round));
                            }
                            CommunicatorInternals.rendezvous(inner).barrier("done", WAIT);
                            CommunicatorInternals.rendezvous(comm).barrier("inner-done", WAIT);
                        }
                        CommunicatorInternals.rendezvous(comm).barrier("inner-closed", WAIT);
                        mine.addAll(allReduceExactly(middle, buffers, r, new int[] {0, 1, 2, 3}, 5));
                        assertTrue(middle.health().isHealthy(), "middle of rank " + r + ": " + middle.health());
                        CommunicatorInternals.rendezvous(middle).barrier("done", WAIT);
                        CommunicatorInternals.rendezvous(comm).barrier("middle-done", WAIT);
                    }
                    CommunicatorInternals.rendezvous(comm).barrier("middle-closed", WAIT);
                }
                return mine;
            });
            for (List<String> f : failures) {
                assertEquals(List.of(), f);
            }
        } finally {
            for (Communicator c : parent) {
                c.close();
            }
        }
    }

    @Test
    void colorMinusOneJoinsNoneAndABadColorIsRefusedOnEveryRank() throws Exception {
        List<Communicator> parent = fourRanksOnGpu0();
        try {
            List<String> refusals = onEveryRank(4, r -> assertThrows(IllegalArgumentException.class,
                    () -> parent.get(r).split(r == 1 ? -2 : 0, 0)).getMessage());
            for (String m : refusals) {
                assertTrue(m.contains("rank 1 gave color -2") && m.contains("-1 to join none"), m);
            }
            List<String> outcomes = onEveryRank(4, r -> {
                Communicator comm = parent.get(r);
                assertTrue(comm.health().isHealthy(), "a refused split leaves the parent usable: " + comm.health());
                try (Communicator sub = comm.split(r == 3 ? -1 : 0, -r)) {
                    if (r == 3) {
                        assertNull(sub, "color -1 joins no sub-communicator");
                        return "none";
                    }
                    // Three ranks: no custom kernels for that size, no NCCL: built, but every call would be refused.
                    assertEquals(3, sub.worldSize());
                    assertEquals(2 - r, sub.rank(), "keys -rank reverse the order");
                    assertFalse(sub.hasCustomKernels());
                    CommunicatorInternals.rendezvous(sub).barrier("done", WAIT);
                    return "size " + sub.worldSize();
                }
            });
            assertEquals(List.of("size 3", "size 3", "size 3", "none"), outcomes);
            assertEquals(List.of(List.of(), List.of(), List.of(), List.of()),
                    onEveryRank(4, r -> {
                        try (RankBuffers buffers = RankBuffers.allocate()) {
                            CommunicatorInternals.rendezvous(parent.get(r)).barrier("allocated", WAIT);
                            List<String> f = allReduceExactly(parent.get(r), buffers, r, new int[] {0, 1, 2, 3}, 1);
                            CommunicatorInternals.rendezvous(parent.get(r)).barrier("checked", WAIT);
                            return f;
                        }
                    }),
                    "the parent all-reduces exactly after the splits");
        } finally {
            for (Communicator c : parent) {
                c.close();
            }
        }
    }
}
