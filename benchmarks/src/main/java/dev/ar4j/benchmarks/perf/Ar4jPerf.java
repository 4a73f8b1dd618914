package dev.ar4j.benchmarks.perf;

import dev.ar4j.DType;
import dev.ar4j.dispatch.DispatchConfig;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;

/**
 * {@code ar4j-perf}: all-reduce latency and bandwidth of ar4j's kernels against NCCL on the same
 * GPUs in one run, in the manner of nccl-tests' {@code all_reduce_perf}.
 *
 * <pre>
 * java --enable-native-access=ALL-UNNAMED -cp benchmarks.jar dev.ar4j.benchmarks.perf.Ar4jPerf -b 1K -e 64M -f 2 -d bf16
 * java -cp benchmarks.jar dev.ar4j.benchmarks.perf.Ar4jPerf --plan nvlink:4          (no GPU needed)
 * java -cp benchmarks.jar dev.ar4j.benchmarks.perf.Ar4jPerf plot results.csv out.png
 * </pre>
 *
 * This process checks the machine and starts the workers ({@link WorkerLauncher}); the workers
 * measure ({@link PerfWorker}, {@link RankSweep}); rank 0 prints the table and writes CSV, JSON
 * and PNG. Exit codes: {@link ExitCodes}; {@code --help} lists them and the environment variables
 * ({@link EnvironmentHelp}); {@code -V} prints the version and commit of the jar ({@link Ar4jVersion}).
 */
@Command(name = "ar4j-perf", mixinStandardHelpOptions = true, versionProvider = Ar4jPerf.VersionProvider.class,
        sortOptions = false, subcommands = {Ar4jPerf.Plot.class},
        description = {
            "All-reduce time, algorithm and bus bandwidth of ar4j's kernels (auto, 1stage, 2stage, push) against NCCL "
                    + "(plain and symmetric) on this host's GPUs, like nccl-tests' all_reduce_perf. Every result is "
                    + "checked (#wrong). Starts one JVM per GPU, or one JVM with a thread per rank (--threads; always with "
                    + "--share-gpu).",
            "-o allgather|reducescatter|broadcast sweeps NCCL's other collectives like nccl-tests' other binaries; "
                    + "--scenario verify-fused times 122 x (all-reduce + residual add + RMSNorm); --pdl on,off measures "
                    + "with programmatic dependent launch on and off in one run.",
            "Without a usable GPU it says what is missing; --plan prints the dispatch table for a topology instead."},
        exitCodeListHeading = "%nExit codes (ar4j-perf, plot, and java -jar benchmarks.jar for JMH):%n")
public final class Ar4jPerf implements Callable<Integer> {

    @Spec
    private CommandLine.Model.CommandSpec spec;

    @Option(names = "-b", paramLabel = "BYTES", defaultValue = "1K", converter = ByteSizeConverter.class,
            description = "smallest size (K, M, G suffixes; default ${DEFAULT-VALUE})")
    private long minBytes;

    @Option(names = "-e", paramLabel = "BYTES", defaultValue = "64M", converter = ByteSizeConverter.class,
            description = "largest size (default ${DEFAULT-VALUE})")
    private long maxBytes;

    @Option(names = "-f", paramLabel = "FACTOR", defaultValue = "2", description = "size growth factor (default ${DEFAULT-VALUE})")
    private int factor;

    @Option(names = "--sizes", paramLabel = "LIST", split = ",", converter = ByteSizeConverter.class,
            description = "exact sizes instead of -b/-e/-f, e.g. 1K,43008,256K")
    private List<Long> sizes;

    @Option(names = {"-o", "--op"}, paramLabel = "OP", defaultValue = "allreduce",
            description = "allreduce (default; ar4j's kernels against NCCL), or allgather, reducescatter, broadcast: "
                    + "NCCL's collectives through Communicator.collectives() (nccl and nccl-symm), sizes and busbw "
                    + "as in nccl-tests (size = the whole buffer; busbw factor (n-1)/n, broadcast 1, root 0)")
    private String operation;

