package dev.ar4j.it;

import dev.ar4j.Communicator;
import dev.ar4j.DType;
import dev.ar4j.GraphCapture;
import dev.ar4j.cuda.CaptureMode;
import dev.ar4j.cuda.Cuda;
import dev.ar4j.cuda.CudaEvent;
import dev.ar4j.cuda.CudaGraph;
import dev.ar4j.cuda.CudaGraphExec;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * The all-reduce fast path's cost with and without the watchdog, in one program: two ranks of one
 * JVM sharing GPU 0 ({@code localGroup {0, 0}}, no NCCL), bf16, the push kernel chosen by
 * {@code auto}, a CUDA graph of 50 all-reduces per replay, CUDA-event time per all-reduce, median
 * of the replays; the settings alternate (off, on, off, on) so that drift shows. Sharing one GPU
 * distorts absolute times; only the comparison inside one run means much. Every replayed result
 * is checked exact (integer-valued inputs) after the timing.
 *
 * <pre>java --enable-native-access=ALL-UNNAMED -cp ... dev.ar4j.it.FastPathTiming [sizes...]</pre>
 */
public final class FastPathTiming {
    private static final int PER_GRAPH = 50;
    private static final int REPLAYS = 41;

    private FastPathTiming() {
    }

    public static void main(String[] args) throws Exception {
        long[] sizes = args.length == 0 ? new long[] {1024, 43008} : Arrays.stream(args).mapToLong(Long::parseLong).toArray();
        System.out.println("size_bytes  watchdog  pdl  us_per_allreduce_rank0  us_per_allreduce_rank1  wrong");
        for (int round = 0; round < 2; round++) {
            for (boolean watchdog : new boolean[] {false, true}) {
                for (boolean pdl : new boolean[] {true, false}) {
                    run(sizes, watchdog, pdl);
                }
            }
        }
    }

    private static void run(long[] sizes, boolean watchdog, boolean pdl) throws Exception {
        List<Communicator> group = Communicator.localGroup(new int[] {0, 0}, b -> b.nccl(false).pdl(pdl)
                .watchdogInterval(watchdog ? Communicator.DEFAULT_WATCHDOG_INTERVAL : Duration.ZERO));
        ExecutorService pool = Executors.newFixedThreadPool(2);
        CyclicBarrier barrier = new CyclicBarrier(2);
        try {
            List<Future<double[][]>> results = new ArrayList<>();
            for (int r = 0; r < 2; r++) {
                Communicator comm = group.get(r);
                results.add(pool.submit(() -> rank(comm, sizes, barrier)));
            }
            double[][] r0 = results.get(0).get(300, TimeUnit.SECONDS);
            double[][] r1 = results.get(1).get(300, TimeUnit.SECONDS);
            for (int s = 0; s < sizes.length; s++) {
                System.out.printf(Locale.ROOT, "%10d  %8s  %3s  %22.3f  %22.3f  %5d%n", sizes[s], watchdog ? "on" : "off",
                        pdl ? "on" : "off", r0[s][0], r1[s][0], (long) (r0[s][1] + r1[s][1]));
            }
        } finally {
            pool.shutdownNow();
            for (Communicator c : group) {
                c.close();
            }
        }
    }

    private static double[][] rank(Communicator comm, long[] sizes, CyclicBarrier barrier) throws Exception {
        Cuda.setDevice(comm.device());
        double[][] out = new double[sizes.length][2];
        try (CudaStream stream = CudaStream.create(); CudaEvent start = CudaEvent.create(); CudaEvent end = CudaEvent.create()) {
            for (int s = 0; s < sizes.length; s++) {
                long bytes = sizes[s];
                long count = bytes / 2;
                try (DeviceBuffer in = DeviceBuffer.allocate(bytes); DeviceBuffer res = DeviceBuffer.allocate(bytes)) {
                    short one = (short) (Float.floatToRawIntBits(1.0f + comm.rank()) >>> 16);  // bf16 1.0 or 2.0
                    try (var arena = java.lang.foreign.Arena.ofConfined()) {
                        var host = arena.allocate(bytes);
                        for (long i = 0; i < count; i++) {
                            host.setAtIndex(java.lang.foreign.ValueLayout.JAVA_SHORT, i, one);
                        }
                        in.copyFrom(host);
                    }
                    for (int i = 0; i < 20; i++) {  // warm-up, eager
                        comm.allReduce(in.address(), res.address(), count, DType.BFLOAT16, stream.handle());
                    }
                    stream.synchronize();
                    CudaGraph graph;
                    try (GraphCapture scope = comm.graphCapture()) {
                        graph = CudaGraph.capture(stream, CaptureMode.THREAD_LOCAL, () -> {
                            for (int k = 0; k < PER_GRAPH; k++) {
                                comm.allReduce(in.address(), res.address(), count, DType.BFLOAT16, stream.handle());
                            }
                        });
                    }
                    try (CudaGraphExec exec = graph.instantiate()) {
                        graph.close();
                        double[] samples = new double[REPLAYS];
                        for (int k = 0; k < REPLAYS; k++) {
                            barrier.await(60, TimeUnit.SECONDS);
                            start.record(stream);
                            exec.launch(stream);
                            end.record(stream);
                            end.synchronize();
                            samples[k] = end.elapsedMillisSince(start) * 1000.0 / PER_GRAPH;
                        }
                        Arrays.sort(samples);
                        out[s][0] = samples[REPLAYS / 2];
                    }
                    res.fill(0xff);  // poison, then one eager call, checked exact: 1 + 2 = 3 everywhere
                    comm.allReduce(in.address(), res.address(), count, DType.BFLOAT16, stream.handle());
                    stream.synchronize();
                    try (var arena = java.lang.foreign.Arena.ofConfined()) {
                        var host = arena.allocate(bytes);
                        res.copyTo(host);
                        short three = (short) (Float.floatToRawIntBits(3.0f) >>> 16);
                        long wrong = 0;
                        for (long i = 0; i < count; i++) {
                            if (host.getAtIndex(java.lang.foreign.ValueLayout.JAVA_SHORT, i) != three) {
                                wrong++;
                            }
                        }
                        out[s][1] = wrong;
                    }
                }
            }
        }
        return out;
    }
}
