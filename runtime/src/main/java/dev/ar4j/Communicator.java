package dev.ar4j;

import dev.ar4j.cuda.Cuda;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.cuda.P2PAttribute;
import dev.ar4j.dispatch.Algorithm;
import dev.ar4j.dispatch.AlgorithmPolicy;
import dev.ar4j.dispatch.AlgorithmThresholds;
import dev.ar4j.dispatch.AllReduceDispatcher;
import dev.ar4j.dispatch.Decision;
import dev.ar4j.dispatch.DispatchConfig;
import dev.ar4j.dispatch.Topology;
import dev.ar4j.group.PeerInfo;
import dev.ar4j.group.PeerMemory;
import dev.ar4j.group.RegisteredRanges;
import dev.ar4j.kernels.CustomAllReduceKernels;
import dev.ar4j.kernels.CustomArContext;
import dev.ar4j.kernels.CustomArException;
import dev.ar4j.kernels.KernelTimeout;
import dev.ar4j.nccl.NcclCommunicator;
import dev.ar4j.nccl.NcclUniqueId;
import dev.ar4j.rendezvous.HostIdentity;
import dev.ar4j.rendezvous.InProcessRendezvous;
import dev.ar4j.rendezvous.LaunchEnvironment;
import dev.ar4j.rendezvous.Rendezvous;
import dev.ar4j.rendezvous.TcpRendezvous;

