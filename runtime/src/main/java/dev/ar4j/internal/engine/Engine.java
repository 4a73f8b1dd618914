package dev.ar4j.internal.engine;

import dev.ar4j.DType;
import dev.ar4j.Health;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.dispatch.Algorithm;
import dev.ar4j.dispatch.AllReduceDispatcher;
import dev.ar4j.dispatch.Decision;
import dev.ar4j.dispatch.Topology;
import dev.ar4j.internal.engine.FailureState.Failure;
import dev.ar4j.internal.engine.FailureState.Kind;
import dev.ar4j.internal.peer.PeerInfo;
import dev.ar4j.BuildAbortedException;
import dev.ar4j.PeerLostException;
import dev.ar4j.internal.rendezvous.AbortSignal;
import dev.ar4j.internal.rendezvous.SplitPlan;
import dev.ar4j.internal.rendezvous.SubGroupRendezvous;
import dev.ar4j.nccl.NcclCollectives;
import dev.ar4j.nccl.NcclDisabledException;
import dev.ar4j.rendezvous.Rendezvous;

import java.lang.System.Logger.Level;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * One rank of an all-reduce group, everything behind the public {@code Communicator}: the group
 * and its shared buffers, the dispatchers, the NCCL and custom-kernel paths, graph capture, the
 * call guard, failure containment and the life cycle. Built from {@link Settings} alone; it knows
 * nothing of the public facade.
 */
