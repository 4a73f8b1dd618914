package dev.ar4j.internal.engine;

import dev.ar4j.OutOfStepException;
import dev.ar4j.DType;
import dev.ar4j.PeerTimeoutException;
import dev.ar4j.cuda.Cuda;
import dev.ar4j.cuda.DeviceAttribute;
import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.dispatch.Algorithm;
import dev.ar4j.internal.peer.RegisteredRanges;
import dev.ar4j.internal.kernels.CustomAllReduceKernels;
import dev.ar4j.internal.kernels.CustomAllReduceContext;
import dev.ar4j.internal.kernels.KernelVariants;
import dev.ar4j.CustomAllReduceException;
import dev.ar4j.internal.kernels.KernelFailure;
import dev.ar4j.internal.kernels.KernelTimeout;

import java.lang.System.Logger.Level;
import java.nio.ByteBuffer;

/**
 * The custom-kernel path of one rank: its {@link CustomAllReduceContext} (owned, destroyed once), the
 * registered address ranges, and the launch of one all-reduce (zero-copy or through the staging
 * buffer). A kernel timeout becomes a {@link PeerTimeoutException} naming the peer.
 *
 * <h2>Registration lifetimes</h2>
 * An unregistered buffer's slot is freed in the kernel library ({@code ar4j_unregister_buffer})
 * after the device has finished the launches that read it. While a captured CUDA graph still
 * names the buffer the library keeps the slot ({@code AR4J_ERROR_SLOT_IN_USE}); the range is then
 * <em>retired</em>: inputs inside it go through the staging buffer (never through the stale slot,
 * whose peer pointers may map memory that was freed and reused), registering an overlapping range
 * again is refused, and the slot is freed at a later register or unregister once the graphs are
 * gone. A registered buffer found closed at a call is retired the same way (its slot is freed at
 * the next register or unregister, not on the call's path). The peers' IPC mappings stay until
 * the communicator closes.
 */