import java.lang.System.Logger.Level;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
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

    private final int rank;
    private final int worldSize;
    private final int device;
    private final Topology topology;
    private final AllReduceDispatcher dispatcher;
    private final Map<AlgorithmPolicy, AllReduceDispatcher> perPolicy;
    private final Rendezvous rendezvous;
    private final boolean ownsRendezvous;
    private final Duration rendezvousTimeout;
    private final NcclCommunicator nccl;
    // Custom-kernel state; all null when the topology rules the kernels out.
    private final PeerMemory peerMemory;
    private final DeviceBuffer signal;
    private final DeviceBuffer staging;
    private final CustomArContext kernels;
    private final RegisteredRanges registered = new RegisteredRanges();
    private final List<long[]> capturedInputs = new ArrayList<>();  // {pointer, bytes} per captured call
    private final MemorySegment captureScratch = Arena.ofAuto().allocate(ValueLayout.JAVA_INT);
    private GraphCapture openCapture;
    private int collectiveSequence;
    private String failure;
    private boolean closed;

    private Communicator(Builder b, Rendezvous rendezvous, boolean ownsRendezvous) {
        this.rendezvous = rendezvous;
        this.ownsRendezvous = ownsRendezvous;
        this.rendezvousTimeout = b.rendezvousTimeout;
        this.rank = rendezvous.rank();
        this.worldSize = rendezvous.worldSize();
        this.device = b.device >= 0 ? b.device : b.localRank >= 0 ? b.localRank : 0;
        Cuda.setDevice(device);

        List<PeerInfo> peers = exchangePeerInfo();
        boolean singleHost = peers.stream().map(PeerInfo::hostId).distinct().count() == 1;
        boolean sameProcess = singleHost && peers.stream().map(PeerInfo::pid).distinct().count() == 1;
        boolean[] links = singleHost ? probeLinks(peers, sameProcess) : new boolean[] {false, false};
        boolean p2p = b.p2pOverride != null ? b.p2pOverride : links[0];
        boolean nvlink = b.nvlinkOverride != null ? b.nvlinkOverride : links[1];
        this.topology = new Topology(worldSize, nvlink, p2p, singleHost);
        DispatchConfig config = b.dispatchConfig();
        AlgorithmThresholds thresholds = thresholdsFor(worldSize, b);
        this.dispatcher = new AllReduceDispatcher(topology, config, b.stagingBytes, thresholds);
        this.perPolicy = new EnumMap<>(AlgorithmPolicy.class);
        for (AlgorithmPolicy p : AlgorithmPolicy.values()) {
            DispatchConfig forced = DispatchConfig.builder().environment(Map.of()).systemProperties(new Properties())
                    .algorithmPolicy(p).forceCustomOnPcie(config.forceCustomOnPcie()).build();
            perPolicy.put(p, new AllReduceDispatcher(topology, forced, b.stagingBytes, thresholds));
        }

        NcclCommunicator ncclComm = null;
        PeerMemory peerMem = null;
        DeviceBuffer sig = null;
        DeviceBuffer stage = null;
        CustomArContext ctx = null;
        try {
            byte[] id = rendezvous.broadcast(key("nccl-id"), 0, rank == 0 ? NcclUniqueId.generate().toBytes() : null,
                    rendezvousTimeout);
            // ncclCommInitRank blocks until every rank joins, with no deadline of ours: meet in a
            // bounded barrier first, so that a rank that is already gone is named here instead.
            rendezvous.barrier(key("nccl-init"), rendezvousTimeout);
            ncclComm = NcclCommunicator.initRank(NcclUniqueId.fromBytes(id), worldSize, rank);

            if (customKernelsPossible()) {
                if (sameProcess) {
                    for (PeerInfo peer : peers) {
                        if (peer.device() != device) {
                            Cuda.enablePeerAccess(peer.device());
                        }
                    }
                }
                peerMem = PeerMemory.create(sameProcess, rendezvous, rendezvousTimeout);
                long signalBytes = CustomAllReduceKernels.signalSize(b.stagingBytes);
                sig = DeviceBuffer.allocate(signalBytes);
                sig.fill(0);
                stage = DeviceBuffer.allocate(b.stagingBytes);
                Cuda.deviceSynchronize();
                long[][] shared = peerMem.exchange(new long[] {sig.address(), stage.address()},
                        new long[] {signalBytes, b.stagingBytes});
                ctx = CustomAllReduceKernels.createContext(shared[0], rank, worldSize, b.stagingBytes,
                        b.maxRegistrations, b.kernelTimeout.toNanos());
                if (b.launchBlocks > 0) {
                    ctx.setLaunchConfig(b.launchBlocks, b.launchThreads);
                }
                ctx.registerBuffer(shared[1], b.stagingBytes);
                registered.add(stage.address(), b.stagingBytes);
            }
            // Every context exists (and its push buffers are filled) before any rank launches.
            rendezvous.barrier(key("ready"), rendezvousTimeout);
        } catch (RuntimeException e) {
            closeQuietly(e, ctx, stage, sig, peerMem, ncclComm);
            if (ownsRendezvous) {
                closeQuietly(e, rendezvous);
            }
            throw e;
        }
        this.nccl = ncclComm;
        this.peerMemory = peerMem;
        this.signal = sig;
        this.staging = stage;
        this.kernels = ctx;
        if (LOG.isLoggable(Level.INFO)) {
            LOG.log(Level.INFO, "ar4j rank " + rank + "/" + worldSize + " on GPU " + device + ": " + topology.describe()
                    + (kernels == null ? "; custom kernels not set up (NCCL only)" : "; custom kernels ready")
                    + "; " + config.describe());
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
        Objects.requireNonNull(devices, "devices");
        InProcessRendezvous group = InProcessRendezvous.create(devices.length);
        ExecutorService pool = Executors.newFixedThreadPool(devices.length, r -> {
            Thread t = new Thread(r, "ar4j-local-group-init");
            t.setDaemon(true);
            return t;
        });
        try {
            List<Future<Communicator>> futures = new ArrayList<>();
            for (int r = 0; r < devices.length; r++) {
                int rank = r;
                futures.add(pool.submit(() -> {
                    Builder b = builder();
                    if (configure != null) {
                        configure.accept(b);
                    }
                    return b.device(devices[rank]).rendezvous(group.forRank(rank)).build();
                }));
            }
            List<Communicator> result = new ArrayList<>();
            RuntimeException failure = null;
            for (Future<Communicator> f : futures) {
                try {
                    result.add(f.get());
                } catch (Exception e) {
                    Throwable cause = e instanceof java.util.concurrent.ExecutionException ? e.getCause() : e;
                    if (failure == null) {
                        failure = new IllegalStateException("building the local group failed: " + cause, cause);
                    } else {
                        failure.addSuppressed(cause);
                    }
                }
            }
            if (failure != null) {
                for (Communicator c : result) {
                    closeQuietly(failure, c);
                }
                throw failure;
            }
            return result;
        } finally {
            pool.shutdownNow();
        }
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
        if (in.device() != device || out.device() != device) {
            throw new IllegalArgumentException("buffers are on GPU " + in.device() + "/" + out.device()
                    + " but this communicator drives GPU " + device);
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
        run(dispatcher, in, out, count, dtype, stream);
    }

    /**
     * All-reduce with a policy for this call only, instead of the configured one (benchmarks and
     * tests sweep algorithms with it). The PCIe gate setting stays as configured.
     *
     * @return the decision that was carried out, with its reason
     */
    public Decision allReduce(long in, long out, long count, DType dtype, long stream, AlgorithmPolicy policy) {
        return run(perPolicy.get(Objects.requireNonNull(policy, "policy")), in, out, count, dtype, stream);
    }

    private Decision run(AllReduceDispatcher dispatcher, long in, long out, long count, DType dtype, long stream) {
        checkUsable();
        Objects.requireNonNull(dtype, "dtype");
        if (count <= 0) {
            throw new IllegalArgumentException("element count must be positive, got " + count);
        }
        long bytes = count * dtype.byteSize();
        boolean aligned = ((in | out) & 15) == 0;
        boolean zeroCopy = kernels != null && registered.contains(in, bytes);
        Decision decision = dispatcher.decide(bytes, dtype, aligned, zeroCopy);
        // An unregistered input inside a graph capture is zero-copy too (recorded, shared when the
        // capture scope closes); ask the stream only when it can change the decision or the path.
        if (!zeroCopy && kernels != null && decision.algorithm() != Algorithm.PUSH && aligned && bytes % 16 == 0
                && CudaStream.isCapturing(stream, captureScratch)) {
            zeroCopy = true;
            decision = dispatcher.decide(bytes, dtype, aligned, true);
        }
        Algorithm algorithm = decision.algorithm();
        switch (algorithm) {
            case NCCL -> nccl.allReduceSum(in, out, count, dtype, stream);
            case PUSH -> launch(algorithm, dtype, in, out, count, stream);
            case ONE_STAGE, TWO_STAGE -> {
                if (zeroCopy) {
                    if (!registered.contains(in, bytes)) {
                        if (openCapture == null) {
                            throw new IllegalStateException("an unregistered input is being captured into a CUDA graph "
                                    + "outside a GraphCapture scope: its peers' pointers would never be shared and a "
                                    + "replay would read unmapped memory. Open comm.graphCapture() before capturing, "
                                    + "or register(..) the buffer");
                        }
                        capturedInputs.add(new long[] {in, bytes});
                    }
                    launch(algorithm, dtype, in, out, count, stream);
                } else {
                    Cuda.memcpyDeviceToDeviceAsync(staging.address(), in, bytes, stream);
                    launch(algorithm, dtype, staging.address(), out, count, stream);
                }
            }
        }
        return decision;
    }

    private void launch(Algorithm algorithm, DType dtype, long in, long out, long count, long stream) {
        try {
            kernels.allReduce(algorithm.kernelCode(), dtype, in, out, count, stream);
        } catch (CustomArException e) {
            if (e.status() == CustomAllReduceKernels.STATUS_PEER_TIMEOUT) {
                throw peerTimeout(e);
            }
            throw e;
        }
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
        if (buffer.device() != device) {
            throw new IllegalArgumentException("buffer is on GPU " + buffer.device() + " but this communicator drives GPU "
                    + device);
        }
        if (kernels == null) {
            // Still collective, so that every rank's sequence of rendezvous steps stays aligned.
            rendezvous.barrier(key("register"), rendezvousTimeout);
            return;
        }
        long[] pointers = peerMemory.exchange(buffer.address(), buffer.byteSize());
        kernels.registerBuffer(pointers, buffer.byteSize());
        registered.add(buffer.address(), buffer.byteSize());
    }

    /**
     * Opens a capture scope: all-reduces issued on a capturing stream until the scope is closed
     * are recorded; {@link GraphCapture#close()} (after {@code cudaStreamEndCapture}, before the
     * first replay) shares their inputs so that replays are zero-copy. Collective on close.
     */
    public GraphCapture graphCapture() {
        checkUsable();
        if (openCapture != null) {
            throw new IllegalStateException("a graph capture scope is already open on this communicator");
        }
        if (!capturedInputs.isEmpty()) {
            throw new IllegalStateException(capturedInputs.size() + " all-reduces were captured outside a "
                    + "GraphCapture scope; open the scope before capturing");
        }
        openCapture = new GraphCapture(this);
        return openCapture;
    }

    /** Called by {@link GraphCapture#close()}. */
    void finishCapture(GraphCapture scope) {
        if (openCapture != scope) {
            return;
        }
        openCapture = null;
        checkUsable();
        int mine = capturedInputs.size();
        byte[][] counts = rendezvous.allGather(key("capture-count"),
                java.nio.ByteBuffer.allocate(4).putInt(mine).array(), rendezvousTimeout);
        StringBuilder mismatch = new StringBuilder();
        for (int r = 0; r < counts.length; r++) {
            int theirs = java.nio.ByteBuffer.wrap(counts[r]).getInt();
            if (theirs != mine) {
                mismatch.append(" rank ").append(r).append(": ").append(theirs).append(';');
            }
        }
        if (!mismatch.isEmpty()) {
            failure = "ranks captured different numbers of zero-copy all-reduces (this rank " + rank + ": " + mine
                    + ";" + mismatch + "); the captured graphs must not be replayed, and this communicator is closed "
                    + "for further use";
            capturedInputs.clear();
            throw new IllegalStateException(failure);
        }
        if (mine == 0 || kernels == null) {
            capturedInputs.clear();
            return;
        }
        int pending = kernels.graphPendingCount();
        if (pending != mine) {
            throw new IllegalStateException("the kernel library recorded " + pending + " graph inputs but the "
                    + "communicator " + mine);
        }
        long[] pointers = new long[mine];
        long[] bytes = new long[mine];
        for (int i = 0; i < mine; i++) {
            pointers[i] = capturedInputs.get(i)[0];
            bytes[i] = capturedInputs.get(i)[1];
        }
        capturedInputs.clear();
        long[][] shared = peerMemory.exchange(pointers, bytes);
        long[] rows = new long[mine * worldSize];
        for (int i = 0; i < mine; i++) {
            System.arraycopy(shared[i], 0, rows, i * worldSize, worldSize);
        }
        kernels.registerGraphInputs(rows);
    }

    // ---- observation ----------------------------------------------------------------------------

    /**
     * What an all-reduce of {@code bytes} bytes of {@code dtype} would run, for registered,
     * unregistered and misaligned inputs, each with its reason, and the configuration with the
     * source of each value.
     */
    public String explain(long bytes, DType dtype) {
        return dispatcher.explain(bytes, dtype) + (kernels == null ? "\n  (custom kernels are not set up on this group)"
                : "");
    }

    /** The decision for one call's shape. */
    public Decision decide(long bytes, DType dtype, boolean aligned16, boolean registeredInput) {
        return dispatcher.decide(bytes, dtype, aligned16, registeredInput);
    }

    /** This rank. */
    public int rank() {
        return rank;
    }

    /** Ranks in the group. */
    public int worldSize() {
        return worldSize;
    }

    /** The CUDA ordinal this rank drives. */
    public int device() {
        return device;
    }

    /** The detected (or overridden) topology. */
    public Topology topology() {
        return topology;
    }

    /** Whether the custom kernels were set up (otherwise every call goes to NCCL). */
    public boolean hasCustomKernels() {
        return kernels != null;
    }

    /** The staging buffer size in bytes. */
    public long stagingBytes() {
        return dispatcher.stagingBytes();
    }

    /**
     * The NCCL communicator of this group, for benchmarks and interoperability (for example
     * {@code ar4j-perf}'s NCCL baseline, or registering an NCCL window). The communicator keeps
     * ownership: do not close or abort it; it is destroyed when this communicator is closed.
     */
    public NcclCommunicator nccl() {
        checkUsable();
        return nccl;
    }

    /** The rendezvous this communicator uses (for tests and tools that need the same group). */
    public Rendezvous rendezvous() {
        return rendezvous;
    }

    /**
     * Throws {@link PeerTimeoutException} if a custom kernel of this rank gave up waiting for a
     * peer; returns otherwise. Call after synchronising the stream to learn of a lost peer early.
     */
    public void checkPeers() {
        if (kernels == null) {
            return;
        }
        KernelTimeout t = kernels.readTimeout(false);
        if (t.timedOut()) {
            throw peerTimeout(t, null);
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
        closeQuietly(failure, kernels, peerMemory, staging, signal, nccl);
        if (ownsRendezvous) {
            closeQuietly(failure, rendezvous);
        }
        if (failure.getSuppressed().length > 0) {
            throw failure;
        }
    }

    @Override
    public String toString() {
        return "Communicator[rank " + rank + "/" + worldSize + ", GPU " + device + ", " + topology.describe() + "]";
    }

    // ---- internals ------------------------------------------------------------------------------

    private String key(String what) {
        return "ar4j/comm/" + what + "/" + (collectiveSequence++);
    }

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

    /** The kernels are set up whenever the topology allows them, whatever the policy: per-call policies may use them. */
    private boolean customKernelsPossible() {
        boolean ws = worldSize == 2 || worldSize == 4 || worldSize == 6 || worldSize == 8;
        return ws && topology.singleHost() && topology.p2pAllPairs();
    }

    private List<PeerInfo> exchangePeerInfo() {
        PeerInfo mine = new PeerInfo(HostIdentity.local().key(), ProcessHandle.current().pid(), device,
                Cuda.pciBusId(device));
        byte[][] all = rendezvous.allGather(key("peer-info"), mine.toBytes(), rendezvousTimeout);
        List<PeerInfo> peers = new ArrayList<>(all.length);
        for (int r = 0; r < all.length; r++) {
            peers.add(PeerInfo.fromBytes(all[r], r));
        }
        return peers;
    }

    /**
     * Probes this rank's links to every peer and all-gathers the rows: {p2p between every pair,
     * NVLink between every pair}. NVLink is inferred from native P2P atomics, which NVLink peers
     * support and PCIe peers do not (NVML is not needed).
     */
    private boolean[] probeLinks(List<PeerInfo> peers, boolean sameProcess) {
        byte[] row = new byte[peers.size()];
        for (int r = 0; r < peers.size(); r++) {
            if (r == rank) {
                row[r] = 3;
                continue;
            }
            int peerDevice = sameProcess ? peers.get(r).device() : localOrdinalOf(peers.get(r).pciBusId());
            if (peerDevice < 0 || peerDevice == device) {
                row[r] = 0;
                continue;
            }
            boolean p2p = Cuda.canAccessPeer(device, peerDevice);
            boolean nvlink = p2p && Cuda.p2pAttribute(P2PAttribute.NATIVE_ATOMIC_SUPPORTED, device, peerDevice) == 1;
            row[r] = (byte) ((p2p ? 1 : 0) | (nvlink ? 2 : 0));
        }
        byte[][] rows = rendezvous.allGather(key("links"), row, rendezvousTimeout);
        boolean p2pAll = true;
        boolean nvlinkAll = true;
        for (byte[] r : rows) {
            for (byte v : r) {
                p2pAll &= (v & 1) != 0;
                nvlinkAll &= (v & 2) != 0;
            }
        }
        return new boolean[] {p2pAll, nvlinkAll};
    }

    private static int localOrdinalOf(String pciBusId) {
        int n = Cuda.deviceCount();
        for (int d = 0; d < n; d++) {
            if (Cuda.pciBusId(d).equalsIgnoreCase(pciBusId)) {
                return d;
            }
        }
        return -1;
    }

    private PeerTimeoutException peerTimeout(CustomArException cause) {
        return peerTimeout(kernels.readTimeout(false), cause);
    }

    private PeerTimeoutException peerTimeout(KernelTimeout t, CustomArException cause) {
        failure = "rank " + rank + ": a custom all-reduce kernel gave up waiting for rank " + t.peer() + " (block "
                + t.block() + ", barrier " + t.barrier() + ") after the kernel timeout; that rank is dead, hung or "
                + "made different calls. This communicator is unusable: close it and build a new group";
        return new PeerTimeoutException(failure, t.peer(), cause);
    }

    private static void closeQuietly(Throwable collector, AutoCloseable... resources) {
        for (AutoCloseable r : resources) {
            if (r == null) {
                continue;
            }
            try {
                r.close();
            } catch (Exception e) {
                collector.addSuppressed(e);
            }
        }
    }

    /** Configures and builds a {@link Communicator}. */
    public static final class Builder {
        private int rank = -1;
        private int worldSize = -1;
        private int localRank = -1;
        private int localWorldSize = -1;
        private int device = -1;
        private String masterAddr;
        private int masterPort = -1;
        private Rendezvous rendezvous;
        private boolean fromEnvironment;
        private Map<String, String> environment;
        private Properties systemProperties;
        private long stagingBytes = DEFAULT_STAGING_BYTES;
        private Duration kernelTimeout = DEFAULT_KERNEL_TIMEOUT;
        private Duration rendezvousTimeout = DEFAULT_RENDEZVOUS_TIMEOUT;
        private int maxRegistrations = DEFAULT_MAX_REGISTRATIONS;
        private String algorithmPolicy;
        private Boolean forceCustomOnPcie;
        private Boolean nvlinkOverride;
        private Boolean p2pOverride;
        private long pushUpToBytes = -1;
        private int launchBlocks = -1;
        private int launchThreads = -1;

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
            dispatchConfig();
            if (rendezvous != null) {
                return new Communicator(this, rendezvous, false);
            }
            LaunchEnvironment.Builder env = LaunchEnvironment.builder();
            if (rank >= 0) {
                env.rank(rank);
            }
            if (worldSize >= 0) {
                env.worldSize(worldSize);
            }
            boolean loopback = masterAddr == null || masterAddr.equals("localhost") || masterAddr.startsWith("127.")
                    || masterAddr.equals("::1");
            if (!fromEnvironment && loopback && rank >= 0 && worldSize >= 1) {
                // One host: local rank = rank unless told otherwise.
                env.localRank(localRank >= 0 ? localRank : rank)
                        .localWorldSize(localWorldSize >= 0 ? localWorldSize : worldSize);
            } else {
                if (localRank >= 0) {
                    env.localRank(localRank);
                }
                if (localWorldSize >= 0) {
                    env.localWorldSize(localWorldSize);
                }
            }
            if (masterAddr != null) {
                env.masterAddr(masterAddr).masterPort(masterPort);
            }
            LaunchEnvironment launch;
            if (fromEnvironment) {
                launch = environment != null ? env.build(environment) : env.build(System.getenv());
            } else {
                if (rank < 0 || worldSize < 1) {
                    throw new IllegalArgumentException("set rank(..) and worldSize(..) (and masterAddress(..) for more "
                            + "than one rank), or call fromEnvironment(), or pass a rendezvous(..)");
                }
                launch = env.build(Map.of());
            }
            if (localRank < 0) {
                localRank = launch.localRank();
            }
            Rendezvous tcp = TcpRendezvous.connect(launch, rendezvousTimeout);
            return new Communicator(this, tcp, true);
        }
    }
}