public final class Engine implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger("dev.ar4j.Communicator");

    private final Settings settings;
    private final Group group;
    private final Dispatchers dispatchers;
    private final NcclPath nccl;             // null when built with nccl(false)
    private final CustomKernelPath kernels;  // null when the topology rules the kernels out
    private final CaptureRecorder capture;
    private final FailureState state = new FailureState();
    private final CallGuard guard = new CallGuard(state);
    private final Containment containment;
    private final Lifecycle lifecycle;
    private final CollectiveCalls collectiveCalls;
    private final AllReduceCalls allReduces;
    private final ResidualNormCalls residualNorm;

    private Engine(Settings settings, Rendezvous rendezvous, boolean ownsRendezvous,
                   Consumer<RuntimeException> onFailure, AbortSignal abort) {
        this.settings = settings;
        GroupParts parts = GroupParts.open(settings, rendezvous, ownsRendezvous, abort);
        this.containment = new Containment(parts.group().rank, state, guard, parts.kernels(), parts.nccl(), onFailure);
        this.lifecycle = Lifecycle.start(parts, settings, state, guard, containment);
        this.group = parts.group();
        this.dispatchers = parts.dispatchers();
        this.nccl = parts.nccl();
        this.kernels = parts.kernels();
        this.capture = new CaptureRecorder(group);
        this.collectiveCalls = new CollectiveCalls(group, kernels, capture, guard, containment);
        this.allReduces = new AllReduceCalls(parts, capture, guard, containment);
        this.residualNorm = new ResidualNormCalls(parts, capture, guard, containment, allReduces,
                BuilderChecks.pdlEnabled(settings));
        if (LOG.isLoggable(Level.INFO)) {
            LOG.log(Level.INFO, Observation.built(parts));
        }
        String hazard = kernels == null ? null : Observation.lazyLoadingHazard(group.sameProcess, group.device,
                group.peers.stream().map(PeerInfo::device).toList(), System.getenv("CUDA_MODULE_LOADING"));
        if (hazard != null) {
            LOG.log(Level.WARNING, hazard);
        }
        // Communicator.localGroup refuses such a group; ranks of one process built otherwise are warned.
        String queues = kernels == null || !group.sameProcess ? null : HardwareQueues.hazard(group.device,
                (int) group.peers.stream().filter(p -> p.device() == group.device).count(),
                System.getenv(HardwareQueues.VARIABLE));
        if (queues != null) {
            LOG.log(Level.WARNING, "ar4j: " + queues);
        }
    }

    /**
     * Joins the group the settings describe: collective, blocking until every rank has joined
     * (bounded by the rendezvous timeout). Bad settings fail before the GPU or the network is touched.
     *
     * @param settings  the builder's settings
     * @param onFailure told once of the first failure, on the thread that saw it; may be null
     * @return this rank's engine, its GPU current on the calling thread
     */
    public static Engine open(Settings settings, Consumer<RuntimeException> onFailure) {
        return open(settings, onFailure, AbortSignal.none());
    }

    /**
     * {@link #open(Settings, Consumer)}, ended early by {@code abort} ({@code dev.ar4j.BuildAbort}):
     * when it is set, the rendezvous is told this rank aborted (its own and its peers' waits end),
     * NCCL's init stops and is aborted, what was made is freed, and this throws
     * {@link dev.ar4j.BuildAbortedException}.
     */
    public static Engine open(Settings settings, Consumer<RuntimeException> onFailure, AbortSignal abort) {
        BuilderChecks.validate(settings);
        abort.throwIfAborted("before it started");
        try {
            if (settings.rendezvous() != null) {
                return build(settings, settings.rendezvous(), false, onFailure, abort);
            }
            GroupRendezvous.Connected connected = GroupRendezvous.connect(settings, abort);
            return build(connected.settings(), connected.rendezvous(), true, onFailure, abort);
        } catch (RuntimeException e) {
            if (abort.aborted() && !(e instanceof BuildAbortedException)) {
                throw abort.aborted("while the group was forming", e);
            }
            throw e;
        }
    }

    /**
     * Builds over {@code rendezvous}, which an abort during the build tells that this rank gave up.
     * A rank the rendezvous reports lost during the build makes this build give up too (a group
     * without it cannot form), also where the step in progress no longer waits for that rank: the
     * build then throws a {@link PeerLostException} naming the lost rank.
     */
    private static Engine build(Settings settings, Rendezvous rendezvous, boolean owns,
                                Consumer<RuntimeException> onFailure, AbortSignal abort) {
        Engine engine;
        java.util.concurrent.atomic.AtomicReference<PeerLostException> lostDuringBuild =
                new java.util.concurrent.atomic.AtomicReference<>();
        int me = rendezvous.rank();
        AutoCloseable lossWatch = rendezvous.onPeerLost((lost, reason) -> {
            if (lost != me && lostDuringBuild.compareAndSet(null, new PeerLostException("rank " + me + "'s build gave up: "
                    + (lost < 0 ? "the group failed" : "rank " + lost + " was lost") + " while the group was forming ("
                    + reason + "); restart every rank, or build a new group", lost, null))) {
                rendezvous.abortRank("rank " + me + "'s build gave up: " + (lost < 0 ? "the group failed"
                        : "rank " + lost + " was lost"));
            }
        });
        try (AbortSignal.Registration told = abort.onAbort(() -> rendezvous.abortRank("rank " + me
                + "'s build was aborted: " + abort.reason()))) {
            engine = new Engine(settings, rendezvous, owns, onFailure, abort);
        } catch (RuntimeException e) {
            PeerLostException lost = lostDuringBuild.get();
            if (lost != null && !abort.aborted()) {
                // Thrown anew with the step's failure as its cause (the recorded one has a fixed null cause).
                PeerLostException named = new PeerLostException(lost.getMessage(), lost.peer(), e);
                throw named;
            }
            throw e;
        } finally {
            try {
                lossWatch.close();
            } catch (Exception ignored) {
                // unsubscribing from a closed rendezvous: nothing to remove
            }
        }
        PeerLostException lostLate = lostDuringBuild.get();
        if (lostLate != null && !abort.aborted()) {
            Closing.quietly(lostLate, engine);
            throw lostLate;
        }
        if (abort.aborted()) {
            // Aborted after the last step: the peers were told, so the group cannot be used.
            BuildAbortedException e = abort.aborted("as the group finished forming", null);
            Closing.quietly(e, engine);
            throw e;
        }
        return engine;
    }

    /** {@code Communicator.allReduce(DeviceBuffer, DeviceBuffer, DType, CudaStream)}. */
    public void allReduce(DeviceBuffer in, DeviceBuffer out, DType dtype, CudaStream stream) {
        allReduces.buffers(in, out, dtype, stream);
    }

    /** {@code Communicator.allReduce(long, long, long, DType, long)}. */
    public void allReduce(long in, long out, long count, DType dtype, long stream) {
        allReduces.run(dispatchers.configured, in, out, count, dtype, stream);
    }

    /** {@code Communicator.allReduce(long, long, long, DType, long, Algorithm)}. */
    public Decision allReduce(long in, long out, long count, DType dtype, long stream, Algorithm policy) {
        AllReduceDispatcher dispatcher = dispatchers.forPolicy(Objects.requireNonNull(policy, "policy"));
        return allReduces.run(dispatcher, in, out, count, dtype, stream);
    }

    /** {@code Communicator.register}. */
    public void register(DeviceBuffer buffer) {
        collectiveCalls.register(buffer);
    }

    /** {@code Communicator.unregister}. */
    public void unregister(DeviceBuffer buffer) {
        collectiveCalls.unregister(buffer);
    }

    /** Opens a graph capture scope ({@code Communicator.graphCapture}). */
    public CaptureRecorder.Scope openCapture() {
        guard.enter("graphCapture");
        try {
            return capture.open();
        } finally {
            guard.exit();
        }
    }

    /** Closes a graph capture scope: compares the ranks' captured calls and shares the inputs. */
    public void finishCapture(CaptureRecorder.Scope scope) {
        collectiveCalls.finishCapture(scope);
    }

    /** {@code Communicator.abort()}. */
    public void abort() {
        String by = "rank " + group.rank + ": the communicator was aborted by thread '"
                + Thread.currentThread().getName() + "'; close it and build a new group";
        containment.contain(new Failure(Kind.ABORTED, -1, by, null));
        group.announceAbort(by);
    }

    /** {@code Communicator.health()}. */
    public Health health() {
        return lifecycle.health();
    }

    /** {@code Communicator.checkPeers()}. */
    public void checkPeers() {
        containment.checkPeers();
    }

    /** {@code Communicator.explain}. */
    public String explain(long bytes, DType dtype) {
        return Observation.explain(dispatchers.configured, group.worldSize, kernels != null, nccl != null, bytes, dtype);
    }

    /** {@code Communicator.allReduceResidualRmsNorm}. */
    public boolean allReduceResidualRmsNorm(DeviceBuffer in, DeviceBuffer residual, DeviceBuffer weight,
                                            DeviceBuffer out, DeviceBuffer residualOut, int hidden, float eps,
                                            DType dtype, CudaStream stream) {
        return residualNorm.run(in, residual, weight, out, residualOut, hidden, eps, dtype, stream);
    }

    /** {@code Communicator.explainResidualRmsNorm}. */
    public String explainResidualRmsNorm(long bytes, int hidden, DType dtype, boolean registeredInput) {
        return residualNorm.explain(bytes, hidden, dtype, registeredInput);
    }

    /** {@code Communicator.decide}. */
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

    /** The topology the dispatcher decides with. */
    public Topology topology() {
        return group.topology;
    }

    /** Whether the custom kernels were set up. */
    public boolean hasCustomKernels() {
        return kernels != null;
    }

    /** Whether the group has an NCCL communicator. */
    public boolean hasNccl() {
        return nccl != null;
    }

    /** The staging buffer size in bytes. */
    public long stagingBytes() {
        return dispatchers.configured.stagingBytes();
    }

    /** The settings this engine was built with (the local rank resolved). */
    public Settings settings() {
        return settings;
    }

    /**
     * The collectives of this group's NCCL communicator ({@code Communicator.collectives()}).
     *
     * @throws IllegalStateException when the communicator failed or is closed
     * @throws NcclDisabledException when it was built without NCCL
     */
    public NcclCollectives collectives() {
        return ncclPath().collectives();
    }

    /** The NCCL path, checked open (tests and the collectives). */
    NcclPath ncclPath() {
        state.throwIfFailed();
        if (lifecycle.closed()) {
            throw new IllegalStateException("the communicator is closed");
        }
        if (nccl == null && group.worldSize == 1) {
            throw new NcclDisabledException(Observation.SOLO_NO_NCCL);
        }
        if (nccl == null) {
            throw new NcclDisabledException("this communicator was built with nccl(false) (or AR4J_NCCL=0): it has no "
                    + "NCCL communicator, so it has no NCCL collectives; build the group with NCCL to use them");
        }
        return nccl;
    }

    /** A barrier over the group: collective, bounded by the rendezvous timeout. */
    public void barrier() {
        collectiveCalls.barrier();
    }

    /** Every rank's {@code value}, in rank order: collective, through the group's rendezvous. */
    public byte[][] exchange(byte[] value) {
        return collectiveCalls.exchange(value);
    }

    /**
     * {@code Communicator.split}: agrees the plan over this group, then builds this rank's
     * sub-group engine with the inherited settings.
     *
     * @return this rank's sub-group engine, or null when {@code color} is -1
     */
    public Engine split(int color, int key, Consumer<RuntimeException> onFailure) {
        SplitPlan plan = collectiveCalls.agreeSplit(color, key);
        if (!plan.joins()) {
            return null;
        }
        Settings child = group.childSettings();
        BuilderChecks.validate(child);
        return new Engine(child, SubGroupRendezvous.over(group.rendezvous, plan), true, onFailure, AbortSignal.none());
    }

    /** The rendezvous of this group (tests that need the same group). */
    public Rendezvous rendezvous() {
        return group.rendezvous;
    }

    /** The custom-kernel path, for tests. */
    CustomKernelPath customKernelPath() {
        return kernels;
    }

    /** {@code Communicator.close()}. */
    @Override
    public void close() {
        lifecycle.close();
    }

    /** One line: rank, world size, GPU, topology. */
    public String describe() {
        return "rank " + group.rank + "/" + group.worldSize + ", GPU " + group.device + ", "
                + group.topology.describe();
    }
}
