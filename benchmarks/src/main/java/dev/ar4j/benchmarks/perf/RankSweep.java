package dev.ar4j.benchmarks.perf;

import dev.ar4j.Communicator;
import dev.ar4j.DType;
import dev.ar4j.GraphCapture;
import dev.ar4j.cuda.CaptureMode;
import dev.ar4j.cuda.CudaEvent;
import dev.ar4j.cuda.CudaGraph;
import dev.ar4j.cuda.CudaGraphExec;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.dispatch.Algorithm;
import dev.ar4j.dispatch.Decision;
import dev.ar4j.nccl.NcclCommunicator;
import dev.ar4j.rendezvous.Rendezvous;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * One rank's part of an ar4j-perf run. Every rank runs the same sequence of measurements on its
 * own GPU; after each one the ranks share their figures through the communicator's rendezvous
 * and rank 0 adds the aggregate to its {@link PerfReport}.
 *
 * <h2>Method</h2>
 * For each timing mode, placement, size and algorithm (sizes outer, algorithms inner, so that
 * drift affects every algorithm alike):
 * <ul>
 *   <li><b>graph</b>: the timed all-reduces are captured into one CUDA graph inside a
 *       {@link Communicator#graphCapture()} scope and instantiated; the graph is replayed
 *       {@code -w} times; then, {@code -r} times: a rendezvous barrier, one replay that absorbs
 *       the ranks' skew (waited for), and the timed replays between CUDA events. The median over
 *       the repetitions, divided by the all-reduces per replay, is the figure;</li>
 *   <li><b>eager</b>: the same, with the all-reduces called back to back from Java; besides the
 *       events, the host clock measures the time from the first call to the completion of the
 *       last one and the time spent inside the calls.</li>
 * </ul>
 * The barrier is never inside the timed region. After timing, each rank writes fresh integer
 * inputs, poisons the output (out of place), runs the all-reduces once more (graph replay or eager)
 * and counts the elements that differ from the exact sum.
 *
 * <h2>Failure</h2>
 * Every wait is bounded ({@code --timeout}). A failure is thrown at once, with what was being
 * measured, and nothing collective is attempted afterwards: the caller ends the process, and the
 * launcher stops the other ranks.
 */
final class RankSweep {
    private static final String KEY = "ar4j-perf/";
    private static final Decision NCCL_BASELINE =
            new Decision(Algorithm.NCCL, "NCCL baseline: ncclAllReduce called directly", false);

    private final Communicator comm;
    private final NcclCommunicator nccl;
    private final PerfSettings settings;
    private final PerfReport report;
    private final Rendezvous rendezvous;
    private final Duration timeout;
    private final DType dtype;
    private final int rank;
    private final int worldSize;

    private CudaStream stream;
    private long streamHandle;
    private GpuWait wait;
    private CudaEvent[] events;
    private DeviceBuffer in;
    private DeviceBuffer out;
    private SymmetricBuffers symmetric;

    /**
     * @param comm     this rank's communicator; its device must be current on the calling thread
     * @param report   rank 0's report, null on the other ranks
     */
    RankSweep(Communicator comm, PerfSettings settings, PerfReport report) {
        this.comm = Objects.requireNonNull(comm, "comm");
        this.nccl = comm.nccl();
        this.settings = Objects.requireNonNull(settings, "settings");
        this.report = report;
        this.rendezvous = comm.rendezvous();
        this.timeout = settings.timeout();
        this.dtype = settings.dtype();
        this.rank = comm.rank();
        this.worldSize = comm.worldSize();
        if ((rank == 0) != (report != null)) {
            throw new IllegalArgumentException("rank 0, and only rank 0, collects the report");
        }
    }

    /** Runs every measurement, then frees what it allocated (collectively, on success only). */
    void run() {
        List<AutoCloseable> opened = new ArrayList<>();
        stream = CudaStream.create();
        opened.add(stream);
        streamHandle = stream.handle();
        wait = new GpuWait(stream, timeout);
        opened.add(wait::close);
        events = new CudaEvent[settings.iterations() + 1];
        for (int i = 0; i < events.length; i++) {
            events[i] = CudaEvent.create();
            opened.add(events[i]);
        }
        long bufferBytes = settings.bufferBytes();
        boolean outOfPlace = settings.placements().contains(Placement.OUT_OF_PLACE);
        in = DeviceBuffer.allocate(bufferBytes);
        opened.add(in);
        if (outOfPlace) {
            out = DeviceBuffer.allocate(bufferBytes);
            opened.add(out);
        }
        if (settings.registeredInput()) {
            comm.register(in);
        }
        boolean measureSymmetric = settings.algorithms().contains(PerfAlgorithm.NCCL_SYMMETRIC);
        if (measureSymmetric && settings.skipSymmetric()) {
            measureSymmetric = false;
            if (report != null) {
                report.skip(PerfAlgorithm.NCCL_SYMMETRIC, "--skip-nccl-symm was given");
            }
        }
        if (measureSymmetric) {
            SymmetricBuffers.Outcome outcome = SymmetricBuffers.open(nccl, rendezvous, bufferBytes, outOfPlace, timeout);
            symmetric = outcome.buffers();
            if (outcome.skipReason() != null && report != null) {
                report.skip(PerfAlgorithm.NCCL_SYMMETRIC, outcome.skipReason());
            }
        }

        if (settings.modes().contains(TimingMode.EAGER)) {
            warmUpJavaPaths();
        }
        for (TimingMode mode : settings.modes()) {
            for (Placement placement : settings.placements()) {
                for (long bytes : settings.sizes()) {
                    for (PerfAlgorithm algorithm : settings.algorithms()) {
                        if (algorithm == PerfAlgorithm.NCCL_SYMMETRIC && symmetric == null) {
                            continue;
                        }
                        measureAndShare(mode, placement, bytes, algorithm);
                    }
                }
            }
        }

        wait.stream("the last measurement");
        rendezvous.barrier(KEY + "done", timeout);
        if (symmetric != null) {
            symmetric.close();
        }
        RuntimeException failure = null;
        for (int i = opened.size() - 1; i >= 0; i--) {
            try {
                opened.get(i).close();
            } catch (Exception e) {
                if (failure == null) {
                    failure = new IllegalStateException("rank " + rank + ": freeing the benchmark's CUDA resources failed", e);
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        if (failure != null) {
            throw failure;
        }
    }

    private void measureAndShare(TimingMode mode, Placement placement, long bytes, PerfAlgorithm algorithm) {
        PerfSettings.Workload workload = settings.workload(bytes);
        Buffers buffers = buffersFor(algorithm, placement);
        long seed = mix(settings.seed(), bytes, algorithm.ordinal(), mode.ordinal(), placement.ordinal());
        Sample sample;
        try {
            sample = switch (mode) {
                case GRAPH -> graph(algorithm, workload, buffers, seed);
                case EAGER -> eager(algorithm, workload, buffers, seed);
            };
        } catch (RuntimeException e) {
            throw new IllegalStateException("rank " + rank + ": " + mode.label() + " " + placement.label() + " all-reduce of "
                    + bytes + " bytes (" + algorithm.label() + ") failed: " + e.getMessage()
                    + (algorithm == PerfAlgorithm.NCCL_SYMMETRIC ? " (--skip-nccl-symm leaves this baseline out)" : ""), e);
        }
        byte[] mine = ByteBuffer.allocate(4 * Double.BYTES).putDouble(sample.gpuUs()).putDouble(sample.hostUs())
                .putDouble(sample.callUs()).putLong(sample.wrong()).array();
        byte[][] all = rendezvous.allGather(KEY + "sample", mine, timeout);
        if (report == null) {
            return;
        }
        double gpuSum = 0;
        double gpuMax = 0;
        double hostSum = 0;
        double callSum = 0;
        long wrong = 0;
        for (byte[] contribution : all) {
            ByteBuffer b = ByteBuffer.wrap(contribution);
            double gpu = b.getDouble();
            gpuSum += gpu;
            gpuMax = Math.max(gpuMax, gpu);
            hostSum += b.getDouble();
            callSum += b.getDouble();
            wrong += b.getLong();
        }
        Decision d = sample.decision();
        report.add(new PerfResult(settings.scenario().label(), mode.label(), placement.label(), settings.registeredInput(),
                worldSize, bytes, workload.count(dtype), InputPattern.dtypeLabel(dtype), algorithm.label(),
                ranLabel(algorithm, d), d.fellBack(), algorithm.isAr4j() ? d.reason() : "", gpuSum / all.length, gpuMax,
                wrong, hostSum / all.length, callSum / all.length, workload.callsPerPass(), settings.iterations(),
                settings.repetitions(), settings.warmup()));
    }

    /** What ran, as the table shows it: "push", "2stage→nccl" (a forced kernel fell back), "nccl-symm". */
    static String ranLabel(PerfAlgorithm algorithm, Decision decision) {
        return switch (algorithm) {
            case NCCL -> "nccl";
            case NCCL_SYMMETRIC -> "nccl-symm";
            case AUTO -> PerfAlgorithm.shortName(decision.algorithm());
            case ONE_STAGE, TWO_STAGE, PUSH -> decision.fellBack() ? algorithm.label() + "→nccl"
                    : PerfAlgorithm.shortName(decision.algorithm());
        };
    }

    // ---- graph timing ---------------------------------------------------------------------------

    private Sample graph(PerfAlgorithm algorithm, PerfSettings.Workload w, Buffers b, long seed) {
        Decision[] decision = new Decision[1];
        CudaGraphExec timed = capture(algorithm, w, b, w.graphPasses(), decision);
        CudaGraphExec check = null;
        try {
            // In place, a replay of several passes would sum sums: check with a graph of one pass.
            check = b.inPlace() && w.graphPasses() > 1 ? capture(algorithm, w, b, 1, null) : timed;
            b.in().slice(0, w.passBytes()).fill(0);
            for (int i = 0; i < settings.warmup(); i++) {
                timed.launch(stream);
            }
            wait.stream("warm-up replays");
            int perRep = w.replaysPerRep();
            double perReplay = (double) w.graphPasses() * w.callsPerPass();
            double[] samples = new double[settings.repetitions() * perRep];
            for (int rep = 0; rep < settings.repetitions(); rep++) {
                barrier();
                timed.launch(stream);
                wait.stream("the alignment replay");
                events[0].record(stream);
                for (int k = 0; k < perRep; k++) {
                    timed.launch(stream);
                    events[k + 1].record(stream);
                }
                wait.event(events[perRep], "the timed replays");
                for (int k = 0; k < perRep; k++) {
                    samples[rep * perRep + k] = events[k + 1].elapsedMillisSince(events[k]) * 1000.0 / perReplay;
                }
            }
            CudaGraphExec checkGraph = check;
            long wrong = check(w, b, seed, () -> checkGraph.launch(stream));
            return new Sample(decision[0], median(samples), Double.NaN, Double.NaN, wrong);
        } finally {
            if (check != null && check != timed) {
                check.close();
            }
            timed.close();
        }
    }

    /** Captures {@code passes} passes into one graph, inside a capture scope, and instantiates it. */
    private CudaGraphExec capture(PerfAlgorithm algorithm, PerfSettings.Workload w, Buffers b, int passes,
                                  Decision[] decisionOut) {
        CudaGraph graph;
        try (GraphCapture scope = comm.graphCapture()) {
            graph = CudaGraph.capture(stream, CaptureMode.THREAD_LOCAL, () -> {
                for (int p = 0; p < passes; p++) {
                    Decision d = enqueuePass(algorithm, w, b);
                    if (decisionOut != null && decisionOut[0] == null) {
                        decisionOut[0] = d;
                    }
                }
            });
        }
        try {
            return graph.instantiate();
        } finally {
            graph.close();
        }
    }

    // ---- eager timing ---------------------------------------------------------------------------

    /**
     * Runs every algorithm's Java call path long enough for the JIT to compile it before the first
     * timed eager cell. Without it the first cells measured the interpreter: on 2x H200
     * (2026-11-30) auto at 1 KiB, the very first cell, took 11.1 us against 6.6 us for the same
     * kernel forced a few cells later. Every rank makes the same calls in the same order.
     */
    private void warmUpJavaPaths() {
        PerfSettings.Workload w = settings.workload(settings.sizes().get(0));
        Placement placement = settings.placements().get(0);
        for (PerfAlgorithm algorithm : settings.algorithms()) {
            if (algorithm == PerfAlgorithm.NCCL_SYMMETRIC && symmetric == null) {
                continue;
            }
            Buffers b = buffersFor(algorithm, placement);
            barrier();
            for (int i = 0; i < 4000; i++) {
                enqueuePass(algorithm, w, b);
                if (i % 500 == 499) {
                    wait.stream("JIT warm-up of " + algorithm);
                }
            }
            wait.stream("JIT warm-up of " + algorithm);
        }
    }

    private Sample eager(PerfAlgorithm algorithm, PerfSettings.Workload w, Buffers b, long seed) {
        b.in().slice(0, w.passBytes()).fill(0);
        for (int i = 0; i < settings.warmup() * w.eagerPasses(); i++) {
            enqueuePass(algorithm, w, b);
        }
        wait.stream("eager warm-up");
        int reps = settings.repetitions();
        double ops = (double) w.eagerPasses() * w.callsPerPass();
        double[] gpu = new double[reps];
        double[] host = new double[reps];
        double[] call = new double[reps];
        Decision decision = null;
        for (int rep = 0; rep < reps; rep++) {
            barrier();
            decision = enqueuePass(algorithm, w, b);
            wait.stream("the alignment pass");
            long t0 = System.nanoTime();
            events[0].record(stream);
            for (int p = 0; p < w.eagerPasses(); p++) {
                enqueuePass(algorithm, w, b);
            }
            long t1 = System.nanoTime();
            events[1].record(stream);
            wait.event(events[1], "the timed eager all-reduces");
            long t2 = System.nanoTime();
            gpu[rep] = events[1].elapsedMillisSince(events[0]) * 1000.0 / ops;
            host[rep] = (t2 - t0) / 1e3 / ops;
            call[rep] = (t1 - t0) / 1e3 / ops;
        }
        long wrong = check(w, b, seed, () -> enqueuePass(algorithm, w, b));
        return new Sample(decision, median(gpu), median(host), median(call), wrong);
    }

    // ---- shared -----------------------------------------------------------------------------------

    /** Enqueues one pass (its all-reduces on consecutive slices) and returns the first call's decision. */
    private Decision enqueuePass(PerfAlgorithm algorithm, PerfSettings.Workload w, Buffers b) {
        long count = w.count(dtype);
        long step = w.bytesPerCall();
        Decision first = null;
        for (int i = 0; i < w.callsPerPass(); i++) {
            long src = b.inAddress() + i * step;
            long dst = b.outAddress() + i * step;
            Decision d = switch (algorithm) {
                case AUTO, ONE_STAGE, TWO_STAGE, PUSH ->
                        comm.allReduce(src, dst, count, dtype, streamHandle, algorithm.policy().orElseThrow());
                case NCCL, NCCL_SYMMETRIC -> {
                    nccl.allReduceSum(src, dst, count, dtype, streamHandle);
                    yield NCCL_BASELINE;
                }
            };
            if (first == null) {
                first = d;
            }
        }
        return first;
    }

    /**
     * Writes fresh inputs, poisons the output (0xFF bytes: NaN in every dtype), runs the
     * all-reduces once and counts wrong elements.
     */
    private long check(PerfSettings.Workload w, Buffers b, long seed, Runnable runOnce) {
        wait.stream("the timed work before the check");
        barrier();
        long region = w.passBytes();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate(region, 16);
            InputPattern.fill(host, dtype, rank, seed);
            DeviceBuffer input = b.in().slice(0, region);
            DeviceBuffer result = b.inPlace() ? input : b.out().slice(0, region);
            input.copyFrom(host);
            if (!b.inPlace()) {
                result.fill(0xFF);
            }
            barrier();
            runOnce.run();
            wait.stream("the checked all-reduce");
            result.copyTo(host);
            return InputPattern.countWrong(host, dtype, worldSize, seed);
        }
    }

    private void barrier() {
        rendezvous.barrier(KEY + "barrier", timeout);
    }

    private Buffers buffersFor(PerfAlgorithm algorithm, Placement placement) {
        DeviceBuffer input = algorithm == PerfAlgorithm.NCCL_SYMMETRIC ? symmetric.in() : in;
        boolean inPlace = placement == Placement.IN_PLACE;
        DeviceBuffer output = inPlace ? input : algorithm == PerfAlgorithm.NCCL_SYMMETRIC ? symmetric.out() : out;
        return new Buffers(input, output, inPlace, input.address(), output.address());
    }

    static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }

    private static long mix(long seed, long... values) {
        long h = seed;
        for (long v : values) {
            h = (h ^ v) * 0x9E3779B97F4A7C15L;
            h ^= h >>> 29;
        }
        return h;
    }

    /** Input and output of one measurement (the same buffer in place). */
    private record Buffers(DeviceBuffer in, DeviceBuffer out, boolean inPlace, long inAddress, long outAddress) {
    }

    /** One rank's figures for one measurement. */
    private record Sample(Decision decision, double gpuUs, double hostUs, double callUs, long wrong) {
    }
}
