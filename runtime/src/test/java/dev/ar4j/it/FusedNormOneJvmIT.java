package dev.ar4j.it;

import dev.ar4j.Communicator;
import dev.ar4j.DType;
import dev.ar4j.cuda.Cuda;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.cuda.GpuTestSupport;
import dev.ar4j.kernels.ResidualRmsNorm;
import dev.ar4j.kernels.ResidualRmsNormIT;
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

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * {@link Communicator#allReduceResidualRmsNorm} with two ranks of one JVM sharing GPU 0 (no
 * NCCL): for every dtype and several shapes, the fused kernel's outputs are bitwise equal to the
 * unfused path's (all-reduce, then {@link ResidualRmsNorm}) and to the other rank's; the all-reduce
 * is exact (integer-valued inputs) and the norm within 1e-5 / 2e-3 / 1.6e-2 (fp32 / fp16 / bf16)
 * of a double-precision host reference; outputs are poisoned with NaN first.
 */
@Tag("gpu")
class FusedNormOneJvmIT {
    private static final int[][] SHAPES = {{1, 7168}, {3, 7168}, {17, 64}, {2, 4096}, {1, 16384}};
    private static final float EPS = 1e-6f;

    @Test
    @Timeout(180)
    void fusedEqualsUnfusedBitwiseOnEveryRank() throws Exception {
        GpuTestSupport.requireGpus(1);
        List<Communicator> group = Communicator.localGroup(new int[] {0, 0}, b -> b.nccl(false));
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            CyclicBarrier barrier = new CyclicBarrier(2);
            List<Future<List<int[]>>> results = new ArrayList<>();
            for (int r = 0; r < 2; r++) {
                Communicator comm = group.get(r);
                results.add(pool.submit(() -> rank(comm, barrier)));
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
                    float[] in = new float[n], residual = new float[n], weight = new float[hidden];
                    for (int i = 0; i < n; i++) {
                        in[i] = mine.nextInt(-8, 9);
                        residual[i] = shared.nextInt(-8, 9);
                    }
                    for (int i = 0; i < hidden; i++) weight[i] = shared.nextInt(-4, 5) / 4f;
                    String what = dtype + " rows=" + rows + " hidden=" + hidden + " rank " + comm.rank();
                    boolean expectFused = (long) hidden * dtype.byteSize() % 16 == 0;
                    try (DeviceBuffer dIn = DeviceBuffer.allocate(bytes); DeviceBuffer dRes = DeviceBuffer.allocate(bytes);
                         DeviceBuffer dW = DeviceBuffer.allocate((long) hidden * dtype.byteSize());
                         DeviceBuffer out = DeviceBuffer.allocate(bytes); DeviceBuffer resOut = DeviceBuffer.allocate(bytes);
                         DeviceBuffer sum = DeviceBuffer.allocate(bytes); DeviceBuffer out2 = DeviceBuffer.allocate(bytes);
                         DeviceBuffer resOut2 = DeviceBuffer.allocate(bytes)) {
                        dIn.copyFrom(ResidualRmsNormIT.toHost(arena, dtype, in));
                        dRes.copyFrom(ResidualRmsNormIT.toHost(arena, dtype, residual));
                        dW.copyFrom(ResidualRmsNormIT.toHost(arena, dtype, weight));
                        for (DeviceBuffer b : new DeviceBuffer[] {out, resOut, sum, out2, resOut2}) b.fill(0xff);
                        PEER_INPUTS.put(key(comm.rank(), dtype, shape), in);
                        barrier.await(60, TimeUnit.SECONDS);  // both inputs published, both ranks ready
                        boolean fused = comm.allReduceResidualRmsNorm(dIn, dRes, dW, out, resOut, hidden, EPS, dtype, stream);
                        assertEquals(expectFused, fused, what + ": " + comm.explainResidualRmsNorm(bytes, hidden, dtype));
                        // The unfused path, explicitly: all-reduce, then the separate kernel.
                        comm.allReduce(dIn, sum, dtype, stream);
                        ResidualRmsNorm.launch(dtype, sum, dRes, dW, out2, resOut2, hidden, EPS, stream);
                        stream.synchronize();
                        comm.checkPeers();
                        int[] o = ResidualRmsNormIT.bits(dtype, copy(arena, out, bytes), n);
                        int[] ro = ResidualRmsNormIT.bits(dtype, copy(arena, resOut, bytes), n);
                        int[] o2 = ResidualRmsNormIT.bits(dtype, copy(arena, out2, bytes), n);
                        int[] ro2 = ResidualRmsNormIT.bits(dtype, copy(arena, resOut2, bytes), n);
                        int[] s = ResidualRmsNormIT.bits(dtype, copy(arena, sum, bytes), n);
                        assertArrayEquals(ro2, ro, what + ": residualOut of the fused call differs from the unfused path");
                        assertArrayEquals(o2, o, what + ": out of the fused call differs from the unfused path");
                        // The all-reduce is exact: this rank's input + the other's (small integers).
                        float[] theirs = PEER_INPUTS.get(key(1 - comm.rank(), dtype, shape));
                        int wrongSums = 0;
                        for (int i = 0; i < n; i++) {
                            float expected = in[i] + theirs[i];
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
                                double ref = ResidualRmsNormIT.fromBits(dtype, ro[k]) * inv * weight[i];
                                double got = ResidualRmsNormIT.fromBits(dtype, o[k]);
                                if (!(Math.abs(got - ref) / Math.max(1.0, Math.abs(ref)) <= tolerance)) wrongNorm++;
                            }
                        }
                        assertEquals(0, wrongNorm, what + ": norm elements beyond " + tolerance);
                        int[] both = Arrays.copyOf(o, 2 * n);
                        System.arraycopy(ro, 0, both, n, n);
                        outputs.add(both);
                    }
                }
            }
        }
        return outputs;
    }

    /** Each rank's input of each case, published before the case's barrier. */
    private static final java.util.Map<String, float[]> PEER_INPUTS = new java.util.concurrent.ConcurrentHashMap<>();

    private static String key(int rank, DType dtype, int[] shape) {
        return rank + "/" + dtype + "/" + shape[0] + "x" + shape[1];
    }

    private static MemorySegment copy(Arena arena, DeviceBuffer b, long bytes) {
        MemorySegment host = arena.allocate(bytes);
        b.copyTo(host);
        return host;
    }
}
