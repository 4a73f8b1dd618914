package dev.ar4j;

import dev.ar4j.cuda.Cuda;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.dispatch.Algorithm;
import dev.ar4j.dispatch.AlgorithmPolicy;
import dev.ar4j.dispatch.AlgorithmThresholds;
import dev.ar4j.dispatch.AllReduceDispatcher;
import dev.ar4j.dispatch.Decision;
import dev.ar4j.dispatch.DispatchConfig;
import dev.ar4j.dispatch.Topology;
import dev.ar4j.kernels.KernelTimeout;
import dev.ar4j.nccl.NcclCommunicator;
import dev.ar4j.rendezvous.InProcessRendezvous;
import dev.ar4j.rendezvous.LaunchEnvironment;
import dev.ar4j.rendezvous.Rendezvous;

import java.lang.System.Logger.Level;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.function.Consumer;

/**
 * An all-reduce group: one rank of it, bound to one GPU. It sums buffers across the ranks with
 * ar4j's custom kernels where they apply and with NCCL everywhere else, choosing per call with an
 * {@link AllReduceDispatcher} whose every decision has a reason ({@link #explain}).
 *
 * <pre>{@code
 * try (Communicator comm = Communicator.fromEnvironment();      // torchrun, Slurm or Open MPI
 *      DeviceBuffer x = DeviceBuffer.allocate(43008);
 *      CudaStream stream = CudaStream.create()) {
 *     // ... fill x ...
 *     comm.allReduce(x, DType.BFLOAT16, stream);               // in place, sum over all ranks
 *     stream.synchronize();
 * }
 * }</pre>
 *
 * <h2>Process models</h2>
 * One JVM per GPU (the usual launcher model; buffers are shared through CUDA IPC handles), or one
 * JVM driving several GPUs with one thread per GPU ({@link #localGroup}; buffers are shared
 * through peer access). The model is detected: ranks that report the same process use peer
 * access.
 *
 * <h2>Buffers</h2>
 * At build, every rank allocates its signal block and a staging buffer and shares them. An
 * unregistered input goes to the one-shot push kernel directly (no copy), or is copied into the
 * staging buffer for the one-stage and two-stage kernels. {@link #register} shares a buffer once
 * so that inputs inside it are reduced with no copy. Inside a CUDA graph capture, inputs are
 * recorded and shared when the {@link GraphCapture} scope closes.
 *
 * <h2>Threads and ordering</h2>
 * A communicator is used by one thread at a time, whose current CUDA device must be
 * {@link #device()} (the builder makes it current on the building thread). Every rank makes the
 * same collective calls (all-reduces, {@link #register}, capture scopes) in the same order; the
 * all-reduces of one communicator are ordered on one stream or synchronised between streams.
 *
 * <h2>Failure</h2>
 * A custom kernel that waits longer than the kernel timeout for a peer gives up and records which
 * peer it waited for; the next call throws {@link PeerTimeoutException} naming it, and the
 * communicator stays failed. Rendezvous waits are bounded too.
 */