    @Option(names = "-d", paramLabel = "DTYPE", defaultValue = "bf16", description = "bf16, fp16 or fp32 (default ${DEFAULT-VALUE})")
    private String dtype;

    @Option(names = "-a", paramLabel = "LIST", defaultValue = PerfAlgorithm.DEFAULT_LIST,
            description = "algorithms: auto, 1stage, 2stage, push, nccl, nccl-symm (default ${DEFAULT-VALUE}; "
                    + "verify-fused: push; -o other than allreduce: nccl only); nccl and nccl-symm are always added")
    private String algorithms;

    @Option(names = "-w", paramLabel = "N", defaultValue = "5",
            description = "warm-up rounds: graph replays, or -n eager all-reduces each (default ${DEFAULT-VALUE})")
    private int warmup;

    @Option(names = "-n", paramLabel = "N", defaultValue = "50",
            description = "all-reduces per timing: captured per graph, or called back to back (default ${DEFAULT-VALUE})")
    private int iterations;

    @Option(names = "-r", paramLabel = "N", defaultValue = "7", description = "timed repetitions; the median is reported (default ${DEFAULT-VALUE})")
    private int repetitions;

    @Option(names = {"-G", "--graph"}, description = "time CUDA-graph replays (the default)")
    private boolean graph;

    @Option(names = "--eager", description = "time eager calls from Java instead (with -G: both)")
    private boolean eager;

    @Option(names = "--both", description = "time both graph replays and eager calls")
    private boolean both;

    @Option(names = "--out-of-place", description = "separate output buffer (the default)")
    private boolean outOfPlace;

    @Option(names = "--in-place", description = "output over the input (with --out-of-place: both)")
    private boolean inPlace;

    @Option(names = "--registered", description = "ar4j's input lies in a buffer registered with Communicator.register "
            + "(default: unregistered)")
    private boolean registered;

    @Option(names = "--staging", paramLabel = "BYTES", converter = ByteSizeConverter.class, defaultValue = "8M",
            description = "the communicator's staging buffer (default ${DEFAULT-VALUE})")
    private long stagingBytes;

    @Option(names = "--scenario", paramLabel = "NAME", defaultValue = "sweep",
            description = "sweep (default); verify: 122 all-reduces of 43008 bytes in one CUDA graph, time per pass; "
                    + "verify-fused: 122 x (all-reduce of 3 x 7168 + residual add + RMSNorm) in one CUDA graph, per "
                    + "variant: push+norm, nccl+norm (the ResidualRmsNorm kernel after the all-reduce) and fused "
                    + "(Communicator.allReduceResidualRmsNorm; its ran column says fused, or e.g. push+norm where the "
                    + "runtime ran the all-reduce and the separate kernel instead)")
    private String scenario;

    @Option(names = "--pdl", paramLabel = "LIST",
            description = "programmatic dependent launch: on, off or on,off (both in one run); the communicators "
                    + "are built with Builder.pdl(true|false) and -Dar4j.pdl=1|0 for each, and every row records its "
                    + "setting (default: the runtime's own, nothing set). If the runtime does not report the setting "
                    + "the run says so")
    private String pdl;

    @Option(names = "--skip-nccl-symm", description = "do not measure the nccl-symm baseline")
    private boolean skipSymmetric;

    @Option(names = "-g", paramLabel = "N", defaultValue = "0",
            description = "GPUs (world size); default: the largest of 8, 6, 4, 2 that are visible")
    private int gpus;

    @Option(names = "--share-gpu", description = "every rank on GPU 0 (-g ranks, default 2), each a thread of one JVM "
            + "(one CUDA context, so the ranks' kernels run at the same time), built with nccl(false): "
            + "NCCL refuses two ranks on one GPU, so only ar4j's kernels run (no nccl columns, no -o other than "
            + "allreduce; a cell whose kernel would fall back to NCCL is reported as not runnable and the sweep goes on); "
            + "the sharing distorts absolute times")
    private boolean shareGpu;

