package dev.ar4j.it;

import dev.ar4j.dispatch.Algorithm;

import dev.ar4j.Communicator;
import dev.ar4j.DType;
import dev.ar4j.GraphCapture;
import dev.ar4j.cuda.CaptureMode;
import dev.ar4j.cuda.Cuda;
import dev.ar4j.cuda.CudaGraph;
import dev.ar4j.cuda.CudaGraphExec;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.cuda.GpuTestSupport;
import dev.ar4j.internal.kernels.ResidualRmsNorm;
import dev.ar4j.internal.kernels.ResidualRmsNormIT;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link Communicator#allReduceResidualRmsNorm} with two ranks of one JVM sharing GPU 0 (no
 * NCCL): for every dtype and several shapes, the fused kernel's outputs are bitwise equal to the
 * unfused path's (all-reduce, then {@link ResidualRmsNorm}) and to the other rank's; the all-reduce
 * is exact (integer-valued inputs) and the norm within 1e-5 / 2e-3 / 1.6e-2 (fp32 / fp16 / bf16)
 * of a double-precision host reference; outputs are poisoned with NaN first. With the one-stage
 * algorithm forced, the same for the fused one-stage kernel on an unregistered input (staged), a
 * registered one (read in place), a registered one with {@code out == in} (staged), and in a CUDA
 * graph (registered and unregistered).
 */
@Tag("gpu")
class FusedNormOneJvmIT {
    private static final int[][] SHAPES = {{1, 7168}, {3, 7168}, {17, 64}, {2, 4096}, {1, 16384}};
    private static final float EPS = 1e-6f;

    @Test
    @Timeout(180)
    void fusedEqualsUnfusedBitwiseOnEveryRank() throws Exception {
        onTwoRanks(b -> b.nccl(false), FusedNormOneJvmIT::rank);
    }

    @Test
    @Timeout(180)
    void fusedOneStageEqualsUnfusedBitwiseOnEveryRank() throws Exception {
        onTwoRanks(b -> b.nccl(false).algorithmPolicy(Algorithm.ONE_STAGE), FusedNormOneJvmIT::oneStageRank);
    }

    private interface RankBody {
        List<int[]> run(Communicator comm, CyclicBarrier barrier) throws Exception;
    }

