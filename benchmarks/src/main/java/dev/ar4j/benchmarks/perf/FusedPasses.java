package dev.ar4j.benchmarks.perf;

import dev.ar4j.DType;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.dispatch.Decision;
import dev.ar4j.RmsNorm;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * The passes of {@code --scenario verify-fused}: {@value Scenario#VERIFY_ALL_REDUCES} times, on
 * rows of {@value FusedNormCheck#ROWS} x {@value FusedNormCheck#HIDDEN} elements,
 * {@code residualOut = allreduce(in) + residual}, {@code out = rmsnorm(residualOut) * weight}. Each
 * call works on its own slice of every buffer ({@link #calls}), as the layers of a model do. Two
 * kinds of cell: an all-reduce column ({@link #cell}: ar4j with its algorithm forced, or NCCL) then
 * {@code ResidualRmsNorm.launch} on its output; and {@link FusedVariant#FUSED} ({@link #fusedCell}):
 * {@code Communicator.allReduceResidualRmsNorm}, which runs one fused kernel where the configured
 * policy picks push, else the all-reduce then the same separate kernel, and says which.
 *
 * <p>The check ({@link FusedNormCheck}) writes integer inputs, residuals and the weight, all from
 * the cell's seed ({@link CheckImages}), poisons the all-reduce's output (unfused cells), {@code out}
 * and {@code residualOut}, runs one pass and counts the all-reduce results that are not the exact
 * sum (unfused cells; the fused call writes no separate all-reduce output, its sum is checked
 * through {@code residualOut}), the {@code residualOut} elements that are not exact and the
 * {@code out} elements outside the dtype's tolerance.
 */
final class FusedPasses implements AutoCloseable {
    /** One all-reduce of {@code count} elements on the benchmark's stream, as {@link RankSweep} makes it. */
    interface AllReduce {
        Decision call(PerfAlgorithm algorithm, long send, long receive, long count);
    }

    /**
     * {@code Communicator.allReduceResidualRmsNorm(in, residual, weight, out, residualOut, HIDDEN, EPS,
     * dtype, stream)} on the benchmark's stream: true when the fused kernel ran, false for the
     * all-reduce then the separate kernel.
     */
    interface FusedCall {
        boolean call(DeviceBuffer in, DeviceBuffer residual, DeviceBuffer weight, DeviceBuffer out,
                     DeviceBuffer residualOut);
    }

    private final DType dtype;
    private final int rank;
    private final int worldSize;
    private final CudaStream stream;
    private final GpuWait wait;
    private final Runnable barrier;
    private final AllReduce allReduce;
    private final FusedCall fusedCall;
    private final DeviceBuffer residual;
    private final DeviceBuffer weight;
    private final DeviceBuffer normOut;
    private final DeviceBuffer residualOut;
    private String lastCheckNote = "";
    private String lastFusedRan = "";

    private FusedPasses(PerfSettings settings, int rank, int worldSize, CudaStream stream, GpuWait wait,
                        Runnable barrier, AllReduce allReduce, FusedCall fusedCall, DeviceBuffer residual,
                        DeviceBuffer weight, DeviceBuffer normOut, DeviceBuffer residualOut) {
        this.dtype = settings.dtype();
        this.rank = rank;
        this.worldSize = worldSize;
        this.stream = stream;
        this.wait = wait;
        this.barrier = barrier;
        this.allReduce = allReduce;
        this.fusedCall = fusedCall;
        this.residual = residual;
        this.weight = weight;
        this.normOut = normOut;
        this.residualOut = residualOut;
    }

    /** Allocates the residual, weight and output buffers of the largest pass and writes the weight. */
    static FusedPasses open(PerfSettings settings, int rank, int worldSize, CudaStream stream, GpuWait wait,
                            Runnable barrier, AllReduce allReduce, FusedCall fusedCall) {
        Objects.requireNonNull(allReduce, "allReduce");
        Objects.requireNonNull(fusedCall, "fusedCall");
        DType dtype = settings.dtype();
        long bytes = settings.bufferBytes();
        long rowBytes = (long) FusedNormCheck.HIDDEN * dtype.byteSize();
        if (bytes % rowBytes != 0) {
            throw new IllegalArgumentException("verify-fused buffers of " + bytes + " bytes are not whole rows of "
                    + FusedNormCheck.HIDDEN + " " + dtype + " elements");
        }
        DeviceBuffer residual = null;
        DeviceBuffer weight = null;
        DeviceBuffer normOut = null;
        DeviceBuffer residualOut = null;
        try {
            residual = DeviceBuffer.allocate(bytes);
            weight = DeviceBuffer.allocate(rowBytes);
            normOut = DeviceBuffer.allocate(bytes);
            residualOut = DeviceBuffer.allocate(bytes);
            residual.fill(0);
            // A weight for the timed runs; each check writes its own (from the check's seed).
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment host = arena.allocate(rowBytes, 16);
                FusedNormCheck.fillWeight(host, dtype, settings.seed());
                weight.copyFrom(host);
            }
            // One eager launch before any capture: loads the kernels library and module outside a
            // graph capture, and fails here, naming the kernel, if it cannot run.
            RmsNorm.residualRmsNorm(dtype, residual.address(), residual.address(), weight.address(), normOut.address(),
                    residualOut.address(), FusedNormCheck.ROWS, FusedNormCheck.HIDDEN, FusedNormCheck.EPS, stream.handle());
            wait.stream("the first ResidualRmsNorm kernel (eager, before any capture)");
            return new FusedPasses(settings, rank, worldSize, stream, wait, barrier, allReduce, fusedCall, residual,
                    weight, normOut, residualOut);
        } catch (RuntimeException e) {
            for (DeviceBuffer b : new DeviceBuffer[] {residualOut, normOut, weight, residual}) {
                if (b != null) {
                    try {
                        b.close();
                    } catch (RuntimeException suppressed) {
                        e.addSuppressed(suppressed);
                    }
                }
            }
            throw e;
        }
    }

    /**
     * Where call {@code index} of a pass works: the same {@code bytes} at the same {@code offset}
     * of the all-reduce's input and output, the residual, {@code out} and {@code residualOut}, as
     * {@code rows} rows of {@link FusedNormCheck#HIDDEN}; the weight is one row, read by every call.
     */
    record Call(int index, long offset, long bytes, long rows) {
    }

    /**
     * The calls of one pass of {@code w}: call i on bytes {@code [i x bytesPerCall, (i + 1) x bytesPerCall)}.
     *
     * @throws IllegalArgumentException if a call is not a whole number of rows
     */
    static List<Call> calls(PerfSettings.Workload w, DType dtype) {
        long count = w.count(dtype);
        long rows = count / FusedNormCheck.HIDDEN;
        if (count == 0 || rows * FusedNormCheck.HIDDEN != count) {
            throw new IllegalArgumentException(count + " elements per all-reduce are not whole rows of "
                    + FusedNormCheck.HIDDEN);
        }
        List<Call> calls = new ArrayList<>(w.callsPerPass());
        for (int i = 0; i < w.callsPerPass(); i++) {
            calls.add(new Call(i, i * w.bytesPerCall(), w.bytesPerCall(), rows));
        }
        return List.copyOf(calls);
    }

    /**
     * The host images a check uploads before its one pass, every one from the check's
     * {@code seed}, which the host reference ({@link FusedNormCheck}, {@link CollectiveCheck})
     * uses too: this rank's all-reduce input over the pass (element i: {@code InputPattern.value(seed,
     * rank, i)}), the residual over the pass ({@link FusedNormCheck#residual}) and the one row of
     * weights ({@link FusedNormCheck#weight}).
     *
     * @param input    {@code passBytes}: this rank's input, from the start of the input buffer
     * @param residual {@code passBytes}: the residual, from the start of the residual buffer
     * @param weight   {@code HIDDEN} elements: the weight buffer
     */
    record CheckImages(MemorySegment input, MemorySegment residual, MemorySegment weight) {
        static CheckImages of(Arena arena, long passBytes, int rank, int worldSize, DType dtype, long seed) {
            CollectiveLayout layout = CollectiveLayout.of(Operation.ALL_REDUCE, passBytes, worldSize, rank, dtype, false);
            MemorySegment input = arena.allocate(passBytes, 16);
            CollectiveCheck.fillInput(input, layout, dtype, seed);
            MemorySegment residual = arena.allocate(passBytes, 16);
            FusedNormCheck.fillResidual(residual, dtype, seed);
            MemorySegment weight = arena.allocate((long) FusedNormCheck.HIDDEN * dtype.byteSize(), 16);
            FusedNormCheck.fillWeight(weight, dtype, seed);
            return new CheckImages(input, residual, weight);
        }
    }

    /** The cell of one unfused variant: the all-reduce column {@code algorithm} from {@code in} to {@code arOut}, then the norm. */
    PassTimer.Cell cell(PerfAlgorithm algorithm, PerfSettings.Workload w, DeviceBuffer in, DeviceBuffer arOut, long seed) {
        if (in.address() == arOut.address()) {
            throw new IllegalArgumentException("verify-fused runs out of place: the all-reduce needs its own output");
        }
        long count = w.count(dtype);
        List<Call> calls = calls(w, dtype);
        PassTimer.Pass pass = () -> {
            Decision first = null;
            for (Call c : calls) {
                Decision d = allReduce.call(algorithm, in.address() + c.offset(), arOut.address() + c.offset(), count);
                RmsNorm.residualRmsNorm(dtype, arOut.address() + c.offset(), residual.address() + c.offset(),
                        weight.address(), normOut.address() + c.offset(), residualOut.address() + c.offset(), c.rows(),
                        FusedNormCheck.HIDDEN, FusedNormCheck.EPS, stream.handle());
                if (first == null) {
                    first = d;
                }
            }
            return first;
        };
        long passBytes = w.passBytes();
        Runnable prepare = () -> {
            in.slice(0, passBytes).fill(0);
            poison(arOut, passBytes);
        };
        return new PassTimer.Cell(pass, prepare, runOnce -> check(w, in, arOut, seed, runOnce));
    }

    /**
     * The cell of the fused row: per call, {@code Communicator.allReduceResidualRmsNorm} from
     * {@code in} into {@code out} and {@code residualOut}. The pass returns {@code fusedDecision} when
     * the fused kernel ran and {@code unfusedDecision} (the all-reduce the runtime runs instead)
     * otherwise; {@link #lastFusedRan} says which, as the {@code ran} column shows it.
     *
     * @param fusedDecision   what the row records when the fused kernel ran
     * @param unfusedDecision the all-reduce's decision for this size, recorded when it did not
     */
    PassTimer.Cell fusedCell(PerfSettings.Workload w, DeviceBuffer in, long seed, Decision fusedDecision,
                             Decision unfusedDecision) {
        Objects.requireNonNull(fusedDecision, "fusedDecision");
        Objects.requireNonNull(unfusedDecision, "unfusedDecision");
        List<Call> calls = calls(w, dtype);
        int n = calls.size();
        // The views of every call, made once: an eager pass then allocates nothing.
        DeviceBuffer[] ins = new DeviceBuffer[n];
        DeviceBuffer[] residuals = new DeviceBuffer[n];
        DeviceBuffer[] outs = new DeviceBuffer[n];
        DeviceBuffer[] residualOuts = new DeviceBuffer[n];
        for (Call c : calls) {
            ins[c.index()] = in.slice(c.offset(), c.bytes());
            residuals[c.index()] = residual.slice(c.offset(), c.bytes());
            outs[c.index()] = normOut.slice(c.offset(), c.bytes());
            residualOuts[c.index()] = residualOut.slice(c.offset(), c.bytes());
        }
        String unfusedRan = unfusedDecision.algorithm().configName() + FusedVariant.NORM_SUFFIX;
        PassTimer.Pass pass = () -> {
            boolean first = fusedCall.call(ins[0], residuals[0], weight, outs[0], residualOuts[0]);
            for (int i = 1; i < n; i++) {
                if (fusedCall.call(ins[i], residuals[i], weight, outs[i], residualOuts[i]) != first) {
                    throw new IllegalStateException("allReduceResidualRmsNorm ran the fused kernel for some calls of "
                            + "one pass and not for others (all of " + w.bytesPerCall() + " bytes)");
                }
            }
            lastFusedRan = first ? FusedVariant.FUSED : unfusedRan;
            return first ? fusedDecision : unfusedDecision;
        };
        long passBytes = w.passBytes();
        Runnable prepare = () -> {
            in.slice(0, passBytes).fill(0);
            poison(null, passBytes);
        };
        return new PassTimer.Cell(pass, prepare, runOnce -> check(w, in, null, seed, runOnce));
    }

    /** Poisons {@code out}, {@code residualOut} and, for an unfused cell, the all-reduce's output. */
    private void poison(DeviceBuffer arOut, long passBytes) {
        if (arOut != null) {
            arOut.slice(0, passBytes).fill(CollectiveCheck.POISON);
        }
        normOut.slice(0, passBytes).fill(CollectiveCheck.POISON);
        residualOut.slice(0, passBytes).fill(CollectiveCheck.POISON);
    }

    /** The check of one cell; {@code arOut} is null for the fused cell, which writes no separate all-reduce output. */
    private long check(PerfSettings.Workload w, DeviceBuffer in, DeviceBuffer arOut, long seed, Runnable runOnce) {
        long bytes = w.passBytes();
        barrier.run();
        try (Arena arena = Arena.ofConfined()) {
            CollectiveLayout layout = CollectiveLayout.of(Operation.ALL_REDUCE, bytes, worldSize, rank, dtype, false);
            // Every buffer the pass reads comes from this check's seed, the one the reference uses:
            // the weight too (open() wrote it from the run's seed, which no cell's check uses).
            CheckImages images = CheckImages.of(arena, bytes, rank, worldSize, dtype, seed);
            in.slice(0, bytes).copyFrom(images.input());
            residual.slice(0, bytes).copyFrom(images.residual());
            weight.copyFrom(images.weight());
            poison(arOut, bytes);
            barrier.run();
            runOnce.run();
            wait.stream("the checked all-reduce + RMSNorm pass");
            MemorySegment norm = arena.allocate(bytes, 16);
            MemorySegment resOut = arena.allocate(bytes, 16);
            normOut.slice(0, bytes).copyTo(norm);
            residualOut.slice(0, bytes).copyTo(resOut);
            long arWrong = 0;
            if (arOut != null) {
                MemorySegment sum = arena.allocate(bytes, 16);
                arOut.slice(0, bytes).copyTo(sum);
                arWrong = CollectiveCheck.countWrong(sum, layout, dtype, seed);
            }
            FusedNormCheck.Outcome outcome = FusedNormCheck.check(norm, resOut, dtype, worldSize, seed);
            lastCheckNote = String.format(Locale.ROOT, "check on rank %d: %s, residualOut wrong %d, "
                            + "norm outside %.1e relative %d, largest relative error %.2e", rank,
                    arOut != null ? "all-reduce wrong " + arWrong : "no separate all-reduce output (the sum is checked "
                            + "in residualOut)", outcome.residualWrong(), FusedNormCheck.tolerance(dtype),
                    outcome.normWrong(), outcome.maxRelative());
            return arWrong + outcome.wrong();
        }
    }

    /**
     * What the last enqueued fused pass ran, as the {@code ran} column shows it: {@value FusedVariant#FUSED},
     * or the all-reduce then the separate kernel, e.g. "push+norm" ("" before any fused pass).
     */
    String lastFusedRan() {
        return lastFusedRan;
    }

    /** What this rank's last check found, for rank 0's row reason ("" before any check). */
    String lastCheckNote() {
        return lastCheckNote;
    }

    @Override
    public void close() {
        RuntimeException failure = null;
        for (DeviceBuffer b : new DeviceBuffer[] {residualOut, normOut, weight, residual}) {
            try {
                b.close();
            } catch (RuntimeException e) {
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        if (failure != null) {
            throw failure;
        }
    }
}