public final class Communicator implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger(Communicator.class.getName());

    /** The default staging buffer (and two-stage scratch) size: 8 MiB. */
    public static final long DEFAULT_STAGING_BYTES = 8L << 20;
    /** How long a custom kernel waits for a peer before it gives up, by default. */
    public static final Duration DEFAULT_KERNEL_TIMEOUT = Duration.ofSeconds(30);
    /** How long a rendezvous step waits for the other ranks, by default. */
    public static final Duration DEFAULT_RENDEZVOUS_TIMEOUT = Duration.ofMinutes(2);
    /** Registered buffers plus captured graph inputs one communicator can hold, by default. */
    public static final int DEFAULT_MAX_REGISTRATIONS = 4096;

    private final Group group;
    private final Dispatchers dispatchers;
    private final NcclPath nccl;
    private final CustomKernelPath kernels;  // null when the topology rules the kernels out
    private final CaptureRecorder capture;
    private final MemorySegment captureScratch = Arena.ofAuto().allocate(ValueLayout.JAVA_INT);
    private String failure;
    private boolean closed;

    private Communicator(Builder b, Rendezvous rendezvous, boolean ownsRendezvous) {
        int device = b.device >= 0 ? b.device : b.localRank >= 0 ? b.localRank : 0;
        Group g = null;
        NcclPath ncclPath = null;
        CustomKernelPath custom = null;
        Dispatchers d;
        try {
            g = Group.join(rendezvous, ownsRendezvous, b.rendezvousTimeout, device, b.p2pOverride, b.nvlinkOverride);
            d = new Dispatchers(g.topology, b.dispatchConfig(), b.stagingBytes, thresholdsFor(g.worldSize, b));
            ncclPath = NcclPath.open(g);
            if (g.customKernelsPossible()) {
                custom = CustomKernelPath.open(g, b.stagingBytes, b.maxRegistrations, b.kernelTimeout.toNanos(),
                        b.launchBlocks, b.launchThreads);
            }
            // Every context exists (and its push buffers are filled) before any rank launches.
            g.rendezvous.barrier(g.key("ready"), g.timeout);
        } catch (RuntimeException e) {
            Closing.quietly(e, custom);
            if (g != null) {
                g.closeSharedBuffers(e);
            }
            Closing.quietly(e, ncclPath);
            if (g != null) {
                g.closeRendezvous(e);
            } else if (ownsRendezvous) {
                Closing.quietly(e, rendezvous);
            }
            throw e;
        }
        this.group = g;
        this.dispatchers = d;
        this.nccl = ncclPath;
        this.kernels = custom;
        this.capture = new CaptureRecorder(g);
        if (LOG.isLoggable(Level.INFO)) {
            LOG.log(Level.INFO, "ar4j rank " + g.rank + "/" + g.worldSize + " on GPU " + device + ": "
                    + g.topology.describe()
                    + (kernels == null ? "; custom kernels not set up (NCCL only)" : "; custom kernels ready")
                    + "; " + d.config.describe());
        }
    }

    // ---- building -------------------------------------------------------------------------------

    /** A builder; nothing is read from the environment unless {@link Builder#fromEnvironment()} says so. */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Joins the group described by the launcher's environment (torchrun, Slurm or Open MPI
     * variables; see {@link LaunchEnvironment}) on GPU {@code LOCAL_RANK}.
     */
    public static Communicator fromEnvironment() {
        return builder().fromEnvironment().build();
    }

    /**
     * Builds one communicator per device in this process (one JVM driving several GPUs): rank i
     * drives {@code devices[i]}. Each is built on its own thread, as the build is collective; use
     * each from a thread whose current device is its device ({@code Cuda.setDevice}).
     *
     * @param devices   the CUDA ordinals, one per rank
     * @param configure applied to every rank's builder (staging size, policy, ...), may be null
     */
    public static List<Communicator> localGroup(int[] devices, Consumer<Builder> configure) {
        return LocalGroup.build(devices, configure);
    }

    // ---- all-reduce -----------------------------------------------------------------------------

    /** In-place all-reduce (sum) of the whole buffer. */
    public void allReduce(DeviceBuffer buffer, DType dtype, CudaStream stream) {
        allReduce(buffer, buffer, dtype, stream);
    }

    /**
     * All-reduce (sum) of {@code in} into {@code out}; {@code out} may be {@code in}. The element
     * count is {@code in.byteSize() / dtype.byteSize()}.
     *
     * @throws IllegalArgumentException if the buffers differ in size, are on another device, or
     *                                  hold no whole number of elements
     */
    public void allReduce(DeviceBuffer in, DeviceBuffer out, DType dtype, CudaStream stream) {
        Objects.requireNonNull(in, "in");
        Objects.requireNonNull(out, "out");
        Objects.requireNonNull(dtype, "dtype");
        Objects.requireNonNull(stream, "stream");
        if (in.byteSize() != out.byteSize()) {
            throw new IllegalArgumentException("input (" + in.byteSize() + " bytes) and output (" + out.byteSize()
                    + " bytes) differ in size");
        }
        if (in.device() != group.device || out.device() != group.device) {
            throw new IllegalArgumentException("buffers are on GPU " + in.device() + "/" + out.device()
                    + " but this communicator drives GPU " + group.device);
        }
        if (in.byteSize() % dtype.byteSize() != 0) {
            throw new IllegalArgumentException(in.byteSize() + " bytes is not a whole number of " + dtype + " elements");
        }
        allReduce(in.address(), out.address(), in.byteSize() / dtype.byteSize(), dtype, stream.handle());
    }

    /**
     * All-reduce (sum) on raw device addresses of this communicator's GPU, e.g. from another
     * library's tensors. {@code out} may equal {@code in}; otherwise the ranges must not overlap.
     *
     * @param count  elements (positive)
     * @param stream a {@code cudaStream_t} (0 = legacy default stream)
     */
    public void allReduce(long in, long out, long count, DType dtype, long stream) {
        run(dispatchers.configured, in, out, count, dtype, stream);
    }

    /**
     * All-reduce with a policy for this call only, instead of the configured one (benchmarks and
     * tests sweep algorithms with it). The PCIe gate setting stays as configured.
     *
     * @return the decision that was carried out, with its reason
     */
    public Decision allReduce(long in, long out, long count, DType dtype, long stream, AlgorithmPolicy policy) {
        return run(dispatchers.forPolicy(Objects.requireNonNull(policy, "policy")), in, out, count, dtype, stream);
    }

    private Decision run(AllReduceDispatcher dispatcher, long in, long out, long count, DType dtype, long stream) {
        checkUsable();
        Objects.requireNonNull(dtype, "dtype");
        if (count <= 0) {
            throw new IllegalArgumentException("element count must be positive, got " + count);
        }
        long bytes = count * dtype.byteSize();
        boolean aligned = ((in | out) & 15) == 0;
        boolean zeroCopy = kernels != null && kernels.isRegistered(in, bytes);
        Decision decision = dispatcher.decide(bytes, dtype, aligned, zeroCopy);
        // An unregistered input inside a graph capture is zero-copy too (recorded, shared when the
        // capture scope closes); ask the stream only when it can change the decision or the path.
        if (!zeroCopy && kernels != null && decision.algorithm() != Algorithm.PUSH && aligned && bytes % 16 == 0
                && CudaStream.isCapturing(stream, captureScratch)) {
            zeroCopy = true;
            decision = dispatcher.decide(bytes, dtype, aligned, true);
        }
        Algorithm algorithm = decision.algorithm();
        try {
            switch (algorithm) {
                case NCCL -> nccl.allReduce(in, out, count, dtype, stream);
                case PUSH -> kernels.launch(algorithm, dtype, in, out, count, stream);
                case ONE_STAGE, TWO_STAGE -> {
                    if (zeroCopy) {
                        if (!kernels.isRegistered(in, bytes)) {
                            capture.record(in, bytes);
                        }
                        kernels.launch(algorithm, dtype, in, out, count, stream);
                    } else {
                        kernels.launchStaged(algorithm, dtype, in, out, count, stream);
                    }
                }
            }
        } catch (PeerTimeoutException e) {
            failure = e.getMessage();
            throw e;
        }
        return decision;
    }

    // ---- registration and graphs ----------------------------------------------------------------

    /**
     * Shares {@code buffer} with the other ranks once, so that all-reduces of inputs inside it need
     * no staging copy. Collective: every rank registers a buffer of the same size, in the same
     * order. Registering does not transfer ownership.
     */
    public void register(DeviceBuffer buffer) {
        checkUsable();
        Objects.requireNonNull(buffer, "buffer");
        if (buffer.device() != group.device) {
            throw new IllegalArgumentException("buffer is on GPU " + buffer.device() + " but this communicator drives GPU "
                    + group.device);
        }
        if (kernels == null) {
            // Still collective, so that every rank's sequence of rendezvous steps stays aligned.
            group.rendezvous.barrier(group.key("register"), group.timeout);
            return;
        }
        kernels.register(buffer);
    }

    /**
     * Opens a capture scope: all-reduces issued on a capturing stream until the scope is closed
     * are recorded; {@link GraphCapture#close()} (after {@code cudaStreamEndCapture}, before the
     * first replay) shares their inputs so that replays are zero-copy. Collective on close.
     */
    public GraphCapture graphCapture() {
        checkUsable();
        return capture.open(this);
    }

    /** Called by {@link GraphCapture#close()}. */
    void finishCapture(GraphCapture scope) {
        checkUsable();
        IllegalStateException mismatch = capture.finish(scope, kernels);
        if (mismatch != null) {
            failure = mismatch.getMessage();
            throw mismatch;
        }
    }

    // ---- observation ----------------------------------------------------------------------------

    /**
     * What an all-reduce of {@code bytes} bytes of {@code dtype} would run, for registered,
     * unregistered and misaligned inputs, each with its reason, and the configuration with the
     * source of each value.
     */
    public String explain(long bytes, DType dtype) {
        return Observation.explain(dispatchers.configured, kernels != null, bytes, dtype);
    }

    /** The decision for one call's shape. */
    public Decision decide(long bytes, DType dtype, boolean aligned16, boolean registeredInput) {
        return dispatchers.configured.decide(bytes, dtype, aligned16, registeredInput);
    }

    /** This rank. */
    public int rank() {
        return group.rank;
    }

    /** Ranks in the group. */
    public int worldSize() {
        return group.worldSize;
    }

    /** The CUDA ordinal this rank drives. */
    public int device() {
        return group.device;
    }

    /** The detected (or overridden) topology. */
    public Topology topology() {
        return group.topology;
    }

    /** Whether the custom kernels were set up (otherwise every call goes to NCCL). */
    public boolean hasCustomKernels() {
        return kernels != null;
    }

    /** The staging buffer size in bytes. */
    public long stagingBytes() {
        return dispatchers.configured.stagingBytes();
    }

    /**
     * The NCCL communicator of this group, for benchmarks and interoperability (for example
     * {@code ar4j-perf}'s NCCL baseline, or registering an NCCL window). The communicator keeps
     * ownership: do not close or abort it; it is destroyed when this communicator is closed.
     */
    public NcclCommunicator nccl() {
        checkUsable();
        return nccl.communicator();
    }

    /** The rendezvous this communicator uses (for tests and tools that need the same group). */
    public Rendezvous rendezvous() {
        return group.rendezvous;
    }

    /**
     * Throws {@link PeerTimeoutException} if a custom kernel of this rank gave up waiting for a
     * peer; returns otherwise. Call after synchronising the stream to learn of a lost peer early.
     */
    public void checkPeers() {
        if (kernels == null) {
            return;
        }
        KernelTimeout t = kernels.readTimeout();
        if (t.timedOut()) {
            PeerTimeoutException e = kernels.peerTimeout(t, null);
            failure = e.getMessage();
            throw e;
        }
    }

    /**
     * Frees everything this rank allocated and opened, exactly once. Not collective, so call it
     * once every rank's last all-reduce of this group has completed (peers may still read this
     * rank's buffers until then), for example after a barrier on {@link #rendezvous()}.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        RuntimeException failure = new RuntimeException("closing the communicator failed");
        Closing.quietly(failure, kernels);
        group.closeSharedBuffers(failure);
        Closing.quietly(failure, nccl);
        group.closeRendezvous(failure);
        if (failure.getSuppressed().length > 0) {
            throw failure;
        }
    }

    @Override
    public String toString() {
        return "Communicator[rank " + group.rank + "/" + group.worldSize + ", GPU " + group.device + ", "
                + group.topology.describe() + "]";
    }

    // ---- internals ------------------------------------------------------------------------------

    private void checkUsable() {
        if (closed) {
            throw new IllegalStateException("the communicator is closed");
        }
        if (failure != null) {
            throw new IllegalStateException(failure);
        }
    }

    /** The automatic policy's switch points: {@link AlgorithmThresholds#forWorldSize}, unless the builder set the push threshold. */
    private static AlgorithmThresholds thresholdsFor(int worldSize, Builder b) {
        AlgorithmThresholds base = AlgorithmThresholds.forWorldSize(worldSize);
        return b.pushUpToBytes >= 0 ? base.withPushUpToBytes(b.pushUpToBytes) : base;
    }

    /** Configures and builds a {@link Communicator}. */
    public static final class Builder {
        int rank = -1;
        int worldSize = -1;
        int localRank = -1;
        int localWorldSize = -1;
        int device = -1;
        String masterAddr;
        int masterPort = -1;
        Rendezvous rendezvous;
        boolean fromEnvironment;
        Map<String, String> environment;
        Properties systemProperties;
        long stagingBytes = DEFAULT_STAGING_BYTES;
        Duration kernelTimeout = DEFAULT_KERNEL_TIMEOUT;
        Duration rendezvousTimeout = DEFAULT_RENDEZVOUS_TIMEOUT;
        int maxRegistrations = DEFAULT_MAX_REGISTRATIONS;
        String algorithmPolicy;
        Boolean forceCustomOnPcie;
        Boolean nvlinkOverride;
        Boolean p2pOverride;
        long pushUpToBytes = -1;
        int launchBlocks = -1;
        int launchThreads = -1;

        private Builder() {
        }

        /** Reads rank, world size, local rank and the rendezvous address from the launcher's environment. */
        public Builder fromEnvironment() {
            this.fromEnvironment = true;
            return this;
        }

        /** Uses this map instead of {@code System.getenv()} for the launcher and configuration variables (tests). */
        public Builder environment(Map<String, String> environment) {
            this.environment = Map.copyOf(environment);
            return this;
        }

        /** Uses these instead of {@code System.getProperties()} for configuration (tests). */
        public Builder systemProperties(Properties properties) {
            this.systemProperties = properties;
            return this;
        }

        /** This process's rank (with {@link #worldSize} and {@link #masterAddress}, instead of the environment). */
        public Builder rank(int rank) {
            this.rank = rank;
            return this;
        }

        /** The number of ranks. */
        public Builder worldSize(int worldSize) {
            this.worldSize = worldSize;
            return this;
        }

        /** This rank's index on its host; the default GPU. */
        public Builder localRank(int localRank) {
            this.localRank = localRank;
            return this;
        }

        /**
         * The number of ranks on this host. Without it (and without launcher variables) a group
         * whose rendezvous address is loopback is taken to be all on this host.
         */
        public Builder localWorldSize(int localWorldSize) {
            this.localWorldSize = localWorldSize;
            return this;
        }

        /** The CUDA ordinal to drive (default: the local rank). */
        public Builder device(int device) {
            if (device < 0) {
                throw new IllegalArgumentException("device ordinal must be >= 0, got " + device);
            }
            this.device = device;
            return this;
        }

        /** Where rank 0 serves the TCP rendezvous (rank 0 binds it; loopback unless an address is given). */
        public Builder masterAddress(String host, int port) {
            this.masterAddr = Objects.requireNonNull(host, "host");
            this.masterPort = port;
            return this;
        }

        /** Uses an existing rendezvous (for example a rank of an {@link InProcessRendezvous}); not closed by the communicator. */
        public Builder rendezvous(Rendezvous rendezvous) {
            this.rendezvous = Objects.requireNonNull(rendezvous, "rendezvous");
            return this;
        }

        /** Size of the staging buffer and the two-stage scratch (default 8 MiB, multiple of 16). */
        public Builder stagingBytes(long bytes) {
            if (bytes < 16 || bytes % 16 != 0) {
                throw new IllegalArgumentException("staging size must be a positive multiple of 16 bytes, got " + bytes);
            }
            this.stagingBytes = bytes;
            return this;
        }

        /** How long a custom kernel waits for a peer before it gives up (default 30 s). */
        public Builder kernelTimeout(Duration timeout) {
            if (timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("kernel timeout must be positive, got " + timeout);
            }
            this.kernelTimeout = timeout;
            return this;
        }

        /** How long each rendezvous step waits for the other ranks (default 2 min). */
        public Builder rendezvousTimeout(Duration timeout) {
            if (timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("rendezvous timeout must be positive, got " + timeout);
            }
            this.rendezvousTimeout = timeout;
            return this;
        }

        /** Capacity for registered buffers plus captured graph inputs (default 4096). */
        public Builder maxRegistrations(int n) {
            if (n < 1) {
                throw new IllegalArgumentException("maxRegistrations must be >= 1, got " + n);
            }
            this.maxRegistrations = n;
            return this;
        }

        /** Algorithm policy: {@code auto | 1stage | oneshot | 2stage | twoshot | push | nccl}. Highest precedence. */
        public Builder algorithmPolicy(String policy) {
            this.algorithmPolicy = Objects.requireNonNull(policy, "policy");
            return this;
        }

        /** Lifts (true) or keeps (false) the PCIe gate for more than two GPUs without full NVLink. */
        public Builder forceCustomOnPcie(boolean force) {
            this.forceCustomOnPcie = force;
            return this;
        }

        /** Overrides the detected "NVLink between every pair" (tests, or hardware the probe misjudges). */
        public Builder fullNvlink(boolean nvlink) {
            this.nvlinkOverride = nvlink;
            return this;
        }

        /** Overrides the detected "P2P between every pair". */
        public Builder p2pAllPairs(boolean p2p) {
            this.p2pOverride = p2p;
            return this;
        }

        /**
         * Up to which size the automatic policy uses the one-shot push kernel (0: never; at most
         * 512 KiB). Default: 512 KiB for two ranks, 256 KiB for more.
         */
        public Builder pushUpToBytes(long bytes) {
            if (bytes < 0 || bytes > Algorithm.PUSH_MAX_BYTES) {
                throw new IllegalArgumentException("pushUpToBytes must be between 0 and " + Algorithm.PUSH_MAX_BYTES
                        + " (the push kernel's limit), got " + bytes);
            }
            this.pushUpToBytes = bytes;
            return this;
        }

        /** Overrides the 1-stage/2-stage launch geometry (defaults: one block per SM, at most 128, of 512 threads). */
        public Builder launchConfig(int maxBlocks, int threads) {
            this.launchBlocks = maxBlocks;
            this.launchThreads = threads;
            return this;
        }

        DispatchConfig dispatchConfig() {
            DispatchConfig.Builder c = DispatchConfig.builder();
            if (environment != null) {
                c.environment(environment);
            }
            if (systemProperties != null) {
                c.systemProperties(systemProperties);
            }
            if (algorithmPolicy != null) {
                c.algorithmPolicy(algorithmPolicy);
            }
            if (forceCustomOnPcie != null) {
                c.forceCustomOnPcie(forceCustomOnPcie);
            }
            return c.build();
        }

        /**
         * Joins the group: collective, blocking until every rank has joined (bounded by the
         * rendezvous timeout). On the calling thread, the communicator's GPU becomes current.
         *
         * @throws IllegalArgumentException if rank, world size or the rendezvous address are missing or invalid
         */
        public Communicator build() {
            // Fail on bad configuration before touching the GPU or the network.
            BuilderChecks.validate(this);
            if (rendezvous != null) {
                return new Communicator(this, rendezvous, false);
            }
            return new Communicator(this, GroupRendezvous.connect(this), true);
        }
    }
}
