package dev.ar4j.internal.kernels;

import dev.ar4j.DType;
import dev.ar4j.cuda.Cuda;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.cuda.GpuTestSupport;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/**
 * The custom all-reduce C ABI driven from Java: one JVM, one thread per GPU, peer pointers through
 * peer access. Every algorithm and dtype all-reduces integer-valued inputs, so the sums are exact.
 */
@Tag("gpu")
class CustomAllReduceTwoThreadIT {
    private static final int WORLD = 2;
    private static final long MAX_BYTES = 8L << 20;
    private static final long DEADLINE_NS = 10_000_000_000L;
    private static final long[] COUNTS = {8, 4096, 65_536, 262_144, 1_000_000};

    static float input(int rank, long i) {
        return (float) (i % 61 + 5 * rank);
    }

    @Test
    @Timeout(180)
    void everyAlgorithmAndDtypeSumsExactly() throws Exception {
        GpuTestSupport.requireGpus(WORLD);
        Assumptions.assumeTrue(Cuda.canAccessPeer(0, 1) && Cuda.canAccessPeer(1, 0),
                "devices 0 and 1 cannot access each other's memory (no P2P); the custom kernels need it");

        List<DeviceBuffer> owned = new ArrayList<>();
        long[] signals = new long[WORLD];
        long[] inputs = new long[WORLD];
        long[] outputs = new long[WORLD];
        try {
            long signalBytes = CustomAllReduceKernels.signalSize(MAX_BYTES);
            for (int r = 0; r < WORLD; r++) {
                Cuda.setDevice(r);
                Cuda.enablePeerAccess(1 - r);
                DeviceBuffer signal = track(owned, DeviceBuffer.allocate(signalBytes));
                signal.fill(0);
                signals[r] = signal.address();
                inputs[r] = track(owned, DeviceBuffer.allocate(MAX_BYTES)).address();
                outputs[r] = track(owned, DeviceBuffer.allocate(MAX_BYTES)).address();
            }

            CyclicBarrier barrier = new CyclicBarrier(WORLD);
            ExecutorService threads = Executors.newFixedThreadPool(WORLD);
            try {
                List<Future<String>> results = new ArrayList<>();
                for (int r = 0; r < WORLD; r++) {
                    int rank = r;
                    results.add(threads.submit(() -> runRank(rank, signals, inputs, outputs, barrier)));
                }
                for (Future<String> result : results) {
                    assertEquals("ok", result.get(150, TimeUnit.SECONDS));
                }
            } finally {
                threads.shutdownNow();
            }
        } finally {
            for (DeviceBuffer buffer : owned) {
                buffer.close();
            }
        }
    }

    private static DeviceBuffer track(List<DeviceBuffer> owned, DeviceBuffer buffer) {
        owned.add(buffer);
        return buffer;
    }

    private static String runRank(int rank, long[] signals, long[] inputs, long[] outputs, CyclicBarrier barrier)
            throws Exception {
        Cuda.setDevice(rank);
        try (CustomAllReduceContext context = CustomAllReduceKernels.createContext(signals, rank, WORLD, MAX_BYTES, 8, DEADLINE_NS);
             CudaStream stream = CudaStream.create(); Arena arena = Arena.ofConfined()) {
            barrier.await(60, TimeUnit.SECONDS); // every context exists before any all-reduce
            context.registerBuffer(inputs, MAX_BYTES);
            assertEquals(1, context.registeredCount());
            DeviceBuffer in = DeviceBuffer.borrow(inputs[rank], MAX_BYTES, rank);
            DeviceBuffer out = DeviceBuffer.borrow(outputs[rank], MAX_BYTES, rank);
            for (int algorithm : new int[]{CustomAllReduceKernels.ALGO_ONE_STAGE, CustomAllReduceKernels.ALGO_TWO_STAGE,
                    CustomAllReduceKernels.ALGO_PUSH}) {
                for (DType dtype : DType.values()) {
                    for (long count : COUNTS) {
                        long bytes = count * dtype.byteSize();
                        if (algorithm == CustomAllReduceKernels.ALGO_PUSH
                                && bytes > CustomAllReduceKernels.PUSH_MAX_BYTES) {
                            continue;
                        }
                        barrier.await(60, TimeUnit.SECONDS); // the peer's kernel no longer reads my input
                        in.copyFrom(encode(arena, dtype, count, rank));
                        out.fill(0);
                        barrier.await(60, TimeUnit.SECONDS); // both inputs are in place
                        context.allReduce(algorithm, dtype, in.address(), out.address(), count, stream.handle());
                        stream.synchronize();
                        verify(arena, out, dtype, count, "rank " + rank + ", algorithm " + algorithm + ", " + dtype
                                + " x " + count);
                    }
                }
            }
            KernelTimeout timeout = context.readTimeout(false);
            assertFalse(timeout.timedOut(), timeout.toString());
            assertEquals(0, context.lastCudaError());
            barrier.await(60, TimeUnit.SECONDS); // no context goes away while a peer may still read its signals
        }
        return "ok";
    }

    private static MemorySegment encode(Arena arena, DType dtype, long count, int rank) {
        MemorySegment host = arena.allocate(count * dtype.byteSize(), 16);
        for (long i = 0; i < count; i++) {
            float v = input(rank, i);
            switch (dtype) {
                case FLOAT32 -> host.setAtIndex(ValueLayout.JAVA_FLOAT, i, v);
                case FLOAT16 -> host.setAtIndex(ValueLayout.JAVA_SHORT, i, Float.floatToFloat16(v));
                case BFLOAT16 -> host.setAtIndex(ValueLayout.JAVA_SHORT, i, (short) (Float.floatToRawIntBits(v) >>> 16));
            }
        }
        return host;
    }

    private static void verify(Arena arena, DeviceBuffer out, DType dtype, long count, String what) {
        MemorySegment host = arena.allocate(count * dtype.byteSize(), 16);
        out.slice(0, host.byteSize()).copyTo(host);
        for (long i = 0; i < count; i++) {
            float got = switch (dtype) {
                case FLOAT32 -> host.getAtIndex(ValueLayout.JAVA_FLOAT, i);
                case FLOAT16 -> Float.float16ToFloat(host.getAtIndex(ValueLayout.JAVA_SHORT, i));
                case BFLOAT16 -> Float.intBitsToFloat((host.getAtIndex(ValueLayout.JAVA_SHORT, i) & 0xffff) << 16);
            };
            float expected = input(0, i) + input(1, i);
            if (got != expected) {
                throw new AssertionError(what + ": element " + i + " is " + got + ", expected " + expected);
            }
        }
    }
}
