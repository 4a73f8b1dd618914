package dev.ar4j.benchmarks.perf;

import dev.ar4j.Communicator;
import dev.ar4j.DType;
import dev.ar4j.cuda.CudaEvent;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.dispatch.Algorithm;
import dev.ar4j.dispatch.Decision;
import dev.ar4j.nccl.NcclCollectives;
import dev.ar4j.nccl.NcclDataType;
import dev.ar4j.nccl.NcclReduction;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * One rank's part of an ar4j-perf run, for one communicator (one PDL setting). Every rank runs
 * the same sequence of measurements on its own GPU; after each one the ranks share their figures
 * with {@code Communicator.exchange} and rank 0 adds the aggregate to its {@link PerfReport}.
 *
 * <p>For each timing mode, placement, size and algorithm (sizes outer, algorithms inner, so that
 * drift affects every algorithm alike) a {@link PassTimer.Cell} is timed by {@link PassTimer}: the
 * collective of {@code -o} ({@link Operation}; its layout: {@link CollectiveLayout}; its exact
 * check: {@link CollectiveCheck}), or, for {@code --scenario verify-fused}, the all-reduce followed
 * by the RMSNorm kernel ({@link FusedPasses}).
 *
 * <h2>Cells that cannot run</h2>
 * A cell the communicators would refuse (with {@code --share-gpu} they have no NCCL: a forced
 * kernel that would fall back to it, see {@link CellGate}) is not run: rank 0 reports it as not
 * runnable, with the reason, and every rank goes on with the next cell.
 *
 * <h2>Failure</h2>
 * Every wait is bounded ({@code --timeout}). A failure is thrown at once, with what was being
 * measured, and nothing collective is attempted afterwards: the caller ends the process, and the
 * launcher stops the other ranks.
 */
final class RankSweep {

    private final Communicator comm;
    private final NcclCollectives collectives;
    private final PerfSettings settings;
    private final PerfReport report;
    private final PdlSetting pdl;
    private final Duration timeout;
    private final DType dtype;
    private final NcclDataType ncclType;
    private final Operation operation;
    private final int rank;
    private final int worldSize;
    private final CellGate gate;

    private CudaStream stream;
    private long streamHandle;
    private GpuWait wait;
    private PassTimer timer;
    private DeviceBuffer in;
    private DeviceBuffer out;
    private SymmetricBuffers symmetric;
    private FusedPasses fused;

