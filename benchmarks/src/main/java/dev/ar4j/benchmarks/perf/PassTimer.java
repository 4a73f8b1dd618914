package dev.ar4j.benchmarks.perf;

import dev.ar4j.Communicator;
import dev.ar4j.GraphCapture;
import dev.ar4j.cuda.CaptureMode;
import dev.ar4j.cuda.CudaEvent;
import dev.ar4j.cuda.CudaGraph;
import dev.ar4j.cuda.CudaGraphExec;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.dispatch.Decision;

import java.util.Arrays;
import java.util.Objects;

/**
 * Times one pass of work (what a {@link Pass} enqueues: one collective for a sweep, 122 all-reduces
 * for the verify scenarios, 122 all-reduces each followed by the RMSNorm kernel for verify-fused),
 * as a CUDA graph or eagerly, and has it checked.
 *
 * <ul>
 *   <li><b>graph</b>: the timed passes are captured into one CUDA graph inside a
 *       {@link Communicator#graphCapture()} scope and instantiated; the graph is replayed {@code -w}
 *       times; then, {@code -r} times: a barrier, one replay that absorbs the ranks' skew (waited
 *       for), and the timed replays between CUDA events. The median over the repetitions, divided
 *       by the calls per replay, is the figure;</li>
 *   <li><b>eager</b>: the same with the passes enqueued back to back from Java; besides the events,
 *       the host clock measures the time from the first call to the completion of the last one and
 *       the time spent inside the calls.</li>
 * </ul>
 * Before timing, {@code prepare} zeroes the inputs and poisons the outputs; after it, the
 * {@link Check} writes checked inputs, poisons the outputs, runs one pass and counts wrong
 * elements. The barrier is never inside the timed region; every wait is bounded.
 */
final class PassTimer {
    /** Enqueues one pass on the timer's stream and returns the first call's decision. */
    interface Pass {
        Decision enqueue();
    }

    /** Writes checked inputs, poisons the outputs, calls {@code runOnce} (one pass) and counts wrong elements. */
    interface Check {
        long run(Runnable runOnce);
    }

    /**
     * What one measurement runs: the pass, what zeroes its inputs and poisons its outputs before
     * the timed runs, and its check.
     */
    record Cell(Pass pass, Runnable prepare, Check check) {
    }

    /** One rank's figures for one measurement: µs per call (NaN where not measured). */
    record Sample(Decision decision, double gpuUs, double hostUs, double callUs, long wrong) {
    }

    private final Communicator comm;
    private final CudaStream stream;
    private final GpuWait wait;
    private final CudaEvent[] events;
    private final PerfSettings settings;
    private final Runnable barrier;

    /**
     * @param events  at least {@code iterations + 1} timing events
     * @param barrier a barrier of every rank, bounded
     */
    PassTimer(Communicator comm, CudaStream stream, GpuWait wait, CudaEvent[] events, PerfSettings settings,
              Runnable barrier) {
        this.comm = Objects.requireNonNull(comm, "comm");
        this.stream = Objects.requireNonNull(stream, "stream");
        this.wait = Objects.requireNonNull(wait, "wait");
        this.events = Objects.requireNonNull(events, "events");
        this.settings = Objects.requireNonNull(settings, "settings");
        this.barrier = Objects.requireNonNull(barrier, "barrier");
        if (events.length < settings.iterations() + 1) {
            throw new IllegalArgumentException("need " + (settings.iterations() + 1) + " events, got " + events.length);
        }
    }

    /**
     * Graph timing.
     *
     * @param checkWithOnePass check with a graph of one pass (in place, replaying several passes
     *                         would reduce results again)
     */
    Sample graph(Pass pass, PerfSettings.Workload w, boolean checkWithOnePass, Runnable prepare, Check check) {
        Decision[] decision = new Decision[1];
        CudaGraphExec timed = capture(pass, w.graphPasses(), decision);
        CudaGraphExec checked = null;
        try {
            checked = checkWithOnePass && w.graphPasses() > 1 ? capture(pass, 1, null) : timed;
            prepare.run();
            for (int i = 0; i < settings.warmup(); i++) {
                timed.launch(stream);
            }
            wait.stream("warm-up replays");
            int perRep = w.replaysPerRep();
            double perReplay = (double) w.graphPasses() * w.callsPerPass();
            double[] samples = new double[settings.repetitions() * perRep];
            for (int rep = 0; rep < settings.repetitions(); rep++) {
                barrier.run();
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
            CudaGraphExec once = checked;
            wait.stream("the timed work before the check");
            long wrong = check.run(() -> once.launch(stream));
            return new Sample(decision[0], median(samples), Double.NaN, Double.NaN, wrong);
        } finally {
            if (checked != null && checked != timed) {
                checked.close();
            }
            timed.close();
        }
    }

    /** Captures {@code passes} passes into one graph, inside a capture scope, and instantiates it. */
    private CudaGraphExec capture(Pass pass, int passes, Decision[] decisionOut) {
        CudaGraph graph;
        try (GraphCapture scope = comm.graphCapture()) {
            graph = CudaGraph.capture(stream, CaptureMode.THREAD_LOCAL, () -> {
                for (int p = 0; p < passes; p++) {
                    Decision d = pass.enqueue();
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

    /** Eager timing. */
    Sample eager(Pass pass, PerfSettings.Workload w, Runnable prepare, Check check) {
        prepare.run();
        for (int i = 0; i < settings.warmup() * w.eagerPasses(); i++) {
            pass.enqueue();
        }
        wait.stream("eager warm-up");
        int reps = settings.repetitions();
        double ops = (double) w.eagerPasses() * w.callsPerPass();
        double[] gpu = new double[reps];
        double[] host = new double[reps];
        double[] call = new double[reps];
        Decision decision = null;
        for (int rep = 0; rep < reps; rep++) {
            barrier.run();
            decision = pass.enqueue();
            wait.stream("the alignment pass");
            long t0 = System.nanoTime();
            events[0].record(stream);
            for (int p = 0; p < w.eagerPasses(); p++) {
                pass.enqueue();
            }
            long t1 = System.nanoTime();
            events[1].record(stream);
            wait.event(events[1], "the timed eager calls");
            long t2 = System.nanoTime();
            gpu[rep] = events[1].elapsedMillisSince(events[0]) * 1000.0 / ops;
            host[rep] = (t2 - t0) / 1e3 / ops;
            call[rep] = (t1 - t0) / 1e3 / ops;
        }
        wait.stream("the timed work before the check");
        long wrong = check.run(pass::enqueue);
        return new Sample(decision, median(gpu), median(host), median(call), wrong);
    }

    /**
     * Runs a pass's Java call path long enough for the JIT to compile it before the first timed
     * eager cell: without it the first cells measure the interpreter, not the call path. Every rank
     * makes the same calls in the same order.
     */
    void warmUpJavaPath(Pass pass, String what) {
        barrier.run();
        for (int i = 0; i < 4000; i++) {
            pass.enqueue();
            // At most 8 passes (about 1000 calls of verify-fused) queued: ranks sharing one GPU share
            // one CUDA context, and tens of thousands of queued kernels spinning for a peer
            // may leave the peer no room to launch (suspected in an eager verify-fused time-out).
            if (i % 8 == 7) {
                wait.stream("JIT warm-up of " + what);
            }
        }
        wait.stream("JIT warm-up of " + what);
    }

    static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }
}