    @Option(names = "--threads", negatable = true, description = "one JVM running every rank from its own thread "
            + "(Communicator.localGroup) instead of one JVM per GPU; the default with --share-gpu, where --no-threads "
            + "is refused: separate processes are separate CUDA contexts, which the GPU time-slices without MPS, so "
            + "spinning kernels would wait for each other's time slice")
    private Boolean threads;

    /** The process model ({@link WorkerLauncher#threads}), set by {@link #settings}. */
    private boolean oneJvm;

    @Option(names = "--out-dir", paramLabel = "DIR", defaultValue = "ar4j-perf-out",
            description = "directory of the default output files (default ${DEFAULT-VALUE})")
    private Path outDir;

    @Option(names = "--csv", paramLabel = "FILE", description = "CSV output (default OUT-DIR/ar4j-perf[-OP][-verify|"
            + "-verify-fused][-share-gpu].csv)")
    private Path csv;

    @Option(names = "--json", paramLabel = "FILE", description = "JSON output (default: as the CSV, .json)")
    private Path json;

    @Option(names = "--png", paramLabel = "FILE", description = "PNG chart (default: as the CSV, .png)")
    private Path png;

    @Option(names = "--no-png", description = "draw no PNG (draw it later with the plot subcommand)")
    private boolean noPng;

    @Option(names = "--timeout", paramLabel = "SECONDS", defaultValue = "120",
            description = "bound on each wait for the other ranks or the GPU (default ${DEFAULT-VALUE})")
    private long timeoutSeconds;

    @Option(names = "--time-limit", paramLabel = "SECONDS", defaultValue = "3600",
            description = "bound on the whole run; workers are stopped after it (default ${DEFAULT-VALUE})")
    private long timeLimitSeconds;

    @Option(names = "--seed", paramLabel = "N", defaultValue = "20261130", description = "seed of the checked inputs")
    private long seed;

    @Option(names = "--plan", paramLabel = "TOPOLOGY",
            description = "print what the run would measure on nvlink:N, pcie:N, nop2p:N or multihost:N (no GPU "
                    + "needed): the dispatch decision and reason for every size, registered and not; with -o, the NCCL "
                    + "call, counts and busbw factor per size; with --scenario verify-fused, its rows; the --pdl "
                    + "settings. Honours AR4J_ALLREDUCE_ALGO etc.")
    private String plan;

    // Set by the launcher for its workers.
    @Option(names = "--worker-rank", hidden = true, defaultValue = "-1")
    private int workerRank;
    @Option(names = "--worker-world-size", hidden = true, defaultValue = "0")
    private int workerWorldSize;
    @Option(names = "--worker-port", hidden = true, split = ",", defaultValue = "0")
    private List<Integer> workerPorts;
    @Option(names = "--worker-parent-pid", hidden = true, defaultValue = "-1")
    private long workerParentPid;
    @Option(names = "--worker-command-line", hidden = true)
    private String workerCommandLine;
    @Option(names = "--worker-threads", hidden = true)
    private boolean workerThreads;

    private final List<String> rawArgs;

    private Ar4jPerf(List<String> rawArgs) {
        this.rawArgs = List.copyOf(rawArgs);
    }

    /**
     * Runs ar4j-perf and exits the JVM with its code ({@link ExitCodes}).
     *
     * @param args the command line, as {@code ar4j-perf --help} lists it
     */
    public static void main(String[] args) {
        System.setProperty("java.awt.headless", "true");
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        PrintStream err = new PrintStream(new FileOutputStream(FileDescriptor.err), true, StandardCharsets.UTF_8);
        System.setOut(out);
        System.setErr(err);
        int code = run(args);
        out.flush();
        err.flush();
        exit(code);
    }

