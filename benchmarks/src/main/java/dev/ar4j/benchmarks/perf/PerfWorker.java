package dev.ar4j.benchmarks.perf;

import dev.ar4j.Communicator;
import dev.ar4j.cuda.Cuda;

import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletionService;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorCompletionService;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * A worker JVM of a run: one rank on one GPU, or (with {@code --threads}, always with
 * {@code --share-gpu}) every rank, one thread each. Rank 0 collects the results and, after every rank has freed its resources, prints the
 * table and writes the files.
 */
final class PerfWorker {
    /** Exit code when every measurement ran but some results were wrong. */
    static final int EXIT_WRONG_RESULTS = ExitCodes.WRONG_RESULTS;
    /** Longest a custom kernel waits for a peer before it gives up. */
    private static final Duration MAX_KERNEL_TIMEOUT = Duration.ofSeconds(30);

    private final PerfSettings settings;
    private final OutputFiles outputs;
    private final String commandLine;
    private final PrintStream out;
    private final PrintStream err;

    PerfWorker(PerfSettings settings, OutputFiles outputs, String commandLine, PrintStream out, PrintStream err) {
        this.settings = Objects.requireNonNull(settings, "settings");
        this.outputs = Objects.requireNonNull(outputs, "outputs");
        this.commandLine = Objects.requireNonNull(commandLine, "commandLine");
        this.out = out;
        this.err = err;
    }

    /** Why this process must not run a worker (NVLink multicast not switched off), or null. */
    static String environmentProblem() {
        StringBuilder wrong = new StringBuilder();
        StringBuilder required = new StringBuilder();
        for (var e : WorkerLauncher.FORCED_ENVIRONMENT.entrySet()) {
            required.append(' ').append(e.getKey()).append('=').append(e.getValue());
            String actual = System.getenv(e.getKey());
            if (!e.getValue().equals(actual)) {
                wrong.append(' ').append(e.getKey()).append('=').append(actual == null ? "(unset)" : actual);
            }
        }
        if (wrong.isEmpty()) {
            return null;
        }
        return "a worker needs" + required + " (NVLink multicast must stay off: it can take a shared host's GPUs down), "
                + "but has" + wrong + "; start ar4j-perf without the --worker-* options, or through gpu/run-perf.sh";
    }

    /** Ends this JVM if the launcher's process goes away (killed, crashed). */
    static void exitWithParent(long parentPid) {
        ProcessHandle.of(parentPid).ifPresentOrElse(
                parent -> parent.onExit().thenRun(() -> Runtime.getRuntime().halt(1)),
                () -> Runtime.getRuntime().halt(1));
    }

    /**
     * One rank in this JVM, joining the others through a TCP rendezvous on 127.0.0.1: one
     * communicator per PDL setting ({@code --pdl}), each on its own port of {@code ports}.
     */
    int runRank(int rank, int worldSize, List<Integer> ports) {
        if (ports.size() != settings.pdl().size()) {
            throw new IllegalArgumentException("--worker-port needs one port per PDL setting (" + settings.pdl().size()
                    + "), got " + ports);
        }
        if (settings.shareGpu()) {
            throw new IllegalArgumentException(WorkerLauncher.SHARE_GPU_NEEDS_THREADS);
        }
        PerfReport report = rank == 0 ? new PerfReport(settings, worldSize, commandLine, "one JVM per GPU", err) : null;
        for (int i = 0; i < ports.size(); i++) {
            PdlSetting pdl = settings.pdl().get(i);
            String previous = pdl.apply();
            try {
                // Closed on success only: after a failure, closing NCCL could wait for peers that are gone;
                // the caller ends the process instead.
                Communicator comm;
                String logged;
                try (RuntimeLogTap tap = RuntimeLogTap.open()) {
                    comm = configure(Communicator.builder(), pdl).rank(rank).worldSize(worldSize)
                            .masterAddress("127.0.0.1", ports.get(i)).build();
                    logged = tap.text();
                }
                if (report != null) {
                    describe(report, comm, pdl, i == 0, logged);
                }
                new RankSweep(comm, settings, report, pdl).run();
                comm.close();
            } finally {
                PdlSetting.restore(previous);
            }
        }
        return report == null ? 0 : finish(report);
    }

