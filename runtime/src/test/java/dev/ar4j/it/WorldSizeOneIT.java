package dev.ar4j.it;

import dev.ar4j.Communicator;
import dev.ar4j.DType;
import dev.ar4j.GraphCapture;
import dev.ar4j.RmsNorm;
import dev.ar4j.cuda.CaptureMode;
import dev.ar4j.cuda.CudaGraph;
import dev.ar4j.cuda.CudaGraphExec;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.dispatch.Algorithm;
import dev.ar4j.dispatch.Decision;
import dev.ar4j.nccl.NcclDisabledException;
import dev.ar4j.internal.platform.ChildJvm;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import static dev.ar4j.internal.kernels.ResidualRmsNormIT.bits;
import static dev.ar4j.internal.kernels.ResidualRmsNormIT.fromBits;
import static dev.ar4j.internal.kernels.ResidualRmsNormIT.representable;
import static dev.ar4j.internal.kernels.ResidualRmsNormIT.toBits;
import static dev.ar4j.internal.kernels.ResidualRmsNormIT.toHost;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A communicator of world size 1 on GPU 0 costs nothing: no NCCL (a child JVM whose
 * {@code AR4J_NCCL_PATH} names no file builds one and runs every call), no custom kernels; the
 * all-reduce in place leaves the buffer as it is and out of place copies it exactly, eager and in a
 * CUDA graph; {@code allReduceResidualRmsNorm} on fresh random data, outputs poisoned with NaN
 * first, gives residualOut bitwise equal to the host's {@code round(in + residual)}, out within
 * 1e-5 / 2e-3 / 1.6e-2 (fp32 / fp16 / bf16) of a double-precision host reference and bitwise equal
 * to the standalone {@link RmsNorm#residualRmsNorm} on the same inputs, eager and replayed from a
 * CUDA graph, in place and out of place; abort, health and close behave.
 */
@Tag("gpu")
class WorldSizeOneIT {
    private static final float EPS = 1e-6f;
    private static final int[][] SHAPES = {{1, 4096}, {3, 5120}, {8, 8192}, {2, 4099}, {5, 7}};

    @Test
    @Timeout(120)
    void buildsAndRunsWithoutNccl() throws Exception {
        GpuRequirement.requireDevices(1);
        Path log = Files.createTempFile("ar4j-world-size-one-", ".log");
        ChildJvm child = ChildJvm.start(WorldSizeOneChild.class, List.of(), List.of(),
                Map.of("AR4J_NCCL_PATH", "/nonexistent/ar4j-world-size-one/libnccl.so.2"), log);
        int exit = child.await(100);
        String output = child.output();
        assertEquals(0, exit, "child output:\n" + output);
        assertTrue(output.contains("OK"), output);
    }

    @Test
    @Timeout(120)
    void allReduceIsACopyOrNothing() {
        GpuRequirement.requireDevices(1);
        try (Communicator comm = Communicator.builder().rank(0).worldSize(1).device(0).build();
             CudaStream stream = CudaStream.create();
             Arena arena = Arena.ofConfined()) {
            assertFalse(comm.hasNccl());
            assertFalse(comm.hasCustomKernels());
            assertTrue(comm.explain(43008, DType.BFLOAT16).contains("world size 1 → local copy"));
            Decision d = comm.allReduce(0x100L, 0x100L, 16, DType.FLOAT32, stream.handle(), Algorithm.NCCL);
            assertEquals(Algorithm.LOCAL, d.algorithm(), "in place with a forced policy: nothing, and says so");
            NcclDisabledException refused = assertThrows(NcclDisabledException.class, comm::collectives);
            assertTrue(refused.getMessage().startsWith("world size 1"), refused.getMessage());
            SplittableRandom random = new SplittableRandom(20261206L);
            for (long bytes : new long[] {16, 43008, 43010, 3 << 20}) {
                byte[] data = new byte[(int) bytes];
                random.nextBytes(data);
                MemorySegment host = arena.allocate(bytes);
                MemorySegment.copy(data, 0, host, java.lang.foreign.ValueLayout.JAVA_BYTE, 0, data.length);
                try (DeviceBuffer in = DeviceBuffer.allocate(bytes);
                     DeviceBuffer out = DeviceBuffer.allocate(bytes)) {
                    for (boolean graph : new boolean[] {false, true}) {
                        in.copyFrom(host);
                        out.fill(0xff);
                        if (graph) {
                            CudaGraph captured;
                            try (GraphCapture scope = comm.graphCapture()) {
                                CudaGraph.beginCapture(stream, CaptureMode.THREAD_LOCAL);
                                try {
                                    comm.allReduce(in, DType.FLOAT16, stream);
                                    comm.allReduce(in, out, DType.FLOAT16, stream);
                                } finally {
                                    captured = CudaGraph.endCapture(stream);
                                }
                            }
                            try (CudaGraphExec exec = captured.instantiate()) {
                                captured.close();
                                exec.launch(stream);
                            }
                        } else {
                            comm.allReduce(in, DType.FLOAT16, stream);
                            comm.allReduce(in, out, DType.FLOAT16, stream);
                        }
                        stream.synchronize();
                        for (DeviceBuffer b : new DeviceBuffer[] {in, out}) {
                            MemorySegment back = arena.allocate(bytes);
                            b.copyTo(back);
                            assertArrayEquals(data, back.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE),
                                    bytes + " bytes" + (graph ? " (graph)" : "") + ": " + (b == in ? "in place "
                                            + "leaves the input" : "out of place copies it"));
                        }
                    }
                }
            }
            comm.checkPeers();
            assertTrue(comm.health().isHealthy(), comm.health().toString());
            comm.abort();
            assertFalse(comm.health().isHealthy(), "aborted: " + comm.health());
            assertThrows(IllegalStateException.class, () -> comm.allReduce(0x100L, 0x100L, 16, DType.FLOAT32, 0));
        }
    }

    @Test
    @Timeout(180)
    void residualRmsNormIsOneKernelAgainstTheHostReference() {
        GpuRequirement.requireDevices(1);
        SplittableRandom random = new SplittableRandom(System.nanoTime());
        int cases = 0;
        try (Communicator comm = Communicator.builder().rank(0).worldSize(1).device(0).build();
             CudaStream stream = CudaStream.create()) {
            for (DType dtype : DType.values()) {
                for (int[] shape : SHAPES) {
                    for (boolean inPlace : new boolean[] {false, true}) {
                        for (boolean graph : new boolean[] {false, true}) {
                            runCase(comm, stream, dtype, shape[0], shape[1], inPlace, graph, random);
                            cases++;
                        }
                    }
                }
            }
        }
        assertEquals(DType.values().length * SHAPES.length * 4, cases);
    }

    private static void runCase(Communicator comm, CudaStream stream, DType dtype, int rows, int hidden,
                                boolean inPlace, boolean graph, SplittableRandom random) {
        String what = dtype + " rows=" + rows + " hidden=" + hidden + (inPlace ? " in place" : " out of place")
                + (graph ? " graph" : " eager");
        int n = rows * hidden;
        float[] in = new float[n], residual = new float[n], weight = new float[hidden];
        for (int i = 0; i < n; i++) {
            in[i] = representable(dtype, (float) random.nextDouble(-2, 2));
            residual[i] = representable(dtype, (float) random.nextDouble(-2, 2));
        }
        for (int i = 0; i < hidden; i++) weight[i] = representable(dtype, (float) random.nextDouble(-2, 2));
        float[] refResidual = new float[n];
        double[] refOut = new double[n];
        for (int r = 0; r < rows; r++) {
            double squares = 0;
            for (int i = 0; i < hidden; i++) {
                int k = r * hidden + i;
                refResidual[k] = representable(dtype, in[k] + residual[k]);
                squares += (double) refResidual[k] * refResidual[k];
            }
            double inv = 1.0 / Math.sqrt(squares / hidden + EPS);
            for (int i = 0; i < hidden; i++) refOut[r * hidden + i] = refResidual[r * hidden + i] * inv * weight[i];
        }
        long bytes = (long) n * dtype.byteSize();
        String explained = comm.explainResidualRmsNorm(bytes, hidden, dtype);
        assertTrue(explained.contains("one residual add + RMSNorm kernel on the input and nothing else"), explained);
        try (Arena arena = Arena.ofConfined();
             DeviceBuffer dIn = DeviceBuffer.allocate(bytes);
             DeviceBuffer dRes = DeviceBuffer.allocate(bytes);
             DeviceBuffer dW = DeviceBuffer.allocate((long) hidden * dtype.byteSize());
             DeviceBuffer dOut = DeviceBuffer.allocate(bytes);
             DeviceBuffer dResOut = DeviceBuffer.allocate(bytes);
             DeviceBuffer refIn = DeviceBuffer.allocate(bytes);
             DeviceBuffer refRes = DeviceBuffer.allocate(bytes);
             DeviceBuffer refOutBuf = DeviceBuffer.allocate(bytes);
             DeviceBuffer refResOut = DeviceBuffer.allocate(bytes)) {
            dIn.copyFrom(toHost(arena, dtype, in));
            dRes.copyFrom(toHost(arena, dtype, residual));
            dW.copyFrom(toHost(arena, dtype, weight));
            refIn.copyFrom(toHost(arena, dtype, in));
            refRes.copyFrom(toHost(arena, dtype, residual));
            for (DeviceBuffer b : new DeviceBuffer[] {dOut, dResOut, refOutBuf, refResOut}) b.fill(0xff);  // NaN
            DeviceBuffer out = inPlace ? dIn : dOut;
            DeviceBuffer resOut = inPlace ? dRes : dResOut;
            boolean fused;
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
                try (CudaGraphExec exec = captured.instantiate()) {
                    captured.close();
                    exec.launch(stream);
                }
            } else {
                fused = comm.allReduceResidualRmsNorm(dIn, dRes, dW, out, resOut, hidden, EPS, dtype, stream);
            }
            assertFalse(fused, what + ": no fused all-reduce kernel at world size 1");
            RmsNorm.residualRmsNorm(dtype, refIn, refRes, dW, refOutBuf, refResOut, hidden, EPS, stream);
            stream.synchronize();
            MemorySegment hostOut = arena.allocate(bytes), hostRes = arena.allocate(bytes);
            MemorySegment kernelOut = arena.allocate(bytes), kernelRes = arena.allocate(bytes);
            out.copyTo(hostOut);
            resOut.copyTo(hostRes);
            refOutBuf.copyTo(kernelOut);
            refResOut.copyTo(kernelRes);
            int[] outBits = bits(dtype, hostOut, n), resBits = bits(dtype, hostRes, n);
            int wrongRes = 0, wrongOut = 0;
            double tolerance = dtype == DType.FLOAT32 ? 1e-5 : dtype == DType.FLOAT16 ? 2e-3 : 1.6e-2;
            for (int k = 0; k < n; k++) {
                if (resBits[k] != toBits(dtype, refResidual[k])) wrongRes++;
                double got = fromBits(dtype, outBits[k]);
                double rel = Math.abs(got - refOut[k]) / Math.max(1.0, Math.abs(refOut[k]));
                if (!(rel <= tolerance)) wrongOut++;
            }
            assertEquals(0, wrongRes, what + ": residualOut elements not bitwise round(in + residual)");
            assertEquals(0, wrongOut, what + ": out elements beyond " + tolerance + " of the host reference");
            assertTrue(Arrays.equals(bits(dtype, kernelOut, n), outBits)
                    && Arrays.equals(bits(dtype, kernelRes, n), resBits), what + ": not bitwise the standalone kernel");
        }
    }
}