    /** Parses and runs; returns the exit code (for tests: nothing is exited). */
    static int run(String... args) {
        CommandLine cli = new CommandLine(new Ar4jPerf(List.of(args)));
        cli.setOverwrittenOptionsAllowed(true); // a later --out-dir etc. wins (the GPU script passes a default first)
        cli.setOut(new java.io.PrintWriter(System.out, true));
        cli.setErr(new java.io.PrintWriter(System.err, true));
        Map<String, String> exitCodes = new LinkedHashMap<>();
        for (String line : ExitCodes.helpLines()) {
            int colon = line.indexOf(':');
            exitCodes.put(line.substring(0, colon), line.substring(colon + 1));
        }
        for (CommandLine command : List.of(cli, cli.getSubcommands().get("plot"))) {
            command.getCommandSpec().usageMessage().exitCodeListHeading(
                    "%nExit codes (ar4j-perf, plot, and java -jar benchmarks.jar for JMH):%n").exitCodeList(exitCodes);
        }
        cli.getCommandSpec().usageMessage().footer(EnvironmentHelp.footer().toArray(String[]::new));
        cli.setExecutionExceptionHandler((e, commandLine, parseResult) -> {
            String who = commandLine.getCommand() instanceof Ar4jPerf perf ? perf.who() : "ar4j-perf "
                    + commandLine.getCommandName();
            if (e instanceof IllegalArgumentException) {
                commandLine.getErr().println(who + ": " + e.getMessage());
                return ExitCodes.USAGE;
            }
            if (e instanceof NoSuchFileException missing) {
                commandLine.getErr().println(who + ": no such file: " + missing.getFile() + " (check the path; "
                        + "nothing was written)");
                return ExitCodes.USAGE;
            }
            if (e instanceof AccessDeniedException denied) {
                commandLine.getErr().println(who + ": permission denied: " + denied.getFile());
                return ExitCodes.USAGE;
            }
            commandLine.getErr().println(who + ": failed: " + describe(e));
            if (Boolean.getBoolean("ar4j.perf.trace")) {
                for (StackTraceElement frame : e.getStackTrace()) {
                    commandLine.getErr().println("    at " + frame);
                }
            } else {
                commandLine.getErr().println(who + ": run with -Dar4j.perf.trace=true (AR4J_PERF_JAVA_OPTS on the GPU "
                        + "script) for the failing call's stack");
            }
            return ExitCodes.FAILED;
        });
        return cli.execute(args);
    }

    @Override
    public Integer call() throws Exception {
        PrintStream out = System.out;
        PrintStream err = System.err;
        DType type = DType.parse(dtype);
        Operation op = Operation.parse(operation);
        List<Long> sweep = sizes != null && !sizes.isEmpty() ? SizeSweep.explicit(sizes, type)
                : SizeSweep.geometric(minBytes, maxBytes, factor, type);
        PerfSettings settings = settings(type, op, sweep);
        if (plan != null) {
            RunPlan.print(out, DispatchPlan.parseTopology(plan), DispatchConfig.fromSystem(), settings, oneJvm);
            return ExitCodes.OK;
        }
        Duration timeLimit = Duration.ofSeconds(timeLimitSeconds);
        if (timeLimitSeconds <= 0) {
            throw new IllegalArgumentException("--time-limit must be positive, got " + timeLimitSeconds);
        }
        String commandLine = workerCommandLine != null ? workerCommandLine : commandLine(rawArgs);

        if (workerRank >= 0) {
            if (workerParentPid > 0) {
                PerfWorker.exitWithParent(workerParentPid);
            }
            String problem = PerfWorker.environmentProblem();
            if (problem != null) {
                err.println(who() + ": " + problem);
                return ExitCodes.USAGE;
            }
            PerfWorker worker = new PerfWorker(settings, outputs(settings), commandLine, out, err);
            return workerThreads ? worker.runThreads(workerWorldSize, timeLimit)
                    : worker.runRank(workerRank, workerWorldSize, workerPorts);
        }

        GpuCheck check = GpuCheck.probe(settings.shareGpu() ? 1 : 2);
        if (!check.usable()) {
            err.println("ar4j-perf: cannot run here: " + check.problem());
            err.println("ar4j-perf: (--plan nvlink:N or --plan pcie:N prints the dispatch table without a GPU)");
            return ExitCodes.USAGE;
        }
        int worldSize = check.worldSize(gpus, settings.shareGpu());
        err.println("[ar4j-perf] " + check.gpus() + " GPUs visible, NCCL " + check.nccl() + "; world size " + worldSize
                + "; " + settings.operation().label() + ", " + settings.scenario().label() + "; "
                + settings.pdl().size() + " pdl settings x " + settings.sizes().size() + " sizes x "
                + settings.algorithms().size() + " algorithms ("
                + settings.algorithms().stream().map(PerfAlgorithm::label).collect(Collectors.joining(",")) + ") x "
                + settings.modes().size() + " timing modes x " + settings.placements().size() + " placements");
        return WorkerLauncher.run(rawArgs, commandLine, worldSize, oneJvm, settings.pdl().size(), timeLimit, err);
    }

