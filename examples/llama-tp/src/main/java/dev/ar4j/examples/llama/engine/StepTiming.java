package dev.ar4j.examples.llama.engine;

import dev.ar4j.cuda.CudaEvent;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntUnaryOperator;

/**
 * Measurements of one rank's steps, run on the rank's thread (collective: every rank runs the
 * same measurement at once): the median time of a step over CUDA events, the share of an eager
 * step spent in its all-reduces, and the Java heap allocated by the replay loop.
 */
public final class StepTiming {

    /**
     * One step kind's figures on one rank.
     *
     * @param kind          the step
     * @param tokens        tokens per step
     * @param medianMillis  median step time (graph replays; prefill: eager runs)
     * @param commShare     median share of an eager step inside its all-reduces, 0..1 (NaN at TP 1)
     * @param allocatedBytes Java heap allocated by the step loop over {@code loopSteps} steps, after up to
     *                      200 uncounted ones (-1: not measured)
     * @param loopSteps     steps of the allocation loop
     */
    public record Figures(StepKind kind, int tokens, double medianMillis, double commShare, long allocatedBytes,
                          int loopSteps) {
        /**
         * Tokens per second at the median.
         *
         * @return {@code tokens / median}
         */
        public double tokensPerSecond() {
            return tokens * 1000.0 / medianMillis;
        }
    }

    /**
     * One kind of kernel in a profiled step.
     *
     * @param section the kind
     * @param calls   its sections in one step
     * @param millis  their time in one step (median over the profiled steps)
     * @param bytes   what they must move at least (weights, KV rows, activations)
     */
    public record ProfileRow(StepSection section, int calls, double millis, double bytes) {
        /**
         * The bandwidth the bytes imply.
         *
         * @return terabytes per second
         */
        public double terabytesPerSecond() {
            return bytes / (millis * 1e9);
        }
    }

    /**
     * Where one eager step's time goes.
     *
     * @param kind        the step
     * @param tokens      tokens per step
     * @param contextKeys keys the attention reads per token
     * @param eagerMillis the median eager step with the profile's events (events between kernels cost their own
     *                    time and stop the next kernel from starting early, so this is more than a graph replay)
     * @param rows        one row per kind of kernel, in step order
     */
    public record Profile(StepKind kind, int tokens, int contextKeys, double eagerMillis, List<ProfileRow> rows) {
        /** Copies the rows. */
        public Profile {
            rows = List.copyOf(rows);
        }
    }

    /**
     * Profiles a decode or verify step on this rank: {@code runs} eager steps with CUDA events around every
     * section, each section's time the median over the runs.
     *
     * @param e        the rank's engine
     * @param kind     {@link StepKind#DECODE} or {@link StepKind#VERIFY}
     * @param position the first position the step's tokens take
     * @param runs     eager steps profiled
     * @return the profile
     */
    public static Profile profile(RankEngine e, StepKind kind, int position, int runs) {
        if (kind == StepKind.PREFILL) {
            return profilePrefill(e, position, Math.min(runs, PREFILL_PROFILE_RUNS));
        }
        int tokens = e.timing().captured(kind).tokens();
        setBatchInputs(e, tokens, position);
        Map<StepSection, double[][]> samples = new EnumMap<>(StepSection.class);
        double[] steps = new double[runs];
        try (StepRunner eagerStep = e.timing().eager(tokens, tokens, e.settings().batch());
             SectionTimer timer = new SectionTimer(true);
             CudaEvent start = CudaEvent.create();
             CudaEvent end = CudaEvent.create()) {
            timer.contextKeys(position + 1);
            for (int r = 0; r < runs; r++) {
                timer.reset();
                start.record(e.timing().stream());
                eagerStep.runEager(timer);
                end.record(e.timing().stream());
                e.timing().finish(kind + " (profile)");
                steps[r] = end.elapsedMillisSince(start);
                collect(samples, timer, r, runs);
            }
        }
        return new Profile(kind, tokens, position + 1, median(steps), medianRows(samples, runs));
    }

    /** Eager prefills a prefill profile times at most (a long prompt's prefill takes a second or more). */
    static final int PREFILL_PROFILE_RUNS = 5;