    /** Every rank in this JVM, one thread each ({@code --threads}); one group per PDL setting. */
    int runThreads(int worldSize, Duration timeLimit) throws InterruptedException {
        int[] devices = new int[worldSize];
        for (int d = 0; d < worldSize; d++) {
            devices[d] = settings.shareGpu() ? 0 : d;
        }
        PerfReport report = new PerfReport(settings, worldSize, commandLine, settings.shareGpu()
                ? "one JVM, one thread per rank, every rank on GPU 0 (--share-gpu)" : "one JVM, one thread per GPU", err);
        long deadline = System.nanoTime() + timeLimit.toNanos();
        for (int i = 0; i < settings.pdl().size(); i++) {
            PdlSetting pdl = settings.pdl().get(i);
            boolean first = i == 0;
            String previous = pdl.apply();
            try {
                List<Communicator> group;
                String logged;
                try (RuntimeLogTap tap = RuntimeLogTap.open()) {
                    group = Communicator.localGroup(devices, b -> configure(b, pdl));
                    logged = tap.text();
                }
                runGroup(group, report, pdl, first, deadline, timeLimit, logged);
            } finally {
                PdlSetting.restore(previous);
            }
        }
        return finish(report);
    }

    private void runGroup(List<Communicator> group, PerfReport report, PdlSetting pdl, boolean first, long deadline,
                          Duration timeLimit, String logged) throws InterruptedException {
        ExecutorService pool = Executors.newFixedThreadPool(group.size(), r -> {
            Thread t = new Thread(r, "ar4j-perf-rank");
            t.setDaemon(true);
            return t;
        });
        try {
            CompletionService<Integer> done = new ExecutorCompletionService<>(pool);
            List<Future<Integer>> futures = new ArrayList<>();
            for (Communicator comm : group) {
                futures.add(done.submit(() -> {
                    Thread.currentThread().setName("ar4j-perf-rank-" + comm.rank());
                    Cuda.setDevice(comm.device());
                    PerfReport mine = comm.rank() == 0 ? report : null;
                    if (mine != null) {
                        describe(mine, comm, pdl, first, logged);
                    }
                    new RankSweep(comm, settings, mine, pdl).run();
                    comm.close(); // on success only, as in runRank
                    return comm.rank();
                }));
            }
            for (int i = 0; i < futures.size(); i++) {
                Future<Integer> f = done.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                if (f == null) {
                    throw new IllegalStateException("the run passed its time limit of " + timeLimit.toSeconds()
                            + " s (--time-limit)");
                }
                try {
                    f.get();
                } catch (ExecutionException e) {
                    Throwable cause = e.getCause();
                    throw cause instanceof RuntimeException re ? re : new IllegalStateException(cause.toString(), cause);
                }
            }
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * On rank 0: the machine and the streamed CSV for the first communicator, a progress line for
     * each, and what the runtime says of the PDL setting it was built with: in its self-description
     * or in what it logged while it was built ({@code logged}, {@link RuntimeLogTap}).
     */
    private void describe(PerfReport report, Communicator comm, PdlSetting pdl, boolean first, String logged) {
        if (first) {
            report.machine(MachineInfo.collect(comm, commandLine, report.processModel(),
                    settings.shareGpu() ? 1 : comm.worldSize()));
            report.streamTo(outputs.csv());
        }
        report.progress(comm + (pdl == PdlSetting.DEFAULT ? "" : ", built with -D" + PdlSetting.PROPERTY + "="
                + pdl.propertyValue().orElseThrow() + " (pdl " + pdl.label() + ")"));
        if (pdl != PdlSetting.DEFAULT) {
            String description = comm + "\n" + comm.explain(settings.sizes().getFirst(), settings.dtype()) + "\n"
                    + logged;
            report.noteOnce(PdlSetting.reportedIn(description).map(text -> "pdl " + pdl.label() + ": the runtime "
                    + "reports: " + text).orElse(PdlSetting.NOT_REPORTED));
        }
    }

    /** The builder settings of every rank; {@code pdl} on or off is also passed as {@code Builder.pdl(..)}. */
    private Communicator.Builder configure(Communicator.Builder b, PdlSetting pdl) {
        pdl.enabled().ifPresent(b::pdl);
        if (settings.shareGpu()) {
            b.device(0).nccl(false); // NCCL refuses two ranks on one GPU
        }
        Duration kernelTimeout = settings.timeout().dividedBy(2).compareTo(MAX_KERNEL_TIMEOUT) < 0
                ? settings.timeout().dividedBy(2) : MAX_KERNEL_TIMEOUT;
        return b.stagingBytes(settings.stagingBytes()).rendezvousTimeout(settings.timeout()).kernelTimeout(kernelTimeout)
                .maxRegistrations(settings.registrationSlots());
    }

    private int finish(PerfReport report) {
        boolean written = outputs.write(report, out, err);
        if (!written) {
            return ExitCodes.FAILED;
        }
        return report.totalWrong() > 0 ? EXIT_WRONG_RESULTS : ExitCodes.OK;
    }
}