final class CustomKernelPath implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger(CustomKernelPath.class.getName());

    private final Group group;
    private final CustomAllReduceContext kernels;
    private final RegisteredRanges registered;
    private final RegisteredRanges retired = new RegisteredRanges();
    /** Retired registrations whose library slot is still held: {address, bytes}. */
    private final java.util.List<long[]> slotsToFree = new java.util.ArrayList<>();
    private final long stagingAddress;
    private final Geometry geometry;

    /** The launch geometry every rank agreed on at setup. */
    record Geometry(int maxBlocks, int threads, int ranksPerGpu, int minSms) {
    }

    private CustomKernelPath(Group group, CustomAllReduceContext kernels, RegisteredRanges registered, long stagingAddress,
                             Geometry geometry) {
        this.group = group;
        this.kernels = kernels;
        this.registered = registered;
        this.stagingAddress = stagingAddress;
        this.geometry = geometry;
    }

    /**
     * Agrees on the launch geometry, allocates and shares the signal block and staging buffer,
     * creates the context and registers the staging buffer (collective). On failure the context
     * is closed; the group's buffers stay with the group, which the caller closes.
     */
    static CustomKernelPath open(Group group, long stagingBytes, int maxRegistrations, long kernelTimeoutNanos,
                                 int launchBlocks, int launchThreads, int ranksPerGpuAtLeast, boolean pdl,
                                 int variants) {
        Geometry geometry = agreeGeometry(group, launchBlocks, launchThreads, ranksPerGpuAtLeast);
        long signalBytes = CustomAllReduceKernels.signalSize(stagingBytes);
        long[][] shared = group.openSharedBuffers(signalBytes, stagingBytes);
        CustomAllReduceContext ctx = CustomAllReduceKernels.createContext(shared[0], group.rank, group.worldSize, stagingBytes,
                maxRegistrations, kernelTimeoutNanos);
        try {
            if (geometry.maxBlocks() > 0) {
                ctx.setLaunchConfig(geometry.maxBlocks(), geometry.threads());
            }
            ctx.setPdl(pdl);
            int flags = kernelVariantsFor(variants, ranksPerGpuAtLeast);
            if (flags != 0) {
                ctx.setVariants(flags);  // before the group's "ready" barrier, as the launch geometry
            }
            ctx.registerBuffer(shared[1], stagingBytes);
            RegisteredRanges ranges = new RegisteredRanges();
            ranges.add(group.staging().address(), stagingBytes, group.staging());
            return new CustomKernelPath(group, ctx, ranges, group.staging().address(), geometry);
        } catch (RuntimeException e) {
            Closing.quietly(e, ctx);
            throw e;
        }
    }

    /**
     * The variants a context gets: those asked for, without the early trigger when sibling
     * sub-groups share this group's GPUs ({@code ranksPerGpuAtLeast > 1}): the kernels see only
     * their own group's ranks, and another group's kernel on the same GPU may need the SM slots
     * that an early-launched kernel holds while it waits.
     */
    static int kernelVariantsFor(int variants, int ranksPerGpuAtLeast) {
        return ranksPerGpuAtLeast > 1 ? variants & ~KernelVariants.PUSH_EARLY_TRIGGER : variants;
    }

    /**
     * Every rank sends its SM count, its builder's launch configuration and how many ranks it was
     * told share each GPU at least; the ranks must agree on the configuration, and when several
     * ranks share a GPU the grid is capped so that all their blocks are resident at once (max
     * blocks = smallest SM count / ranks per GPU), since a kernel whose peer's blocks cannot be
     * scheduled would wait for them until its deadline. Ranks per GPU is the larger of this
     * group's busiest GPU and the largest {@code ranksPerGpuAtLeast} sent: a split's sub-groups run
     * on their parent's GPUs at the same time, so a child leaves room for all its parent's ranks.
     * Without a builder setting: the smallest SM count of the group, divided by the ranks per GPU,
     * at most 128 blocks of 512 threads (the kernels' own default, made equal on every rank).
     */
    static Geometry agreeGeometry(Group group, int launchBlocks, int launchThreads, int ranksPerGpuAtLeast) {
        int sms = Cuda.deviceAttribute(DeviceAttribute.MULTI_PROCESSOR_COUNT, group.device);
        byte[] mine = ByteBuffer.allocate(16).putInt(sms).putInt(launchBlocks).putInt(launchThreads)
                .putInt(ranksPerGpuAtLeast).array();
        byte[][] all = group.rendezvous.allGather(group.key("geometry"), mine, group.timeout);
        return geometryOf(all, group.rank, launchBlocks, launchThreads, group.maxRanksPerGpu());
    }

    /**
     * The geometry every rank computes alike from the gathered records ({@link #agreeGeometry});
     * {@code groupRanksPerGpu} is the ranks on this group's busiest GPU.
     */
    static Geometry geometryOf(byte[][] all, int rank, int launchBlocks, int launchThreads, int groupRanksPerGpu) {
        int minSms = Integer.MAX_VALUE;
        int perGpu = groupRanksPerGpu;
        for (int r = 0; r < all.length; r++) {
            if (all[r].length != 16) {
                throw new OutOfStepException("rank " + r + " sent a malformed launch-geometry record ("
                        + all[r].length + " bytes, 16 expected); run the same ar4j version on every rank");
            }
            ByteBuffer b = ByteBuffer.wrap(all[r]);
            int theirSms = b.getInt();
            int blocks = b.getInt();
            int threads = b.getInt();
            int theirSharers = b.getInt();
            if (blocks != launchBlocks || threads != launchThreads) {
                throw new OutOfStepException("ranks disagree on the launch configuration: rank " + rank
                        + " has launchConfig(" + launchBlocks + ", " + launchThreads + "), rank " + r + " has ("
                        + blocks + ", " + threads + "); ranks that split the work differently sum wrong elements. "
                        + "Give every rank the same launchConfig (or none)");
            }
            if (theirSms < 1 || theirSharers < 1) {
                throw new OutOfStepException("rank " + r + " sent an invalid launch-geometry record (" + theirSms
                        + " SMs, " + theirSharers + " ranks per GPU); run the same ar4j version on every rank");
            }
            minSms = Math.min(minSms, theirSms);
            perGpu = Math.max(perGpu, theirSharers);
        }
        if (launchBlocks > 0) {
            return new Geometry(launchBlocks, launchThreads, perGpu, minSms);
        }
        // The kernels' default is one block per SM of the local GPU; the smallest SM count of the
        // group makes it the same on every rank, divided among the ranks that share a GPU.
        int blocks = Math.max(1, Math.min(CustomAllReduceKernels.MAX_BLOCKS, minSms / perGpu));
        return new Geometry(blocks, 512, perGpu, minSms);
    }

    Geometry geometry() {
        return geometry;
    }

    /** Whether the kernels launch with programmatic dependent launch (asked for, and the GPU has it). */
    boolean pdlActive() {
        return kernels.pdlActive();
    }

    /** The kernel variants in effect ({@link KernelVariants} flags; known after the geometry check). */
    int variantsActive() {
        return kernels.variantsActive();
    }

    /**
     * Whether [in, in + bytes) lies in a registered, open buffer (the staging buffer included).
     * A registered buffer found closed is retired here: the call goes through the staging buffer.
     */
    boolean isRegistered(long in, long bytes) {
        Object owner = registered.ownerOf(in, bytes);
        if (owner == RegisteredRanges.NOT_REGISTERED) {
            return false;
        }
        if (owner instanceof DeviceBuffer b && !b.isOpen()) {
            retire(b.address(), b.byteSize(), "it was closed while registered");
            return false;
        }
        return true;
    }

    /** Whether [in, in + bytes) touches a retired registration (capture must not record it). */
    boolean touchesRetired(long in, long bytes) {
        return retired.size() > 0 && retired.overlaps(in, bytes);
    }

    /** Launches on the caller's input (registered, recorded in a capture, or any input for push). */
    void launch(Algorithm algorithm, DType dtype, long in, long out, long count, long stream) {
        try {
            kernels.allReduce(algorithm.kernelCode(), dtype, in, out, count, stream);
        } catch (CustomAllReduceException e) {
            if (e.status() == CustomAllReduceKernels.STATUS_PEER_TIMEOUT) {
                throw peerTimeout(kernels.readTimeout(false), e);
            }
            if (e.status() == CustomAllReduceKernels.STATUS_POISONED) {
                FailureState.Failure f = readFailure();
                if (f != null) {
                    throw f.withCause(e).toException();
                }
            }
            throw e;
        }
    }

    /**
     * The fused all-reduce + residual add + RMSNorm ({@code ar4j_all_reduce_residual_rmsnorm}), one
     * kernel: {@link Algorithm#PUSH} on any local input; {@link Algorithm#ONE_STAGE} on a registered
     * input (or one recorded in a capture) that neither output overlaps.
     */
    void launchResidualRmsNorm(Algorithm algorithm, DType dtype, long in, long residual, long weight, long out,
                               long residualOut, long rows, int hidden, float eps, long stream) {
        try {
            kernels.allReduceResidualRmsNorm(algorithm.kernelCode(), dtype, in, residual, weight, out, residualOut,
                    rows, hidden, eps, stream);
        } catch (CustomAllReduceException e) {
            FailureState.Failure f = e.status() == CustomAllReduceKernels.STATUS_PEER_TIMEOUT
                    || e.status() == CustomAllReduceKernels.STATUS_POISONED ? readFailure() : null;
            if (f != null) {
                throw f.withCause(e).toException();
            }
            throw e;
        }
    }

    /**
     * Copies the input into the staging buffer and runs the fused one-stage kernel on it; the outputs
     * may then be anywhere, {@code in} included (the peers read the staging buffer).
     */
    void launchResidualRmsNormStaged(DType dtype, long in, long residual, long weight, long out, long residualOut,
                                     long rows, int hidden, float eps, long stream) {
        Cuda.memcpyDeviceToDeviceAsync(stagingAddress, in, rows * hidden * dtype.byteSize(), stream);
        launchResidualRmsNorm(Algorithm.ONE_STAGE, dtype, stagingAddress, residual, weight, out, residualOut, rows,
                hidden, eps, stream);
    }

    /** The staging buffer's size in bytes: the largest input a staged call copies. */
    long stagingBytes() {
        return group.staging().byteSize();
    }

    /** Copies the input into the staging buffer and launches on it. */
    void launchStaged(Algorithm algorithm, DType dtype, long in, long out, long count, long stream) {
        Cuda.memcpyDeviceToDeviceAsync(stagingAddress, in, count * dtype.byteSize(), stream);
        launch(algorithm, dtype, stagingAddress, out, count, stream);
    }

    /** Shares {@code buffer} with every rank and registers it (collective). */
    void register(DeviceBuffer buffer) {
        settle(false);
        boolean reusesRetired = retired.overlaps(buffer.address(), buffer.byteSize());
        // Every rank learns whether any rank must refuse, so that all refuse alike and stay in step.
        int refusing = group.agreeOnRefusal("register", reusesRetired);
        if (refusing >= 0) {
            throw new IllegalArgumentException("register refused on every rank: rank " + refusing + "'s buffer "
                    + "overlaps a buffer that was unregistered or closed there before while a captured CUDA graph "
                    + "still names it, so the kernel library keeps its slot (AR4J_ERROR_SLOT_IN_USE) and the slot "
                    + "would be used with stale peer pointers. Destroy the graphs captured with inputs in that buffer "
                    + "(then register again), or register buffers at new addresses");
        }
        long[] pointers = group.share(new long[] {buffer.address()}, new long[] {buffer.byteSize()})[0];
        kernels.registerBuffer(pointers, buffer.byteSize());
        registered.add(buffer.address(), buffer.byteSize(), buffer);
    }

    /**
     * Ends the registration of {@code buffer} (the collective step is the caller's): later calls
     * with inputs inside it are staged.
     *
     * @throws IllegalArgumentException if it is not registered
     */
    void unregister(DeviceBuffer buffer) {
        if (buffer.address() == stagingAddress) {
            throw new IllegalArgumentException("the staging buffer is the communicator's own; it cannot be unregistered");
        }
        if (!registered.remove(buffer.address(), buffer.byteSize())) {
            throw new IllegalArgumentException(buffer + " is not registered with this communicator (register(..) it "
                    + "first; unregister each buffer once)");
        }
        // settle(true) ran before the collective step: the launches that read the slot are done.
        if (!kernels.unregisterBuffer(buffer.address())) {
            retired.add(buffer.address(), buffer.byteSize());
            slotsToFree.add(new long[] {buffer.address(), buffer.byteSize()});
        }
    }

    /**
     * Called at the start of a register or unregister, before its first collective step: waits
     * for the device, so the launches that read a slot about to be freed are done, then frees the
     * library slots of retired registrations whose graphs are gone. Before the collective step,
     * because no peer has passed it yet: none of a peer's later kernels (which would wait for this
     * rank's) is on the device meanwhile, also when ranks share a GPU in one process. The wait is
     * bounded by the kernels' deadline and ended by abort()'s poison. Not on an all-reduce's path.
     *
     * @param always wait for the device even with no retired slot (an unregister frees one)
     */
    void settle(boolean always) {
        if (!always && slotsToFree.isEmpty()) {
            return;
        }
        Cuda.deviceSynchronize();
        for (java.util.Iterator<long[]> it = slotsToFree.iterator(); it.hasNext(); ) {
            long[] slot = it.next();
            if (kernels.unregisterBuffer(slot[0])) {
                retired.remove(slot[0], slot[1]);
                it.remove();
            }
        }
    }

    private void retire(long address, long bytes, String why) {
        if (registered.remove(address, bytes)) {
            retired.add(address, bytes);
            slotsToFree.add(new long[] {address, bytes});
            LOG.log(Level.WARNING, String.format("ar4j rank %d: registered buffer [0x%x, +%d) %s; calls with "
                    + "inputs in it are staged from now on. Unregister a buffer (collectively) before closing it",
                    group.rank, address, bytes, why));
        }
    }

    /** Graph inputs the kernel library recorded during capture and not yet registered. */
    int graphPendingCount() {
        return kernels.graphPendingCount();
    }

    /** Registers the pending graph inputs: row i holds every rank's pointer for the i-th input. */
    void registerGraphInputs(long[] rows) {
        kernels.registerGraphInputs(rows);
    }

    /**
     * Poisons the kernels: sets the poison word in this rank's and every peer's signal block
     * ({@code ar4j_poison}), so every waiting kernel, on every rank, and every later call or CUDA
     * graph replay writes NaN over its whole output and returns. Called once, under the
     * containment lock, when this communicator fails or is aborted; the context is still open.
     * Does not wait for the running kernels. A poison already set (a kernel that timed out, a
     * peer's) is kept: the first cause wins.
     */
    void poison(FailureState.Kind kind, String reason) {
        int code = kind == FailureState.Kind.ABORTED ? CustomAllReduceKernels.POISON_ABORT
                : CustomAllReduceKernels.POISON_PEER_LOST;
        try {
            kernels.poison(code);
        } catch (RuntimeException e) {
            // The communicator is failing anyway; the peers then learn of it from their deadline.
            LOG.log(Level.WARNING, "ar4j rank " + group.rank + ": poisoning the custom kernels failed (" + e
                    + "); peers' kernels will end at their kernel timeout instead", e);
        }
    }

    /**
     * What the kernels recorded, as a failure of the communicator, or null when they are healthy:
     * a peer's poison names the rank that gave up; this rank's own timeout names the peer it
     * waited for; a geometry mismatch or two overlapping launches are "out of step". One small
     * copy on the context's private stream: safe from the watchdog thread.
     */
    FailureState.Failure readFailure() {
        KernelFailure f = kernels.readFailure();
        if (!f.failed()) {
            return null;
        }
        String what = "rank " + group.rank + ": the custom kernels failed: " + f.describe();
        if (f.timeout().timedOut()) {
            return new FailureState.Failure(FailureState.Kind.PEER_TIMEOUT, f.timeout().peer(),
                    peerTimeoutMessage(f.timeout()) + " (" + f.describe() + ")", null);
        }
        if (f.geometryMismatch() || (f.poisoned() && (f.reason() == CustomAllReduceKernels.POISON_GEOMETRY
                || f.reason() == CustomAllReduceKernels.POISON_CONCURRENT_USE))) {
            return new FailureState.Failure(FailureState.Kind.OUT_OF_STEP, f.poisoned() ? f.originRank() : f.geometryPeer(),
                    what + "; their outputs are NaN. This communicator is unusable: close it and build a new group",
                    null);
        }
        if (f.poisoned() && f.reason() == CustomAllReduceKernels.POISON_TIMEOUT) {
            return new FailureState.Failure(FailureState.Kind.PEER_TIMEOUT, f.peer(), what + "; its outputs are NaN. "
                    + "This communicator is unusable: close it and build a new group", null);
        }
        return new FailureState.Failure(FailureState.Kind.PEER_LOST, f.originRank(), what + "; every output since is "
                + "NaN. This communicator is unusable: close it and build a new group", null);
    }

    /**
     * Called once every rank's context exists and is configured (after the group's "ready"
     * barrier), before any all-reduce: the kernels compare the launch geometry every peer
     * published in its signal block with this one's ({@code ar4j_check_geometry}); a difference
     * (a rank of another ar4j version, say) fails the build naming the peer and both geometries.
     */
    void afterGroupReady() {
        kernels.checkGeometry();
    }

    /** The exception for a recorded kernel timeout; {@code cause} may be null. */
    PeerTimeoutException peerTimeout(KernelTimeout t, Throwable cause) {
        return new PeerTimeoutException(peerTimeoutMessage(t), t.peer(), cause);
    }

    String peerTimeoutMessage(KernelTimeout t) {
        return "rank " + group.rank + ": a custom all-reduce kernel gave up waiting for rank " + t.peer()
                + " (block " + t.block() + ", barrier " + t.barrier() + ") after the kernel timeout; that rank is "
                + "dead, hung or made different calls. This communicator is unusable: close it and build a new group";
    }

    @Override
    public void close() {
        kernels.close();
    }
}