    /**
     * Where the whole chunked prefill of a prompt of {@code tokens} ids goes: CUDA events around every section of
     * every chunk, summed over the chunks per kind of kernel; medians over {@code runs} prefills.
     */
    private static Profile profilePrefill(RankEngine e, int tokens, int runs) {
        int[] prompt = syntheticPrompt(e, tokens);
        Map<StepSection, double[][]> samples = new EnumMap<>(StepSection.class);
        double[] times = new double[runs];
        try (SectionTimer timer = new SectionTimer(true);
             CudaEvent start = CudaEvent.create();
             CudaEvent end = CudaEvent.create()) {
            timer.contextKeys(tokens);
            for (int r = 0; r < runs; r++) {
                times[r] = timePrefill(e, prompt, timer, start, end, "prefill (profile)");
                collect(samples, timer, r, runs);
            }
        }
        return new Profile(StepKind.PREFILL, tokens, tokens, median(times), medianRows(samples, runs));
    }

    /** A prompt of {@code tokens} ids spread over the vocabulary, the same at every call. */
    private static int[] syntheticPrompt(RankEngine e, int tokens) {
        int[] prompt = new int[tokens];
        for (int i = 0; i < tokens; i++) {
            prompt[i] = (i * 7 + 1) % e.settings().layout().config().vocabSize();
        }
        return prompt;
    }

    /**
     * One whole chunked prefill between two events (with the timer's events inside when {@code timer} is not null),
     * waited for and checked; its milliseconds.
     */
    private static double timePrefill(RankEngine e, int[] prompt, SectionTimer timer, CudaEvent start, CudaEvent end,
                                      String what) {
        if (timer != null) {
            timer.reset();
        }
        start.record(e.timing().stream());
        e.timing().prefill(prompt, timer);
        end.record(e.timing().stream());
        e.timing().finish(what);
        return end.elapsedMillisSince(start);
    }

    /** Adds run {@code r}'s per-section totals (calls, ms, bytes) to the samples. */
    private static void collect(Map<StepSection, double[][]> samples, SectionTimer timer, int r, int runs) {
        for (Map.Entry<StepSection, double[]> t : timer.totals().entrySet()) {
            double[][] s = samples.computeIfAbsent(t.getKey(), k -> new double[3][runs]);
            for (int i = 0; i < 3; i++) {
                s[i][r] = t.getValue()[i];
            }
        }
    }

    /** One row per section: the first run's calls and bytes, the median time. */
    private static List<ProfileRow> medianRows(Map<StepSection, double[][]> samples, int runs) {
        List<ProfileRow> rows = new ArrayList<>();
        for (Map.Entry<StepSection, double[][]> s : samples.entrySet()) {
            double[][] v = s.getValue();
            rows.add(new ProfileRow(s.getKey(), (int) v[0][0], median(v[1]), v[2][0]));
        }
        return rows;
    }

    /**
     * The inputs of a decode or verify step of {@code tokens} tokens: the batch's sequences each at positions
     * {@code first, first + 1, ..} (ids spread over the vocabulary).
     */
    private static void setBatchInputs(RankEngine e, int tokens, int first) {
        int perSequence = tokens / e.settings().batch();
        for (int i = 0; i < tokens; i++) {
            e.timing().io().setInput(i, (i * 7 + 1) % e.settings().layout().config().vocabSize(), first + i % perSequence);
        }
    }

    /** Keeps the loop's reads observable. */
    private static volatile int lastSink;

    private StepTiming() {
    }

    /**
     * Measures a step kind on this rank.
     *
     * @param e        the rank's engine, graphs captured
     * @param kind     the step
     * @param position the first position the step's tokens take
     * @param timed    timed steps (graph replays, and the allocation loop; prefill: at most 20 eager runs)
     * @param eager    eager runs for the communication share
     * @return the figures
     */
    public static Figures measure(RankEngine e, StepKind kind, int position, int timed, int eager) {
        if (kind == StepKind.PREFILL) {
            return measurePrefill(e, position, timed, eager);
        }
        StepRunner graph = switch (kind) {
            case DECODE -> e.timing().captured(StepKind.DECODE);
            case VERIFY -> e.timing().captured(StepKind.VERIFY);
            case PREFILL -> null;
        };
        int tokens = graph.tokens();
        int first = position;
        setBatchInputs(e, tokens, first);
        HostIo io = e.timing().io();
        try (StepRunner eagerStep = e.timing().eager(tokens, tokens, e.settings().batch());
             SectionTimer timer = new SectionTimer(false);
             CudaEvent start = CudaEvent.create();
             CudaEvent end = CudaEvent.create()) {
            double[] shares = new double[eager];
            for (int i = 0; i < eager; i++) {
                timer.reset();
                start.record(e.timing().stream());
                eagerStep.runEager(timer);
                end.record(e.timing().stream());
                e.timing().finish(kind + " (eager)");
                shares[i] = e.settings().layout().tp() > 1 ? timer.communicationMillis() / end.elapsedMillisSince(start)
                        : Double.NaN;
            }
            int runs = kind == StepKind.PREFILL ? Math.min(timed, 20) : timed;
            double[] times = new double[runs];
            for (int i = 0; i < runs; i++) {
                start.record(e.timing().stream());
                if (graph != null) {
                    graph.replay();
                } else {
                    eagerStep.runEager(null);
                }
                end.record(e.timing().stream());
                e.timing().finish(kind.name());
                times[i] = end.elapsedMillisSince(start);
            }
            long allocated = graph == null ? -1 : allocatedByReplays(e, graph, tokens, first, timed);
            return new Figures(kind, tokens, median(times), eager == 0 ? Double.NaN : median(shares), allocated, timed);
        }
    }