    /** Runs body on both ranks of a group sharing GPU 0; both ranks' outputs must be bitwise equal. */
    private static void onTwoRanks(Consumer<Communicator.Builder> configure, RankBody body) throws Exception {
        GpuTestSupport.requireGpus(1);
        List<Communicator> group = Communicator.localGroup(new int[] {0, 0}, configure);
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            CyclicBarrier barrier = new CyclicBarrier(2);
            List<Future<List<int[]>>> results = new ArrayList<>();
            for (int r = 0; r < 2; r++) {
                Communicator comm = group.get(r);
                results.add(pool.submit(() -> body.run(comm, barrier)));
            }
            List<int[]> r0 = results.get(0).get(150, TimeUnit.SECONDS);
            List<int[]> r1 = results.get(1).get(150, TimeUnit.SECONDS);
            assertEquals(r0.size(), r1.size());
            for (int i = 0; i < r0.size(); i++) {
                assertArrayEquals(r0.get(i), r1.get(i), "case " + i + ": the ranks' outputs differ bitwise");
            }
        } finally {
            pool.shutdownNow();
            for (Communicator c : group) {
                c.close();
            }
        }
    }

    private static List<int[]> rank(Communicator comm, CyclicBarrier barrier) throws Exception {
        Cuda.setDevice(comm.device());
        List<int[]> outputs = new ArrayList<>();
        SplittableRandom shared = new SplittableRandom(20261201);  // same residual/weight on both ranks
        SplittableRandom mine = new SplittableRandom(7 + comm.rank());
        try (CudaStream stream = CudaStream.create(); Arena arena = Arena.ofConfined()) {
            for (DType dtype : DType.values()) {
                for (int[] shape : SHAPES) {
                    int rows = shape[0], hidden = shape[1], n = rows * hidden;
                    long bytes = (long) n * dtype.byteSize();
                    Data data = new Data(rows, hidden, mine, shared);
                    String what = dtype + " rows=" + rows + " hidden=" + hidden + " rank " + comm.rank();
                    boolean expectFused = (long) hidden * dtype.byteSize() % 16 == 0;
                    try (DeviceBuffer dIn = DeviceBuffer.allocate(bytes); DeviceBuffer dRes = DeviceBuffer.allocate(bytes);
                         DeviceBuffer dW = DeviceBuffer.allocate((long) hidden * dtype.byteSize());
                         DeviceBuffer out = DeviceBuffer.allocate(bytes); DeviceBuffer resOut = DeviceBuffer.allocate(bytes);
                         DeviceBuffer sum = DeviceBuffer.allocate(bytes); DeviceBuffer out2 = DeviceBuffer.allocate(bytes);
                         DeviceBuffer resOut2 = DeviceBuffer.allocate(bytes)) {
                        data.upload(arena, dtype, dIn, dRes, dW);
                        for (DeviceBuffer b : new DeviceBuffer[] {out, resOut, sum, out2, resOut2}) b.fill(0xff);
                        PEER_INPUTS.put(key(comm.rank(), dtype, shape, "push"), data.in);
                        barrier.await(60, TimeUnit.SECONDS);  // both inputs published, both ranks ready
                        boolean fused = comm.allReduceResidualRmsNorm(dIn, dRes, dW, out, resOut, hidden, EPS, dtype, stream);
                        assertEquals(expectFused, fused, what + ": " + comm.explainResidualRmsNorm(bytes, hidden, dtype));
                        // The unfused path, explicitly: all-reduce, then the separate kernel.
                        comm.allReduce(dIn, sum, dtype, stream);
                        ResidualRmsNorm.launch(dtype, sum, dRes, dW, out2, resOut2, hidden, EPS, stream);
                        stream.synchronize();
                        comm.checkPeers();
                        float[] theirs = PEER_INPUTS.get(key(1 - comm.rank(), dtype, shape, "push"));
                        outputs.add(verify(arena, dtype, data, theirs, out, resOut, out2, resOut2, sum, what));
                    }
                }
            }
        }
        return outputs;
    }

    /** Shapes of the one-stage cases: few rows, rows past a push call's limit, rows past the grid. */
    private static final int[][] ONE_STAGE_SHAPES = {{3, 7168}, {40, 7168}, {150, 64}};

    /**
     * The fused one-stage kernel (the policy forces one-stage): modes 0 unregistered input (staged),
     * 1 registered input (in place), 2 registered input with out == in (staged), 3 and 4 modes 1 and 0
     * captured in a CUDA graph and replayed. The unfused reference runs first (mode 2 overwrites in).
     */
    private static List<int[]> oneStageRank(Communicator comm, CyclicBarrier barrier) throws Exception {
        Cuda.setDevice(comm.device());
        List<int[]> outputs = new ArrayList<>();
        SplittableRandom shared = new SplittableRandom(20261202);
        SplittableRandom mine = new SplittableRandom(11 + comm.rank());
        long largest = 40L * 7168 * 4;
        try (CudaStream stream = CudaStream.create(); Arena arena = Arena.ofConfined();
             DeviceBuffer registered = DeviceBuffer.allocate(largest)) {
            comm.register(registered);
            try {
                for (DType dtype : DType.values()) {
                    for (int[] shape : ONE_STAGE_SHAPES) {
                        for (int mode = 0; mode < 5; mode++) {
                            outputs.add(oneStageCase(comm, barrier, arena, stream, registered, dtype, shape, mode,
                                    new Data(shape[0], shape[1], mine, shared)));
                        }
                    }
                }
            } finally {
                comm.unregister(registered);
            }
        }
        return outputs;
    }

    private static int[] oneStageCase(Communicator comm, CyclicBarrier barrier, Arena arena, CudaStream stream,
                                      DeviceBuffer registered, DType dtype, int[] shape, int mode, Data data)
            throws Exception {
        int rows = shape[0], hidden = shape[1];
        long bytes = (long) rows * hidden * dtype.byteSize();
        boolean inRegistered = mode == 1 || mode == 2 || mode == 3;
        boolean inPlace = mode == 2;
        boolean graph = mode >= 3;
        String what = "one-stage " + dtype + " rows=" + rows + " hidden=" + hidden + " mode " + mode + " rank "
                + comm.rank();
        try (DeviceBuffer own = DeviceBuffer.allocate(bytes); DeviceBuffer dRes = DeviceBuffer.allocate(bytes);
             DeviceBuffer dW = DeviceBuffer.allocate((long) hidden * dtype.byteSize());
             DeviceBuffer outBuf = DeviceBuffer.allocate(bytes); DeviceBuffer resOut = DeviceBuffer.allocate(bytes);
             DeviceBuffer sum = DeviceBuffer.allocate(bytes); DeviceBuffer out2 = DeviceBuffer.allocate(bytes);
             DeviceBuffer resOut2 = DeviceBuffer.allocate(bytes)) {
            DeviceBuffer dIn = inRegistered ? registered.slice(0, bytes) : own;
            DeviceBuffer out = inPlace ? dIn : outBuf;
            data.upload(arena, dtype, dIn, dRes, dW);
            for (DeviceBuffer b : new DeviceBuffer[] {outBuf, resOut, sum, out2, resOut2}) b.fill(0xff);
            PEER_INPUTS.put(key(comm.rank(), dtype, shape, "1stage " + mode), data.in);
            String explained = comm.explainResidualRmsNorm(bytes, hidden, dtype, inRegistered);
            assertTrue(explained.startsWith("fused: one 1-stage kernel"), what + ": " + explained);
            CudaGraphExec exec = null;
            boolean fused = false;
            if (graph) {
                CudaGraph captured;
                try (GraphCapture scope = comm.graphCapture()) {
                    CudaGraph.beginCapture(stream, CaptureMode.THREAD_LOCAL);
                    try {
                        fused = comm.allReduceResidualRmsNorm(dIn, dRes, dW, out, resOut, hidden, EPS, dtype, stream);
                    } finally {
                        captured = CudaGraph.endCapture(stream);
                    }
                }
                exec = captured.instantiate();
                captured.close();
            }
            barrier.await(60, TimeUnit.SECONDS);  // both inputs published, both ranks ready
            try {
                // The unfused reference first, explicitly: all-reduce, then the separate kernel.
                comm.allReduce(dIn, sum, dtype, stream);
                ResidualRmsNorm.launch(dtype, sum, dRes, dW, out2, resOut2, hidden, EPS, stream);
                if (graph) {
                    exec.launch(stream);  // fused holds what the captured call returned
                } else {
                    fused = comm.allReduceResidualRmsNorm(dIn, dRes, dW, out, resOut, hidden, EPS, dtype, stream);
                }
                stream.synchronize();
            } finally {
                if (exec != null) {
                    exec.close();
                }
            }
            assertTrue(fused, what + ": not fused; " + explained);
            comm.checkPeers();
            float[] theirs = PEER_INPUTS.get(key(1 - comm.rank(), dtype, shape, "1stage " + mode));
            return verify(arena, dtype, data, theirs, out, resOut, out2, resOut2, sum, what);
        }
    }

    /** One rank's data of one case: its integer-valued input, and the residual and weight every rank shares. */
    private static final class Data {
        final int rows, hidden;
        final float[] in, residual, weight;

        Data(int rows, int hidden, SplittableRandom mine, SplittableRandom shared) {
            this.rows = rows;
            this.hidden = hidden;
            int n = rows * hidden;
            in = new float[n];
            residual = new float[n];
            weight = new float[hidden];
            for (int i = 0; i < n; i++) {
                in[i] = mine.nextInt(-8, 9);
                residual[i] = shared.nextInt(-8, 9);
            }
            for (int i = 0; i < hidden; i++) weight[i] = shared.nextInt(-4, 5) / 4f;
        }

        void upload(Arena arena, DType dtype, DeviceBuffer dIn, DeviceBuffer dRes, DeviceBuffer dW) {
            dIn.copyFrom(ResidualRmsNormIT.toHost(arena, dtype, in));
            dRes.copyFrom(ResidualRmsNormIT.toHost(arena, dtype, residual));
            dW.copyFrom(ResidualRmsNormIT.toHost(arena, dtype, weight));
        }
    }

    /**
     * The checks of one case: the fused outputs bitwise equal to the unfused ones, the all-reduce
     * exact (this rank's input + the other's, small integers), the norm within the dtype's tolerance
     * of a double-precision host reference. Returns out and residualOut's bits, for the cross-rank check.
     */
    private static int[] verify(Arena arena, DType dtype, Data data, float[] theirs, DeviceBuffer out,
                                DeviceBuffer resOut, DeviceBuffer out2, DeviceBuffer resOut2, DeviceBuffer sum,
                                String what) {
        int rows = data.rows, hidden = data.hidden, n = rows * hidden;
        long bytes = (long) n * dtype.byteSize();
        int[] o = ResidualRmsNormIT.bits(dtype, copy(arena, out, bytes), n);
        int[] ro = ResidualRmsNormIT.bits(dtype, copy(arena, resOut, bytes), n);
        int[] o2 = ResidualRmsNormIT.bits(dtype, copy(arena, out2, bytes), n);
        int[] ro2 = ResidualRmsNormIT.bits(dtype, copy(arena, resOut2, bytes), n);
        int[] s = ResidualRmsNormIT.bits(dtype, copy(arena, sum, bytes), n);
        assertArrayEquals(ro2, ro, what + ": residualOut of the fused call differs from the unfused path");
        assertArrayEquals(o2, o, what + ": out of the fused call differs from the unfused path");
        int wrongSums = 0;
        for (int i = 0; i < n; i++) {
            float expected = data.in[i] + theirs[i];
            if (ResidualRmsNormIT.fromBits(dtype, s[i]) != expected) wrongSums++;
        }
        assertEquals(0, wrongSums, what + ": all-reduce elements wrong");
        double tolerance = dtype == DType.FLOAT32 ? 1e-5 : dtype == DType.FLOAT16 ? 2e-3 : 1.6e-2;
        int wrongNorm = 0;
        for (int r = 0; r < rows; r++) {
            double squares = 0;
            for (int i = 0; i < hidden; i++) {
                double v = ResidualRmsNormIT.fromBits(dtype, ro[r * hidden + i]);
                squares += v * v;
            }
            double inv = 1.0 / Math.sqrt(squares / hidden + EPS);
            for (int i = 0; i < hidden; i++) {
                int k = r * hidden + i;
                double ref = ResidualRmsNormIT.fromBits(dtype, ro[k]) * inv * data.weight[i];
                double got = ResidualRmsNormIT.fromBits(dtype, o[k]);
                if (!(Math.abs(got - ref) / Math.max(1.0, Math.abs(ref)) <= tolerance)) wrongNorm++;
            }
        }
        assertEquals(0, wrongNorm, what + ": norm elements beyond " + tolerance);
        int[] both = Arrays.copyOf(o, 2 * n);
        System.arraycopy(ro, 0, both, n, n);
        return both;
    }

    /** Each rank's input of each case, published before the case's barrier. */
    private static final java.util.Map<String, float[]> PEER_INPUTS = new java.util.concurrent.ConcurrentHashMap<>();

    private static String key(int rank, DType dtype, int[] shape, String variant) {
        return rank + "/" + dtype + "/" + shape[0] + "x" + shape[1] + "/" + variant;
    }

    private static MemorySegment copy(Arena arena, DeviceBuffer b, long bytes) {
        MemorySegment host = arena.allocate(bytes);
        b.copyTo(host);
        return host;
    }
}