    /** "ar4j-perf", or "ar4j-perf rank 1" in a worker, for messages. */
    private String who() {
        if (workerRank < 0) {
            return "ar4j-perf";
        }
        return workerThreads ? "ar4j-perf worker (" + workerWorldSize + " ranks in threads)" : "ar4j-perf rank " + workerRank;
    }

    private PerfSettings settings(DType type, Operation op, List<Long> sweep) {
        Scenario sc = Scenario.parse(scenario);
        CommandLine.ParseResult parsed = spec.commandLine().getParseResult();
        oneJvm = WorkerLauncher.threads(shareGpu, parsed.hasMatchedOption("--threads") ? threads : null);
        if (sc.isVerify()) {
            long fixed = sc == Scenario.VERIFY ? Scenario.VERIFY_BYTES : PerfSettings.fusedBytes(type);
            if (sizes != null || parsed.hasMatchedOption("-b") || parsed.hasMatchedOption("-e")) {
                throw new IllegalArgumentException("--scenario " + sc.label() + " has a fixed size (" + fixed
                        + " bytes); leave out -b, -e and --sizes");
            }
            sweep = List.of(fixed);
        }
        String columnList = parsed.hasMatchedOption("-a") ? algorithms
                : sc == Scenario.VERIFY_FUSED ? PerfAlgorithm.PUSH.label()
                : op.hasAr4jKernels() ? algorithms : PerfAlgorithm.NCCL.label();
        List<PerfAlgorithm> columns = PerfAlgorithm.parseListWithBaselines(List.of(columnList));
        if (shareGpu) {
            columns = columns.stream().filter(PerfAlgorithm::isAr4j).toList(); // the baselines need NCCL
            if (columns.isEmpty()) {
                throw new IllegalArgumentException("--share-gpu runs ar4j's kernels only (NCCL refuses two ranks on "
                        + "one GPU): give -a with auto, 1stage, 2stage or push");
            }
        }
        List<TimingMode> modes = new ArrayList<>();
        if (both || graph || !eager) {
            modes.add(TimingMode.GRAPH);
        }
        if (both || eager) {
            modes.add(TimingMode.EAGER);
        }
        List<Placement> placements = new ArrayList<>();
        if (outOfPlace || !inPlace) {
            placements.add(Placement.OUT_OF_PLACE);
        }
        if (inPlace) {
            placements.add(Placement.IN_PLACE);
        }
        return new PerfSettings(sc, sweep, type, columns, warmup,
                iterations, repetitions, modes, placements, registered, stagingBytes, skipSymmetric,
                Duration.ofSeconds(timeoutSeconds), seed, op, PdlSetting.parseList(pdl), shareGpu);
    }

    private OutputFiles outputs(PerfSettings settings) {
        String base = "ar4j-perf" + (settings.operation() == Operation.ALL_REDUCE ? "" : "-" + settings.operation().label())
                + (settings.scenario() == Scenario.SWEEP ? "" : "-" + settings.scenario().label())
                + (settings.shareGpu() ? "-share-gpu" : "");
        return new OutputFiles(csv != null ? csv : outDir.resolve(base + ".csv"),
                json != null ? json : outDir.resolve(base + ".json"),
                noPng ? null : png != null ? png : outDir.resolve(base + ".png"));
    }