    /**
     * Times the whole chunked prefill of a prompt of {@code tokens} ids ({@link RankEngine.Timing#prefill}: every
     * chunk, with the host's wait between chunks), from the first chunk's input copy to the last chunk's argmax.
     */
    private static Figures measurePrefill(RankEngine e, int tokens, int timed, int eager) {
        int[] prompt = syntheticPrompt(e, tokens);
        try (SectionTimer timer = new SectionTimer(false);
             CudaEvent start = CudaEvent.create();
             CudaEvent end = CudaEvent.create()) {
            double[] shares = new double[eager];
            for (int i = 0; i < eager; i++) {
                double millis = timePrefill(e, prompt, timer, start, end, "prefill (eager)");
                shares[i] = e.settings().layout().tp() > 1 ? timer.communicationMillis() / millis : Double.NaN;
            }
            int runs = Math.min(timed, 20);
            double[] times = new double[runs];
            for (int i = 0; i < runs; i++) {
                times[i] = timePrefill(e, prompt, null, start, end, "prefill");
            }
            return new Figures(StepKind.PREFILL, tokens, median(times), eager == 0 ? Double.NaN : median(shares), -1,
                    timed);
        }
    }

    /**
     * Steps of the serving loop run, at most, before its allocations are counted: the JIT's compilation of the loop
     * and its first-use linkage are not the loop's steady state.
     */
    static final int ALLOCATION_WARM_UP_STEPS = 200;

    /**
     * The Java heap this thread allocates over {@code steps} steps of the serving loop (write the inputs, replay,
     * wait, check the status, read the outputs), after {@code min(steps, ALLOCATION_WARM_UP_STEPS)} uncounted ones.
     */
    static long allocatedByReplays(RankEngine e, StepRunner graph, int tokens, int first, int steps) {
        RankEngine.Timing timing = e.timing();
        HostIo io = timing.io();
        int perSequence = tokens / e.settings().batch();
        IntUnaryOperator step = sink -> {
            for (int i = 0; i < tokens; i++) {
                io.setInput(i, sink & 1023, first + i % perSequence);
            }
            graph.replay();
            timing.finish("replay");
            int next = sink;
            for (int i = 0; i < tokens; i++) {
                next += io.argmax(i);
            }
            return next;
        };
        return allocatedBySteps(step, Math.min(steps, ALLOCATION_WARM_UP_STEPS), steps);
    }

    /**
     * The Java heap this thread allocates over {@code steps} calls of {@code step}, after {@code warmUp} calls that are
     * not counted. Each call gets the previous one's result (the first 0), so that nothing it reads is dead code.
     *
     * @param step   one step: the previous result in, its own out
     * @param warmUp uncounted calls first
     * @param steps  counted calls
     * @return bytes allocated on this thread by the counted calls
     */
    static long allocatedBySteps(IntUnaryOperator step, int warmUp, int steps) {
        com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        int sink = 0;
        for (int s = 0; s < warmUp; s++) {
            sink = step.applyAsInt(sink);
        }
        long before = mx.getCurrentThreadAllocatedBytes();
        for (int s = 0; s < steps; s++) {
            sink = step.applyAsInt(sink);
        }
        long after = mx.getCurrentThreadAllocatedBytes();
        lastSink = sink;
        return after - before;
    }

    static double median(double[] values) {
        double[] v = values.clone();
        Arrays.sort(v);
        int n = v.length;
        return n == 0 ? Double.NaN : n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    }
}
