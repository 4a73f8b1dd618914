package dev.ar4j.benchmarks.perf;

import dev.ar4j.Communicator;
import picocli.CommandLine;

import java.io.File;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.file.Path;
import java.security.CodeSource;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * Starts the worker JVMs of a run and watches them: one JVM per GPU (rank r drives GPU r), or one
 * JVM running every rank from its own thread ({@code --threads}, and always with {@code --share-gpu}:
 * {@link #threads}). Workers run the same java
 * binary with the same class path, native access enabled, and the environment a GPU host needs
 * (NVLink multicast off in NCCL, PyTorch and NVSHMEM; NCCL's bootstrap on loopback). Their
 * output goes straight to this process's stdout and stderr.
 *
 * <p>When a worker fails, the others are stopped at once; when the time limit passes, all are;
 * when this JVM is stopped, its shutdown hook stops them; and every worker ends itself when this
 * process disappears.
 */
final class WorkerLauncher {
    /** Extra JVM options for the workers, split at spaces (e.g. "-Xmx4g"). */
    static final String JAVA_OPTS_ENV = "AR4J_PERF_JAVA_OPTS";
    /** The environment every worker gets, whatever this process has. */
    static final Map<String, String> FORCED_ENVIRONMENT;

    static {
        Map<String, String> env = new LinkedHashMap<>();
        env.put("NCCL_NVLS_ENABLE", "0");
        env.put("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1");
        env.put("NVSHMEM_DISABLE_NVLS", "1");
        FORCED_ENVIRONMENT = Collections.unmodifiableMap(env);
    }

    private static final Duration GRACE = Duration.ofSeconds(5);
    /**
     * Where the ar4j-cuda jar keeps the kernels library; the workers' class path gets that jar
     * when it is a jar of its own (a Maven or IDE class path rather than the shaded jar).
     */
    static final String KERNELS_RESOURCE = "META-INF/native/linux-x86_64/cu13/libar4j_custom_ar.so";

    /**
     * Why {@code --share-gpu} refuses one JVM per rank ({@code --no-threads}): every wait for a peer
     * then costs one of the driver's time slices, at every size (the figures:
     * docs/verification/runs.md).
     */
    static final String SHARE_GPU_NEEDS_THREADS = "--share-gpu runs every rank as a thread of one JVM (one CUDA "
            + "context): ranks in separate processes have separate CUDA contexts, and without MPS the GPU time-slices "
            + "between contexts instead of running their kernels at the same time, so a kernel spinning for its peer "
            + "waits for the peer's time slice (milliseconds per all-reduce, at every size) and the run measures the "
            + "driver's scheduling, not the kernels. Leave out --no-threads "
            + "(threads are the default with --share-gpu), or leave out --share-gpu and give each rank its own GPU";

    private WorkerLauncher() {
    }

    /**
     * The process model: whether the ranks run as threads of one JVM.
     *
     * @param shareGpu every rank on GPU 0 ({@code --share-gpu})
     * @param threads  {@code --threads} (true), {@code --no-threads} (false), or null when neither was given
     * @return {@code threads} when given; otherwise true with {@code --share-gpu} (one CUDA context
     *         for every rank), false without (one JVM per GPU)
     * @throws IllegalArgumentException for {@code --share-gpu --no-threads} ({@link #SHARE_GPU_NEEDS_THREADS})
     */
    static boolean threads(boolean shareGpu, Boolean threads) {
        if (shareGpu && Boolean.FALSE.equals(threads)) {
            throw new IllegalArgumentException(SHARE_GPU_NEEDS_THREADS);
        }
        return threads != null ? threads : shareGpu;
    }

    /**
     * Runs the workers to the end.
     *
     * @param userArgs    the command line as given (passed on to every worker)
     * @param worldSize   ranks
     * @param threads     one JVM with one thread per GPU instead of one JVM per GPU
     * @param rendezvous  rendezvous ports to hand out: one per communicator build (per PDL setting)
     * @param timeLimit   the whole run's limit
     * @return 0 on success, 3 if rank 0 found wrong results, 1 if a worker failed, 124 past the time limit
     */
    static int run(List<String> userArgs, String commandLine, int worldSize, boolean threads, int rendezvous,
                   Duration timeLimit, PrintStream err) throws IOException, InterruptedException {
        return run(userArgs, commandLine, worldSize, threads, rendezvous, timeLimit, err, ProcessBuilder.Redirect.INHERIT);
    }

    /** {@link #run(List, String, int, boolean, int, Duration, PrintStream)} with the workers' output sent to {@code output}. */
    static int run(List<String> userArgs, String commandLine, int worldSize, boolean threads, int rendezvous,
                   Duration timeLimit, PrintStream err, ProcessBuilder.Redirect output)
            throws IOException, InterruptedException {
        String port = freeLoopbackPorts(rendezvous);
        String classPath = classPath();
        List<Process> workers = new ArrayList<>();
        Thread stopOnExit = new Thread(() -> workers.forEach(Process::destroyForcibly), "ar4j-perf-stop-workers");
        Runtime.getRuntime().addShutdownHook(stopOnExit);
        try {
            int processes = threads ? 1 : worldSize;
            for (int rank = 0; rank < processes; rank++) {
                List<String> command = command(classPath, userArgs, commandLine, rank, worldSize, port, threads);
                ProcessBuilder builder = new ProcessBuilder(command).redirectInput(ProcessBuilder.Redirect.INHERIT)
                        .redirectOutput(output).redirectErrorStream(output != ProcessBuilder.Redirect.INHERIT);
                if (output == ProcessBuilder.Redirect.INHERIT) {
                    builder.redirectError(ProcessBuilder.Redirect.INHERIT);
                }
                Map<String, String> env = builder.environment();
                env.putAll(FORCED_ENVIRONMENT);
                env.putIfAbsent("NCCL_SOCKET_IFNAME", "lo");
                workers.add(builder.start());
            }
            err.println("[ar4j-perf] started " + (threads ? "1 worker JVM running " + worldSize + " ranks, one thread "
                    + "each" : worldSize + " worker JVMs, one per GPU") + " (rendezvous on 127.0.0.1:" + port + ")");
            return watch(workers, timeLimit, err);
        } finally {
            stopAll(workers);
            try {
                Runtime.getRuntime().removeShutdownHook(stopOnExit);
            } catch (IllegalStateException shuttingDown) {
                // the JVM is already exiting: the hook runs anyway
            }
        }
    }

    private static int watch(List<Process> workers, Duration timeLimit, PrintStream err) throws InterruptedException {
        long deadline = System.nanoTime() + timeLimit.toNanos();
        while (true) {
            boolean allDone = true;
            int result = 0;
            for (int rank = 0; rank < workers.size(); rank++) {
                Process p = workers.get(rank);
                if (p.isAlive()) {
                    allDone = false;
                    continue;
                }
                int code = p.exitValue();
                if (code != 0 && code != PerfWorker.EXIT_WRONG_RESULTS) {
                    err.println("[ar4j-perf] " + (workers.size() == 1 ? "the worker" : "rank " + rank) + " exited with code "
                            + code + "; stopping the other workers");
                    stopAll(workers);
                    return ExitCodes.FAILED;
                }
                result = Math.max(result, code);
            }
            if (allDone) {
                return result;
            }
            if (System.nanoTime() - deadline > 0) {
                err.println("[ar4j-perf] the run passed its time limit of " + timeLimit.toSeconds()
                        + " s (--time-limit); stopping the workers");
                stopAll(workers);
                return ExitCodes.TIME_LIMIT;
            }
            Thread.sleep(100);
        }
    }

    /** Asks every live worker to stop (SIGTERM), then kills those still alive after a grace period. */
    private static void stopAll(List<Process> workers) throws InterruptedException {
        for (Process p : workers) {
            if (p.isAlive()) {
                p.destroy();
            }
        }
        long deadline = System.nanoTime() + GRACE.toNanos();
        for (Process p : workers) {
            long left = deadline - System.nanoTime();
            if (p.isAlive() && !p.waitFor(Math.max(0, left), TimeUnit.NANOSECONDS)) {
                p.destroyForcibly().waitFor(GRACE.toSeconds(), TimeUnit.SECONDS);
            }
        }
    }

    private static List<String> command(String classPath, List<String> userArgs, String commandLine, int rank,
                                        int worldSize, String port, boolean threads) {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add(nativeAccessFlag());
        command.add("-Djava.awt.headless=true");
        for (Map.Entry<Object, Object> property : System.getProperties().entrySet()) {
            String key = property.getKey().toString();
            if (key.startsWith("ar4j.") || key.startsWith("java.util.logging.")) {
                command.add("-D" + key + "=" + property.getValue());
            }
        }
        String extra = System.getenv(JAVA_OPTS_ENV);
        if (extra != null && !extra.isBlank()) {
            command.addAll(List.of(extra.trim().split("\\s+")));
        }
        command.add("-cp");
        command.add(classPath);
        command.add(Ar4jPerf.class.getName());
        command.addAll(userArgs);
        command.addAll(List.of("--worker-rank", Integer.toString(rank), "--worker-world-size", Integer.toString(worldSize),
                "--worker-port", port, "--worker-parent-pid", Long.toString(ProcessHandle.current().pid()),
                "--worker-command-line", commandLine));
        if (threads) {
            command.add("--worker-threads");
        }
        return command;
    }

    /**
     * A class of the bindings jar, to find that jar and its module: looked up by name, as the
     * benchmarks use the runtime's API only (the bindings are exported to the runtime alone).
     */
    private static Class<?> bindingsClass() {
        try {
            return Class.forName("dev.ar4j.bindings.cudart.cuda_runtime_api_h", false,
                    WorkerLauncher.class.getClassLoader());
        } catch (ClassNotFoundException e) {
            throw new IllegalStateException("the ar4j bindings jar is not on the class path: " + e.getMessage(), e);
        }
    }

    /**
     * The {@code --enable-native-access} option the workers need: the runtime's and the bindings'
     * module names when they are named modules, {@code ALL-UNNAMED} on the class path.
     */
    static String nativeAccessFlag() {
        Set<String> names = new LinkedHashSet<>();
        for (Class<?> type : List.of(Communicator.class, bindingsClass())) {
            Module module = type.getModule();
            names.add(module.isNamed() ? module.getName() : "ALL-UNNAMED");
        }
        return "--enable-native-access=" + String.join(",", names);
    }

    /**
     * {@code count} distinct loopback ports that were free a moment ago, comma-separated: one
     * rendezvous per communicator build (one per PDL setting), so that no rank reaches a server that
     * is closing.
     */
    static String freeLoopbackPorts(int count) throws IOException {
        if (count < 1) {
            throw new IllegalArgumentException("need at least one rendezvous port, asked for " + count);
        }
        Set<Integer> ports = new LinkedHashSet<>();
        List<ServerSocket> held = new ArrayList<>();
        try {
            while (ports.size() < count) {
                ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
                held.add(socket);
                ports.add(socket.getLocalPort());
            }
        } finally {
            for (ServerSocket socket : held) {
                socket.close();
            }
        }
        return ports.stream().map(String::valueOf).collect(java.util.stream.Collectors.joining(","));
    }

    /** A loopback port that was free a moment ago, for rank 0's rendezvous server. */
    static int freeLoopbackPort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }

    /**
     * This JVM's class path (under {@code java -cp benchmarks.jar}, the jar), plus the places the
     * classes a worker needs were loaded from, in case a launcher loaded them through its own
     * class loader.
     */
    static String classPath() {
        Set<String> entries = new LinkedHashSet<>();
        for (String entry : System.getProperty("java.class.path", "").split(File.pathSeparator)) {
            if (!entry.isBlank()) {
                entries.add(entry);
            }
        }
        for (Class<?> type : List.of(Ar4jPerf.class, Communicator.class, bindingsClass(), CommandLine.class)) {
            CodeSource source = type.getProtectionDomain().getCodeSource();
            if (source != null && source.getLocation() != null) {
                addLocation(entries, source.getLocation());
            }
        }
        URL kernels = WorkerLauncher.class.getClassLoader().getResource(KERNELS_RESOURCE);
        if (kernels != null && kernels.getProtocol().equals("jar")) {
            String spec = kernels.getPath(); // file:/path/ar4j-cuda.jar!/META-INF/...
            int bang = spec.indexOf("!/");
            if (bang > 0) {
                try {
                    addLocation(entries, new java.net.URI(spec.substring(0, bang)).toURL());
                } catch (URISyntaxException | java.net.MalformedURLException e) {
                    throw new IllegalStateException("cannot make a class path entry of " + spec, e);
                }
            }
        }
        return String.join(File.pathSeparator, entries);
    }

    private static void addLocation(Set<String> entries, URL location) {
        if (!location.getProtocol().equals("file")) {
            return;
        }
        try {
            entries.add(Path.of(location.toURI()).toString());
        } catch (URISyntaxException e) {
            throw new IllegalStateException("cannot make a class path entry of " + location, e);
        }
    }
}