    /**
     * @param comm     this rank's communicator; its device must be current on the calling thread
     * @param report   rank 0's report, null on the other ranks
     * @param pdl      the PDL setting {@code comm} was built with (recorded in every row)
     */
    RankSweep(Communicator comm, PerfSettings settings, PerfReport report, PdlSetting pdl) {
        this.comm = Objects.requireNonNull(comm, "comm");
        if (comm.worldSize() < 2) {
            throw new IllegalArgumentException("ar4j-perf measures all-reduces between ranks, and a group of "
                    + comm.worldSize() + " has none (at world size 1 ar4j makes a copy or nothing); run 2 or more ranks");
        }
        this.collectives = settings.shareGpu() ? null : comm.collectives(); // --share-gpu: built with nccl(false)
        this.settings = Objects.requireNonNull(settings, "settings");
        this.report = report;
        this.pdl = Objects.requireNonNull(pdl, "pdl");
        this.timeout = settings.timeout();
        this.dtype = settings.dtype();
        this.ncclType = NcclDataType.of(dtype);
        this.operation = settings.operation();
        this.rank = comm.rank();
        this.worldSize = comm.worldSize();
        this.gate = CellGate.of(comm);
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
        CudaEvent[] events = new CudaEvent[settings.iterations() + 1];
        for (int i = 0; i < events.length; i++) {
            events[i] = CudaEvent.create();
            opened.add(events[i]);
        }
        timer = new PassTimer(comm, stream, wait, events, settings, this::barrier);
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
        if (settings.scenario() == Scenario.VERIFY_FUSED) {
            fused = FusedPasses.open(settings, rank, worldSize, stream, wait, this::barrier, this::allReduce,
                    (i, residual, weight, o, residualOut) -> comm.allReduceResidualRmsNorm(i, residual, weight, o,
                            residualOut, FusedNormCheck.HIDDEN, FusedNormCheck.EPS, dtype, stream));
            opened.add(fused);
        }
        if (settings.shareGpu() && report != null) {
            String why = "--share-gpu: every rank on GPU 0, built with nccl(false) (NCCL refuses two ranks on one GPU)";
            report.skip(fused != null ? FusedVariant.label(PerfAlgorithm.NCCL) : PerfAlgorithm.NCCL.label(), why);
            report.skip(fused != null ? FusedVariant.label(PerfAlgorithm.NCCL_SYMMETRIC)
                    : PerfAlgorithm.NCCL_SYMMETRIC.label(), why);
        } else {
            openSymmetric(bufferBytes, outOfPlace);
        }

        if (settings.modes().contains(TimingMode.EAGER)) {
            PerfSettings.Workload w = settings.workload(firstEffectiveSize());
            for (PerfAlgorithm algorithm : measured()) {
                PerfSettings.Workload runnable = firstRunnableEagerWorkload(algorithm);
                if (runnable != null) {
                    timer.warmUpJavaPath(cell(algorithm, runnable, buffersFor(algorithm, settings.placements().getFirst()),
                            0).pass(), algorithm.label());
                }
            }
            if (fused != null) {
                timer.warmUpJavaPath(fusedCell(w, 0).pass(), FusedVariant.FUSED);
            }
        }
        for (TimingMode mode : settings.modes()) {
            for (Placement placement : settings.placements()) {
                for (long bytes : settings.sizes()) {
                    for (PerfAlgorithm algorithm : measured()) {
                        measureAndShare(mode, placement, bytes, algorithm);
                    }
                    if (fused != null) {
                        measureAndShare(mode, placement, bytes, null);
                    }
                }
            }
        }

        wait.stream("the last measurement");
        comm.barrier();
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

    private void openSymmetric(long bufferBytes, boolean outOfPlace) {
        boolean measureSymmetric = settings.algorithms().contains(PerfAlgorithm.NCCL_SYMMETRIC);
        if (measureSymmetric && settings.skipSymmetric()) {
            measureSymmetric = false;
            if (report != null) {
                report.skip(PerfAlgorithm.NCCL_SYMMETRIC, "--skip-nccl-symm was given");
            }
        }
        if (measureSymmetric) {
            SymmetricBuffers.Outcome outcome = SymmetricBuffers.open(collectives, comm, bufferBytes, outOfPlace);
            symmetric = outcome.buffers();
            if (outcome.skipReason() != null && report != null) {
                report.skip(PerfAlgorithm.NCCL_SYMMETRIC, outcome.skipReason());
            }
        }
    }

    /** The first size of the sweep whose eager cell {@code algorithm} can run, or null if none. */
    private PerfSettings.Workload firstRunnableEagerWorkload(PerfAlgorithm algorithm) {
        for (long s : settings.sizes()) {
            long e = operation.effectiveBytes(s, worldSize, dtype);
            if (e > 0) {
                PerfSettings.Workload w = settings.workload(e);
                if (gate.notRunnable(algorithm, TimingMode.EAGER, w.bytesPerCall(), dtype, settings.registeredInput())
                        .isEmpty()) {
                    return w;
                }
            }
        }
        return null;
    }

    /** The algorithms measured: the settings' list without nccl-symm when its buffers could not be set up. */
    private List<PerfAlgorithm> measured() {
        return settings.algorithms().stream().filter(a -> a != PerfAlgorithm.NCCL_SYMMETRIC || symmetric != null).toList();
    }

    private long firstEffectiveSize() {
        for (long s : settings.sizes()) {
            long e = operation.effectiveBytes(s, worldSize, dtype);
            if (e > 0) {
                return e;
            }
        }
        throw new IllegalArgumentException("no size of the sweep holds one " + dtype + " element per rank for "
                + operation.title() + " on " + worldSize + " ranks; use larger sizes (-b)");
    }

    /**
     * Times, checks and shares one cell; rank 0 adds the row. {@code algorithm} is the all-reduce
     * column, or null for verify-fused's {@value FusedVariant#FUSED} row.
     */
    private void measureAndShare(TimingMode mode, Placement placement, long bytes, PerfAlgorithm algorithm) {
        long effective = operation.effectiveBytes(bytes, worldSize, dtype);
        boolean fusedRow = algorithm == null;
        if (effective == 0) {
            if (report != null && !fusedRow && algorithm == measured().getFirst()) {
                report.noteOnce(operation.title() + " of " + bytes + " bytes skipped: less than one " + dtype
                        + " element per rank on " + worldSize + " ranks");
            }
            return;
        }
        PerfSettings.Workload workload = settings.workload(effective);
        Buffers buffers = fusedRow ? new Buffers(in, in, false) : buffersFor(algorithm, placement);
        String label = fusedRow ? FusedVariant.FUSED : fused != null ? FusedVariant.label(algorithm) : algorithm.label();
        if (!fusedRow) {
            Optional<String> why = gate.notRunnable(algorithm, mode, workload.bytesPerCall(), dtype,
                    settings.registeredInput());
            if (why.isPresent()) {
                if (report != null) {
                    report.notRunnable(mode.label() + " " + placement.label() + " " + what() + " of " + effective
                            + " bytes (" + label + ", pdl " + pdl.label() + ")", why.get());
                }
                return;
            }
        }
        long seed = mix(settings.seed(), effective, fusedRow ? PerfAlgorithm.values().length : algorithm.ordinal(),
                mode.ordinal(), placement.ordinal(), operation.ordinal(), pdl.ordinal());
        PassTimer.Sample sample;
        try {
            PassTimer.Cell cell = fusedRow ? fusedCell(workload, seed) : cell(algorithm, workload, buffers, seed);
            sample = switch (mode) {
                case GRAPH -> timer.graph(cell.pass(), workload, buffers.inPlace(), cell.prepare(), cell.check());
                case EAGER -> timer.eager(cell.pass(), workload, cell.prepare(), cell.check());
            };
        } catch (RuntimeException e) {
            throw new IllegalStateException("rank " + rank + ": " + mode.label() + " " + placement.label() + " "
                    + what() + " of " + effective + " bytes (" + label + ", pdl " + pdl.label()
                    + ") failed: " + e.getMessage()
                    + (algorithm == PerfAlgorithm.NCCL_SYMMETRIC ? " (--skip-nccl-symm leaves this baseline out)" : ""), e);
        }
        byte[] mine = ByteBuffer.allocate(4 * Double.BYTES).putDouble(sample.gpuUs()).putDouble(sample.hostUs())
                .putDouble(sample.callUs()).putLong(sample.wrong()).array();
        byte[][] all = comm.exchange(mine);
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
        String ran = fusedRow ? fused.lastFusedRan()
                : ranLabel(algorithm, d) + (fused != null ? FusedVariant.NORM_SUFFIX : "");
        String reason = fusedRow || algorithm.isAr4j() ? d.reason() : "";
        if (fused != null) {
            reason = reason.isEmpty() ? fused.lastCheckNote() : reason + "; " + fused.lastCheckNote();
        }
        report.add(new PerfResult(settings.scenario().label(), mode.label(), placement.label(), settings.registeredInput(),
                worldSize, effective, effective / dtype.byteSize(), InputPattern.dtypeLabel(dtype), label, ran,
                d.fellBack(), reason, gpuSum / all.length, gpuMax, wrong, hostSum / all.length, callSum / all.length,
                workload.callsPerPass(), settings.iterations(), settings.repetitions(), settings.warmup(),
                operation.label(), pdl.label()));
    }

    private String what() {
        return fused != null ? "all-reduce + RMSNorm" : operation.title();
    }

    /** What ran, as the table shows it: "push", "2stage→nccl" (a forced kernel fell back), "nccl-symm". */
    static String ranLabel(PerfAlgorithm algorithm, Decision decision) {
        return switch (algorithm) {
            case NCCL -> "nccl";
            case NCCL_SYMMETRIC -> "nccl-symm";
            case AUTO -> decision.algorithm().configName();
            case ONE_STAGE, TWO_STAGE, PUSH -> decision.fellBack() ? algorithm.label() + "→nccl"
                    : decision.algorithm().configName();
        };
    }

    // ---- the cells --------------------------------------------------------------------------------

    /**
     * The fused row's cell: {@code Communicator.allReduceResidualRmsNorm} over the input buffer, the
     * row's reason being {@code explainResidualRmsNorm}'s line.
     */
    private PassTimer.Cell fusedCell(PerfSettings.Workload w, long seed) {
        String explained = comm.explainResidualRmsNorm(w.bytesPerCall(), FusedNormCheck.HIDDEN, dtype);
        Decision allReduce = comm.decide(w.bytesPerCall(), dtype, true, settings.registeredInput());
        return fused.fusedCell(w, in, seed, new Decision(Algorithm.PUSH, explained, false),
                new Decision(allReduce.algorithm(), explained, allReduce.fellBack()));
    }

    private PassTimer.Cell cell(PerfAlgorithm algorithm, PerfSettings.Workload w, Buffers b, long seed) {
        if (fused != null) {
            return fused.cell(algorithm, w, b.in(), b.out(), seed);
        }
        CollectiveLayout call = CollectiveLayout.of(operation, w.bytesPerCall(), worldSize, rank, dtype, b.inPlace());
        // The check sees a pass as one collective over the pass's region (several calls only for all-reduce).
        CollectiveLayout pass = CollectiveLayout.of(operation, w.passBytes(), worldSize, rank, dtype, b.inPlace());
        PassTimer.Pass enqueue = () -> enqueuePass(algorithm, w, b, call);
        Runnable prepare = () -> {
            b.in().slice(0, b.inPlace() ? pass.regionBytes() : pass.sendBytes()).fill(0);
            if (!b.inPlace()) {
                b.out().slice(0, pass.receiveBytes()).fill(CollectiveCheck.POISON);
            }
        };
        return new PassTimer.Cell(enqueue, prepare, runOnce -> check(pass, b, seed, runOnce));
    }

    /** Enqueues one pass (its calls on consecutive slices) and returns the first call's decision. */
    private Decision enqueuePass(PerfAlgorithm algorithm, PerfSettings.Workload w, Buffers b, CollectiveLayout call) {
        long step = call.regionBytes();
        Decision first = null;
        for (int i = 0; i < w.callsPerPass(); i++) {
            long send = b.in().address() + i * step + call.sendOffset();
            long receive = b.out().address() + i * step + call.receiveOffset();
            Decision d = switch (operation) {
                case ALL_REDUCE -> allReduce(algorithm, send, receive, call.count());
                case ALL_GATHER -> {
                    collectives.allGather(send, receive, call.count(), ncclType, streamHandle);
                    yield ncclBaseline("ncclAllGather");
                }
                case REDUCE_SCATTER -> {
                    collectives.reduceScatter(send, receive, call.count(), ncclType, NcclReduction.SUM, streamHandle);
                    yield ncclBaseline("ncclReduceScatter");
                }
                case BROADCAST -> {
                    collectives.broadcast(send, receive, call.count(), ncclType, Operation.ROOT, streamHandle);
                    yield ncclBaseline("ncclBroadcast");
                }
            };
            if (first == null) {
                first = d;
            }
        }
        return first;
    }

    /** One all-reduce of {@code count} elements: ar4j with the algorithm forced, or NCCL directly. */
    private Decision allReduce(PerfAlgorithm algorithm, long send, long receive, long count) {
        return switch (algorithm) {
            case AUTO, ONE_STAGE, TWO_STAGE, PUSH ->
                    comm.allReduce(send, receive, count, dtype, streamHandle, algorithm.policy().orElseThrow());
            case NCCL, NCCL_SYMMETRIC -> {
                collectives.allReduce(send, receive, count, ncclType, NcclReduction.SUM, streamHandle);
                yield ncclBaseline("ncclAllReduce");
            }
        };
    }

    private static Decision ncclBaseline(String call) {
        return new Decision(Algorithm.NCCL, "NCCL baseline: " + call + " called directly", false);
    }

    /**
     * Writes fresh inputs, poisons the output ({@link CollectiveCheck#POISON}), runs the pass once
     * and counts the elements that differ from the collective's definition.
     */
    private long check(CollectiveLayout layout, Buffers b, long seed, Runnable runOnce) {
        barrier();
        try (Arena arena = Arena.ofConfined()) {
            long inputBytes = layout.inPlace() ? layout.regionBytes() : layout.sendBytes();
            MemorySegment host = arena.allocate(inputBytes, 16);
            CollectiveCheck.fillInput(host, layout, dtype, seed);
            b.in().slice(0, inputBytes).copyFrom(host);
            DeviceBuffer result = layout.inPlace() ? b.in().slice(layout.receiveOffset(), layout.receiveBytes())
                    : b.out().slice(0, layout.receiveBytes());
            if (!layout.inPlace()) {
                result.fill(CollectiveCheck.POISON);
            }
            barrier();
            runOnce.run();
            wait.stream("the checked " + what());
            MemorySegment received = arena.allocate(layout.receiveBytes(), 16);
            result.copyTo(received);
            return CollectiveCheck.countWrong(received, layout, dtype, seed);
        }
    }

    private void barrier() {
        comm.barrier();
    }

    private Buffers buffersFor(PerfAlgorithm algorithm, Placement placement) {
        DeviceBuffer input = algorithm == PerfAlgorithm.NCCL_SYMMETRIC ? symmetric.in() : in;
        boolean inPlace = placement == Placement.IN_PLACE;
        DeviceBuffer output = inPlace ? input : algorithm == PerfAlgorithm.NCCL_SYMMETRIC ? symmetric.out() : out;
        return new Buffers(input, output, inPlace);
    }

    static double median(double[] values) {
        return PassTimer.median(values);
    }

    /** The seed of one cell: {@code seed} mixed with what identifies the cell. */
    static long mix(long seed, long... values) {
        long h = seed;
        for (long v : values) {
            h = (h ^ v) * 0x9E3779B97F4A7C15L;
            h ^= h >>> 29;
        }
        return h;
    }

    /** Input and output of one measurement (the same buffer in place). */
    private record Buffers(DeviceBuffer in, DeviceBuffer out, boolean inPlace) {
    }
}
