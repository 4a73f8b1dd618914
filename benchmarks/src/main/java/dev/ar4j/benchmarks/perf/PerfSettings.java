package dev.ar4j.benchmarks.perf;

import dev.ar4j.Communicator;
import dev.ar4j.DType;

import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * Everything one ar4j-perf measurement run needs to know, parsed and validated: the same on
 * every rank.
 *
 * @param scenario        sweep or verify
 * @param sizes           bytes per all-reduce, in order (verify: {@link Scenario#VERIFY_BYTES})
 * @param dtype           element type
 * @param algorithms      the column groups, NCCL baselines included
 * @param warmup          warm-up rounds: graph replays, or {@code iterations} eager passes each
 * @param iterations      all-reduces per timed step (sweep: per graph / per eager batch; verify:
 *                        timed replays of the one-pass graph per repetition, eager passes per batch)
 * @param repetitions     timed steps; the median is reported
 * @param modes           graph and/or eager timing
 * @param placements      out of place and/or in place
 * @param registeredInput whether ar4j's input lies in a buffer registered with {@code Communicator.register}
 * @param stagingBytes    the communicator's staging buffer size
 * @param skipSymmetric   do not measure {@code nccl-symm} (it is otherwise always measured)
 * @param timeout         bound on every wait for the other ranks or for the GPU
 * @param seed            seed of the checked inputs
 * @param operation       the collective ({@code -o}); only the sweep measures others than the all-reduce
 * @param pdl             the PDL settings, one communicator build (and one pass over everything) each
 * @param shareGpu        every rank on GPU 0, built with {@code nccl(false)} (NCCL refuses two ranks on
 *                        one GPU): ar4j's kernels only, absolute times distorted by the sharing
 */
public record PerfSettings(Scenario scenario, List<Long> sizes, DType dtype, List<PerfAlgorithm> algorithms,
                           int warmup, int iterations, int repetitions, List<TimingMode> modes,
                           List<Placement> placements, boolean registeredInput, long stagingBytes,
                           boolean skipSymmetric, Duration timeout, long seed, Operation operation,
                           List<PdlSetting> pdl, boolean shareGpu) {

    /**
     * An all-reduce run with the runtime's PDL default and a GPU per rank: {@code operation} is
     * {@link Operation#ALL_REDUCE}, {@code pdl} {@link PdlSetting#DEFAULT} alone and {@code shareGpu}
     * false; the rest is validated as by the canonical constructor.
     *
     * @param scenario        sweep, verify or verify-fused
     * @param sizes           bytes per all-reduce, in order; each a positive whole number of elements
     * @param dtype           element type
     * @param algorithms      the column groups, NCCL baselines included; not empty
     * @param warmup          warm-up rounds, at least 0
     * @param iterations      all-reduces per timed step, at least 1
     * @param repetitions     timed steps, at least 1; the median is reported
     * @param modes           graph and/or eager timing; not empty
     * @param placements      out of place and/or in place; not empty
     * @param registeredInput whether ar4j's input lies in a registered buffer
     * @param stagingBytes    the communicator's staging buffer size, a positive multiple of 16
     * @param skipSymmetric   do not measure {@code nccl-symm}
     * @param timeout         bound on every wait for the other ranks or for the GPU; positive
     * @param seed            seed of the checked inputs
     * @throws IllegalArgumentException if a value is out of range as listed above, or verify-fused is
     *                                  asked to run in place
     * @throws NullPointerException     if {@code scenario}, {@code dtype}, {@code timeout} or a list is null
     */
    public PerfSettings(Scenario scenario, List<Long> sizes, DType dtype, List<PerfAlgorithm> algorithms,
                        int warmup, int iterations, int repetitions, List<TimingMode> modes,
                        List<Placement> placements, boolean registeredInput, long stagingBytes,
                        boolean skipSymmetric, Duration timeout, long seed) {
        this(scenario, sizes, dtype, algorithms, warmup, iterations, repetitions, modes, placements, registeredInput,
                stagingBytes, skipSymmetric, timeout, seed, Operation.ALL_REDUCE, List.of(PdlSetting.DEFAULT), false);
    }

    /** Validates every field. */
    public PerfSettings {
        Objects.requireNonNull(scenario, "scenario");
        Objects.requireNonNull(operation, "operation");
        pdl = List.copyOf(pdl);
        if (pdl.isEmpty()) {
            throw new IllegalArgumentException("pdl settings must not be empty");
        }
        if (operation != Operation.ALL_REDUCE && scenario != Scenario.SWEEP) {
            throw new IllegalArgumentException("--scenario " + scenario.label() + " is an all-reduce scenario; -o "
                    + operation.label() + " runs only as a sweep (leave out --scenario or -o)");
        }
        if (!operation.hasAr4jKernels()) {
            for (PerfAlgorithm a : algorithms) {
                if (a.isAr4j()) {
                    throw new IllegalArgumentException("-o " + operation.label() + " runs through NCCL only (ar4j's "
                            + "kernels do all-reduce): -a " + a.label() + " does not apply; leave out -a");
                }
            }
            if (registeredInput) {
                throw new IllegalArgumentException("--registered applies to ar4j's all-reduce input; -o "
                        + operation.label() + " runs through NCCL only");
            }
        }
        if (shareGpu) {
            if (operation != Operation.ALL_REDUCE) {
                throw new IllegalArgumentException("-o " + operation.label() + " runs through NCCL, which refuses two "
                        + "ranks on one GPU: leave out --share-gpu (it needs a GPU per rank)");
            }
            for (PerfAlgorithm a : algorithms) {
                if (!a.isAr4j()) {
                    throw new IllegalArgumentException("--share-gpu builds the communicators with nccl(false) (NCCL "
                            + "refuses two ranks on one GPU): the " + a.label() + " column cannot run");
                }
            }
        }
        if (scenario == Scenario.VERIFY_FUSED && placements.contains(Placement.IN_PLACE)) {
            throw new IllegalArgumentException("--scenario verify-fused runs out of place (the all-reduce writes the "
                    + "RMSNorm's input); leave out --in-place");
        }
        Objects.requireNonNull(dtype, "dtype");
        Objects.requireNonNull(timeout, "timeout");
        sizes = List.copyOf(sizes);
        algorithms = List.copyOf(algorithms);
        modes = List.copyOf(modes);
        placements = List.copyOf(placements);
        if (sizes.isEmpty() || algorithms.isEmpty() || modes.isEmpty() || placements.isEmpty()) {
            throw new IllegalArgumentException("sizes, algorithms, timing modes and placements must not be empty");
        }
        for (long s : sizes) {
            if (s <= 0 || s % dtype.byteSize() != 0) {
                throw new IllegalArgumentException(s + " bytes is not a positive whole number of " + dtype + " elements");
            }
        }
        if (warmup < 0) {
            throw new IllegalArgumentException("-w (warm-up rounds) must be >= 0, got " + warmup);
        }
        if (iterations < 1) {
            throw new IllegalArgumentException("-n (iterations per timing) must be >= 1, got " + iterations);
        }
        if (repetitions < 1) {
            throw new IllegalArgumentException("-r (repetitions) must be >= 1, got " + repetitions);
        }
        if (stagingBytes < 16 || stagingBytes % 16 != 0) {
            throw new IllegalArgumentException("--staging must be a positive multiple of 16 bytes, got " + stagingBytes);
        }
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("--timeout must be positive, got " + timeout);
        }
    }

    /**
     * The all-reduces of one timed step for a size. The sweep times {@code iterations} calls of
     * {@code bytes} in one graph (or eager batch); verify and verify-fused time passes of
     * {@link Scenario#VERIFY_ALL_REDUCES} calls, replayed {@code iterations} times per repetition.
     *
     * @param bytes bytes of each all-reduce, one of {@link #sizes}
     * @return the shape of one timed step
     */
    public Workload workload(long bytes) {
        return switch (scenario) {
            case SWEEP -> new Workload(bytes, 1, iterations, 1, iterations);
            case VERIFY, VERIFY_FUSED -> new Workload(bytes, Scenario.VERIFY_ALL_REDUCES, 1, iterations, iterations);
        };
    }

    /**
     * Bytes of each all-reduce of {@code --scenario verify-fused}: 3 x 7168 elements.
     *
     * @param dtype the element type
     * @return {@code ROWS * HIDDEN * dtype.byteSize()} ({@link FusedNormCheck})
     */
    public static long fusedBytes(DType dtype) {
        return (long) FusedNormCheck.ROWS * FusedNormCheck.HIDDEN * dtype.byteSize();
    }

    /** {@return bytes of each input (and output) buffer: the largest {@link Workload#passBytes} over the sizes} */
    public long bufferBytes() {
        long max = 0;
        for (long s : sizes) {
            max = Math.max(max, workload(s).passBytes());
        }
        return max;
    }

    /**
     * Registration-table slots the communicator needs: every all-reduce of an unregistered input
     * captured into a graph by an ar4j policy takes one, and they are never released.
     *
     * @return {@link Communicator#DEFAULT_MAX_REGISTRATIONS} without graph timing, else the slots
     *         the graphs need plus 64 spare, and at least the default
     * @throws IllegalArgumentException if the run would capture more than {@code Integer.MAX_VALUE / 2}
     *                                  all-reduces
     */
    public int registrationSlots() {
        if (!modes.contains(TimingMode.GRAPH)) {
            return Communicator.DEFAULT_MAX_REGISTRATIONS;
        }
        // verify-fused's fused row captures as many calls of the communicator as an ar4j column.
        long ar4jColumns = algorithms.stream().filter(PerfAlgorithm::isAr4j).count()
                + (scenario == Scenario.VERIFY_FUSED ? 1 : 0);
        long perPlacement = 0;
        for (long s : sizes) {
            Workload w = workload(s);
            perPlacement += (long) w.callsPerPass() * (w.graphPasses() + 1);
        }
        long needed = ar4jColumns * perPlacement * placements.size() + 64;
        if (needed > Integer.MAX_VALUE / 2) {
            throw new IllegalArgumentException("this run would capture " + needed + " all-reduces into graphs; "
                    + "use fewer sizes or iterations");
        }
        return (int) Math.max(Communicator.DEFAULT_MAX_REGISTRATIONS, needed);
    }

    /**
     * The all-reduces of one timed step.
     *
     * @param bytesPerCall   bytes of each all-reduce
     * @param callsPerPass   all-reduces of one pass, on consecutive slices of the buffers
     * @param graphPasses    passes captured in the timed graph
     * @param replaysPerRep  graph replays timed one by one in each repetition
     * @param eagerPasses    passes called back to back in each eager repetition
     */
    public record Workload(long bytesPerCall, int callsPerPass, int graphPasses, int replaysPerRep, int eagerPasses) {
        /** {@return bytes one pass covers: {@code bytesPerCall * callsPerPass}} */
        public long passBytes() {
            return bytesPerCall * callsPerPass;
        }

        /**
         * Elements of one all-reduce.
         *
         * @param dtype the element type
         * @return {@code bytesPerCall / dtype.byteSize()}
         */
        public long count(DType dtype) {
            return bytesPerCall / dtype.byteSize();
        }
    }
}