    /** "ar4j-perf -b 1K ..." with arguments quoted where a shell would need it. */
    static String commandLine(List<String> args) {
        StringBuilder b = new StringBuilder("ar4j-perf");
        for (String a : args) {
            b.append(' ');
            if (a.isEmpty() || !a.matches("[A-Za-z0-9_./:=,+@%-]+")) {
                b.append('\'').append(a.replace("'", "'\\''")).append('\'');
            } else {
                b.append(a);
            }
        }
        return b.toString();
    }

    private static String describe(Throwable e) {
        StringBuilder b = new StringBuilder(String.valueOf(e.getMessage()));
        for (Throwable c = e.getCause(); c != null && c != c.getCause(); c = c.getCause()) {
            if (c.getMessage() != null && !b.toString().contains(c.getMessage())) {
                b.append("; caused by ").append(c.getClass().getSimpleName()).append(": ").append(c.getMessage());
            }
        }
        return b.toString();
    }

    /** Exits, and halts if the exit does not finish in 15 s (a native call that never returns). */
    private static void exit(int code) {
        Thread halt = new Thread(() -> {
            try {
                Thread.sleep(15_000);
            } catch (InterruptedException e) {
                return;
            }
            Runtime.getRuntime().halt(code);
        }, "ar4j-perf-exit-watchdog");
        halt.setDaemon(true);
        halt.start();
        System.exit(code);
    }

    /** {@code -V}: the version and commit from the jar's manifest. */
    static final class VersionProvider implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            Ar4jVersion v = Ar4jVersion.current();
            return new String[] {"ar4j-perf " + v.version(), "commit " + v.commit(), "from " + v.source(),
                "Java " + Runtime.version() + " (" + System.getProperty("java.home") + ")"};
        }
    }

    /** Converts "1K", "64M", "43008" with {@link ByteSizes#parse}. */
    static final class ByteSizeConverter implements CommandLine.ITypeConverter<Long> {
        @Override
        public Long convert(String value) {
            try {
                return ByteSizes.parse(value);
            } catch (IllegalArgumentException e) {
                throw new CommandLine.TypeConversionException(e.getMessage());
            }
        }
    }

    /** {@code ar4j-perf plot results.csv [out.png]}: draws the chart from a CSV (needs java.desktop). */
    @Command(name = "plot", mixinStandardHelpOptions = true,
            description = "Draws the PNG chart (latency against size, log axes, one series per algorithm) from an "
                    + "ar4j-perf CSV; needs a Java runtime with java.desktop.")
    static final class Plot implements Callable<Integer> {
        @Parameters(index = "0", paramLabel = "CSV", description = "an ar4j-perf CSV")
        private Path csvFile;

        @Parameters(index = "1", arity = "0..1", paramLabel = "PNG", description = "the chart (default: CSV name with .png)")
        private Path pngFile;

        @Option(names = "--title", paramLabel = "TEXT", description = "chart title (default: GPUs, dtype, timing mode "
                + "and NCCL version from the CSV)")
        private String title;

        @Override
        public Integer call() throws Exception {
            if (!Files.isRegularFile(csvFile)) {
                System.err.println("ar4j-perf plot: no such file: " + csvFile + (Files.exists(csvFile) ? " is not a file"
                        : "") + " (give the CSV that ar4j-perf wrote, e.g. ar4j-perf-out/ar4j-perf.csv)");
                return ExitCodes.USAGE;
            }
            String missing = OutputFiles.chartUnavailable();
            if (missing != null) {
                System.err.println("ar4j-perf plot: " + missing + "; run the plot with a full JDK (e.g. on the build "
                        + "machine): java -cp benchmarks.jar " + Ar4jPerf.class.getName() + " plot " + csvFile
                        + (pngFile != null ? " " + pngFile : ""));
                return ExitCodes.USAGE;
            }
            Path target = pngFile != null ? pngFile : Path.of(csvFile.toString().replaceAll("\\.csv$", "") + ".png");
            int series = LatencyChart.draw(ResultFiles.readCsvFile(csvFile), target, title);
            System.err.println("[ar4j-perf] wrote " + target + " (" + series + " series)");
            return ExitCodes.OK;
        }
    }
}
