package dev.ar4j;

import dev.ar4j.internal.engine.BuilderChecks;
import dev.ar4j.rendezvous.Rendezvous;
import java.util.Map;
import java.util.Properties;

import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.dispatch.Algorithm;
import dev.ar4j.dispatch.AllReduceDispatcher;
import dev.ar4j.dispatch.Decision;
import dev.ar4j.dispatch.Topology;
import dev.ar4j.internal.engine.CaptureRecorder;
import dev.ar4j.internal.engine.Engine;
import dev.ar4j.internal.engine.HardwareQueues;
import dev.ar4j.internal.engine.LocalGroup;
import dev.ar4j.internal.engine.Settings;
import dev.ar4j.internal.rendezvous.AbortSignal;
import dev.ar4j.nccl.NcclCollectives;
import dev.ar4j.rendezvous.LaunchEnvironment;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
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
 * <p>How a group shares buffers, runs several ranks on one GPU, orders calls across threads and
 * reports failures is described in the {@linkplain dev.ar4j package documentation}.
 */
public final class Communicator implements AutoCloseable {

    /** The default staging buffer (and two-stage scratch) size: 8 MiB. */
    public static final long DEFAULT_STAGING_BYTES = Settings.DEFAULT_STAGING_BYTES;
    /** How long a custom kernel waits for a peer before it gives up, by default. */
    public static final Duration DEFAULT_KERNEL_TIMEOUT = Settings.DEFAULT_KERNEL_TIMEOUT;
    /** How long a rendezvous step waits for the other ranks, by default. */
    public static final Duration DEFAULT_RENDEZVOUS_TIMEOUT = Settings.DEFAULT_RENDEZVOUS_TIMEOUT;
    /** Registered buffers plus captured graph inputs one communicator can hold, by default. */
    public static final int DEFAULT_MAX_REGISTRATIONS = Settings.DEFAULT_MAX_REGISTRATIONS;
    /** How often the watchdog polls the kernels and NCCL, by default. */
    public static final Duration DEFAULT_WATCHDOG_INTERVAL = Settings.DEFAULT_WATCHDOG_INTERVAL;

    private final Engine engine;
    private final FailureListener listener;  // may be null; a split's children inherit it

    private final AbortSignal.Registration abortAfterBuild;  // a BuildAbort's forwarding to abort(), or a no-op

    private Communicator(Settings settings, FailureListener listener, AbortSignal abort) {
        this.listener = listener;
        this.engine = Engine.open(settings, failureReporter(listener), abort);
        this.abortAfterBuild = abort.onAbort(this::abort);
        if (abort.aborted()) {
            BuildAbortedException e = abort.aborted("as the group finished forming", null);
            abortAfterBuild.close();
            try {
                engine.close();
            } catch (RuntimeException closing) {
                e.addSuppressed(closing);
            }
            throw e;
        }
    }

    private Communicator(Engine engine, FailureListener listener) {
        this.listener = listener;
        this.engine = engine;
        this.abortAfterBuild = () -> { };
    }

    /** Hands the engine's first failure to the listener, with this communicator. */
    private Consumer<RuntimeException> failureReporter(FailureListener l) {
        return l == null ? null : failure -> l.failed(this, failure);
    }

    // ---- building -------------------------------------------------------------------------------

    /**
     * A builder; nothing is read from the environment unless {@link Builder#fromEnvironment()} says so.
     *
     * @return a new builder with every setting at its default
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Joins the group described by the launcher's environment (torchrun, Slurm or Open MPI
     * variables; see {@link LaunchEnvironment}) on GPU {@code LOCAL_RANK}. Without launcher
     * variables it is a group of one rank on GPU 0, in process (no network, no port). The GPU is
     * checked before any rank waits for the others: a rank without a usable GPU fails at once
     * with CUDA's reason.
     *
     * @return this rank's communicator, its GPU current on the calling thread
     * @throws ConfigurationException if the launcher's variables are missing, malformed or contradict
     *     each other (for example {@code RANK} without {@code LOCAL_WORLD_SIZE} across hosts)
     * @throws dev.ar4j.cuda.CudaException if this rank's GPU cannot be used (no driver, no device, a
     *     device index beyond those visible)
     * @throws Ar4jException if joining the group fails (see {@link Builder#build()})
     */
    public static Communicator fromEnvironment() {
        return builder().fromEnvironment().build();
    }

    /**
     * Builds one communicator per device in this process (one JVM driving several GPUs): rank i
     * drives {@code devices[i]}. Each is built on its own thread, as the build is collective; use
     * each from a thread whose current device is its device ({@code Cuda.setDevice}). A device may
     * appear more than once (ranks sharing one GPU; build them with {@code nccl(false)}, as NCCL
     * refuses two ranks on one GPU).
     *
     * <p>Ranks sharing a GPU need a hardware work queue for each of their streams (their own and their
     * communicator's side stream; a split's communicators add one each): k of them need
     * {@code CUDA_DEVICE_MAX_CONNECTIONS} of at least 2k (CUDA's default is 8, so up to 4 ranks a GPU; 32, its
     * most, allows 16). Fewer, and a rank's
     * kernels could queue behind a peer's all-reduce that waits for them: the group is refused before
     * anything is built.
     *
     * @param devices   the CUDA ordinals, one per rank
     * @param configure applied to every rank's builder (staging size, policy, ...), may be null
     * @return the communicators, rank i at index i, each driving {@code devices[i]}
     * @throws ConfigurationException if more ranks share a GPU than {@code CUDA_DEVICE_MAX_CONNECTIONS}
     *     gives queues for (the message names the GPU, the count and the setting to use)
     */
    public static List<Communicator> localGroup(int[] devices, Consumer<Builder> configure) {
        Objects.requireNonNull(devices, "devices");
        int[] ordinals = devices.clone();
        HardwareQueues.checkLocalGroup(ordinals, System.getenv(HardwareQueues.VARIABLE));
        return LocalGroup.build(ordinals.length, (rank, rendezvous) -> {
            Builder b = builder();
            if (configure != null) {
                configure.accept(b);
            }
            return b.device(ordinals[rank]).rendezvous(rendezvous).build();
        });
    }

    // ---- all-reduce -----------------------------------------------------------------------------

    /**
     * In-place all-reduce (sum) of the whole buffer.
     *
     * @param buffer the device buffer to reduce in place, on this communicator's GPU, a whole number of
     *     {@code dtype} elements
     * @param dtype the element type
     * @param stream the stream the all-reduce is issued on; it returns before the reduction completes on that
     *     stream
     * @throws IllegalArgumentException if the buffer is on another device or holds no whole number of
     *     elements
     * @throws IllegalStateException if the communicator is closed or aborted, or used by
     *     another thread at the same time
     * @throws PeerLostException if a peer was lost (during this call or before it)
     * @throws OutOfStepException if the ranks fell out of step (during this call or before it)
     * @throws PeerTimeoutException if a custom kernel gave up waiting for a peer (during this call or before it)
     */
    public void allReduce(DeviceBuffer buffer, DType dtype, CudaStream stream) {
        allReduce(buffer, buffer, dtype, stream);
    }

    /**
     * All-reduce (sum) of {@code in} into {@code out}; {@code out} may be {@code in}. The element
     * count is {@code in.byteSize() / dtype.byteSize()}.
     *
     * @param in the input buffer, on this communicator's GPU
     * @param out the output buffer, as large as {@code in}, on the same GPU; may be {@code in}
     * @param dtype the element type
     * @param stream the stream the all-reduce is issued on
     * @throws IllegalArgumentException if the buffers differ in size, are on another device, or
     *                                  hold no whole number of elements
     * @throws NullPointerException if an argument is {@code null}
     * @throws IllegalStateException if the communicator is closed or aborted, or used by
     *     another thread at the same time
     * @throws PeerLostException if a peer was lost (during this call or before it)
     * @throws OutOfStepException if the ranks fell out of step (during this call or before it)
     * @throws PeerTimeoutException if a custom kernel gave up waiting for a peer (during this call or before it)
     */
    public void allReduce(DeviceBuffer in, DeviceBuffer out, DType dtype, CudaStream stream) {
        engine.allReduce(in, out, dtype, stream);
    }

    /**
     * All-reduce (sum) on raw device addresses of this communicator's GPU, e.g. from another
     * library's tensors. {@code out} may equal {@code in}; otherwise the ranges must not overlap.
     *
     * @param count  elements (positive)
     * @param stream a {@code cudaStream_t} (0 = legacy default stream)
     * @param in the input's device address on this communicator's GPU (16-byte alignment lets the custom
     *     kernels run)
     * @param out the output's device address; {@code in} itself or a range not overlapping the input
     * @param dtype the element type
     * @throws dev.ar4j.nccl.NcclDisabledException if the call needs NCCL and the communicator was built
     *     with {@code nccl(false)} (the message names the size and the reason)
     * @throws PeerLostException if a peer was lost (during this call or before it)
     * @throws OutOfStepException if the ranks fell out of step (during this call or before it)
     * @throws PeerTimeoutException if a custom kernel gave up waiting for a peer (during this call or before it)
     */
    public void allReduce(long in, long out, long count, DType dtype, long stream) {
        engine.allReduce(in, out, count, dtype, stream);
    }

    /**
     * All-reduce with a policy for this call only, instead of the configured one (benchmarks and
     * tests sweep algorithms with it). The PCIe gate setting stays as configured.
     *
     * @param in the input's device address on this communicator's GPU
     * @param out the output's device address; {@code in} itself or a range not overlapping the input
     * @param count the number of elements, positive
     * @param dtype the element type
     * @param stream a {@code cudaStream_t} (0 = legacy default stream)
     * @param policy the algorithm of this call ({@link Algorithm#AUTO} to let the dispatcher choose),
     *     overriding the configured policy
     * @return the decision that was carried out, with its reason
     * @throws NullPointerException if {@code dtype} or {@code policy} is {@code null}
     * @throws IllegalArgumentException if {@code count} is not positive
     * @throws dev.ar4j.nccl.NcclDisabledException if the decision needs NCCL and the communicator was
     *     built with {@code nccl(false)}
     * @throws IllegalStateException if the communicator is closed or aborted
     * @throws PeerLostException if a peer was lost (during this call or before it)
     * @throws OutOfStepException if the ranks fell out of step (during this call or before it)
     * @throws PeerTimeoutException if a custom kernel gave up waiting for a peer (during this call or before it)
     */
    public Decision allReduce(long in, long out, long count, DType dtype, long stream, Algorithm policy) {
        return engine.allReduce(in, out, count, dtype, stream, policy);
    }

    // ---- registration and graphs ----------------------------------------------------------------

    /**
     * Shares {@code buffer} with the other ranks once, so that all-reduces of inputs inside it need
     * no staging copy. Collective: every rank registers a buffer of the same size, in the same
     * order. Registering does not transfer ownership; {@link #unregister} it (collectively)
     * before closing it. A registered buffer found closed at a call is no longer used zero-copy.
     *
     * @param buffer the buffer to share, on this communicator's GPU
     * @throws IllegalArgumentException if {@code buffer} is on another GPU
     * @throws IllegalStateException if the communicator is closed or aborted
     * @throws PeerLostException if a peer is lost during the registration, or was lost before
     * @throws Ar4jException if the registration fails otherwise; the ranks may then be out of step, so the
     *     communicator is failed
     */
    public void register(DeviceBuffer buffer) {
        engine.register(buffer);
    }

    /**
     * Ends the registration of {@code buffer} (collective: every rank unregisters its buffer of
     * the same size, in the same order). Later all-reduces of inputs inside it go through the
     * staging buffer. Waits for the GPU to finish the launches that read the buffer, then frees
     * its registration slot, so the range can be registered again. While a captured CUDA graph
     * still names the buffer, the slot is kept (a replay reads it) and registering an overlapping
     * buffer is refused until those graphs are destroyed. The peers' IPC mappings of the buffer
     * stay until {@link #close()}.
     *
     * @param buffer the registered buffer whose registration ends
     * @throws IllegalArgumentException on every rank, if any rank's buffer is not registered or
     *                                  the ranks' sizes differ
     */
    public void unregister(DeviceBuffer buffer) {
        engine.unregister(buffer);
    }

    /**
     * Opens a capture scope: all-reduces issued on a capturing stream until the scope is closed
     * are recorded; {@link GraphCapture#close()} (after {@code cudaStreamEndCapture}, before the
     * first replay) compares every call's signature across the ranks and shares the inputs so that
     * replays are zero-copy. Collective on close.
     *
     * @return the open capture scope, to be closed after the capture ends
     * @throws IllegalStateException if the communicator is closed or aborted, a capture
     *     scope is already open, or all-reduces were captured outside a scope
     */
    public GraphCapture graphCapture() {
        CaptureRecorder.Scope scope = engine.openCapture();
        return new GraphCapture(() -> engine.finishCapture(scope));
    }

    // ---- failure --------------------------------------------------------------------------------

    /**
     * Fails this communicator at once, from any thread: poisons the custom kernels (which tells
     * the peers' kernels too, once the poison word is connected), aborts NCCL and tells the
     * listener; a call in flight gets up to 200 ms to leave before NCCL is aborted under it, and
     * every later call throws {@link IllegalStateException}. Idempotent. Then {@link #close()} it.
     */
    public void abort() {
        engine.abort();
    }

    /**
     * What this communicator knows about its group now; any thread, cheap.
     *
     * @return the current status, the lost peer (or -1) and the failure's message
     */
    public Health health() {
        return engine.health();
    }

    /**
     * Throws the failure if this communicator failed (a custom kernel gave up waiting for a peer,
     * a peer was lost, ...); returns otherwise. Reads the kernels' failure record now (one small
     * copy), so a call followed by a stream synchronisation and this check either produced the
     * exact sum or throws: a peer's poison that turned this rank's output into NaN is reported
     * here even before the watchdog's next poll.
     */
    public void checkPeers() {
        engine.checkPeers();
    }

    // ---- observation ----------------------------------------------------------------------------

    /**
     * What an all-reduce of {@code bytes} bytes of {@code dtype} would run, for registered,
     * unregistered and misaligned inputs, each with its reason, and the configuration with the
     * source of each value.
     *
     * @param bytes the size of the call in bytes
     * @param dtype the element type
     * @return a multi-line, human-readable report of the decisions and the configuration
     */
    public String explain(long bytes, DType dtype) {
        return engine.explain(bytes, dtype);
    }

    /**
     * All-reduce followed by the residual add and RMSNorm of a tensor-parallel layer, in one call:
     * {@code residualOut = allreduce(in) + residual} and
     * {@code out = residualOut * rsqrt(mean(residualOut^2) + eps) * weight}, row by row over
     * {@code in.byteSize() / (hidden * dtype size)} rows, with fp32 arithmetic; the same bits on
     * every rank. When the configured policy picks the push or the one-stage kernel for this size
     * (and the row is a multiple of 16 bytes, at most {@link RmsNorm#FUSED_MAX_HIDDEN}
     * elements), one fused kernel does it all: the push one on the input where it lies; the one-stage
     * one on a registered input that no output overlaps, otherwise on a copy of the input in the
     * staging buffer (when it fits there). Otherwise the all-reduce runs as {@link #allReduce} decides
     * (a custom kernel or NCCL) and then the residual add + RMSNorm kernel
     * ({@link RmsNorm#residualRmsNorm}); every way gives bitwise the same result.
     * {@link #explainResidualRmsNorm} says which runs.
     *
     * @param in          {@code rows * hidden} elements of this rank's partial sums; may be {@code out}
     * @param residual    {@code rows * hidden} elements; may be {@code residualOut}
     * @param weight      {@code hidden} elements
     * @param out         receives the normalised rows; not {@code residual} nor {@code residualOut}
     * @param residualOut receives {@code allreduce(in) + residual}
     * @param hidden      elements per row, 1 to {@link RmsNorm#MAX_HIDDEN}
     * @param eps         added to the mean square, finite and greater than 0
     * @param dtype       element type of every buffer
     * @param stream      the stream to enqueue on
     * @return {@code true} when a fused kernel ran, {@code false} for all-reduce then the separate kernel
     * @throws IllegalArgumentException if a size, the row shape, the device or an overlap is wrong (the message
     *     says what is accepted)
     * @throws IllegalStateException if the communicator is closed or aborted, or used by
     *     another thread at the same time
     * @throws PeerLostException if a peer was lost (during this call or before it)
     * @throws OutOfStepException if the ranks fell out of step (during this call or before it)
     * @throws PeerTimeoutException if a custom kernel gave up waiting for a peer (during this call or before it)
     */
    public boolean allReduceResidualRmsNorm(DeviceBuffer in, DeviceBuffer residual, DeviceBuffer weight,
                                            DeviceBuffer out, DeviceBuffer residualOut, int hidden, float eps,
                                            DType dtype, CudaStream stream) {
        return engine.allReduceResidualRmsNorm(in, residual, weight, out, residualOut, hidden, eps, dtype, stream);
    }

    /**
     * What {@link #allReduceResidualRmsNorm} runs for {@code bytes} bytes of {@code dtype} in rows of
     * {@code hidden} elements (16-byte aligned buffers, an unregistered input), and why.
     *
     * @param bytes  the size of the input in bytes, a positive multiple of {@code hidden * dtype size}
     * @param hidden elements per row, positive
     * @param dtype  the element type
     * @return one line: the fused kernel, or the all-reduce's decision followed by the separate kernel
     */
    public String explainResidualRmsNorm(long bytes, int hidden, DType dtype) {
        return explainResidualRmsNorm(bytes, hidden, dtype, false);
    }

    /**
     * What {@link #allReduceResidualRmsNorm} runs for {@code bytes} bytes of {@code dtype} in rows of
     * {@code hidden} elements (16-byte aligned buffers; outputs that do not overlap the input), with a
     * registered or an unregistered input, and why.
     *
     * @param bytes           the size of the input in bytes, a positive multiple of {@code hidden * dtype size}
     * @param hidden          elements per row, positive
     * @param dtype           the element type
     * @param registeredInput whether the input lies in a {@link #register registered} buffer
     * @return one line: the fused kernel, or the all-reduce's decision followed by the separate kernel
     */
    public String explainResidualRmsNorm(long bytes, int hidden, DType dtype, boolean registeredInput) {
        return engine.explainResidualRmsNorm(bytes, hidden, dtype, registeredInput);
    }

    /**
     * The decision for one call's shape.
     *
     * @param bytes the size of the call in bytes
     * @param dtype the element type
     * @param aligned16 whether input and output addresses are 16-byte aligned
     * @param registeredInput whether the input lies inside a registered buffer (zero-copy)
     * @return the algorithm the configured policy picks for that shape, with its reason
     */
    public Decision decide(long bytes, DType dtype, boolean aligned16, boolean registeredInput) {
        return engine.decide(bytes, dtype, aligned16, registeredInput);
    }

    /**
     * This rank.
     *
     * @return this process's rank, 0 to {@link #worldSize()} - 1
     */
    public int rank() {
        return engine.rank();
    }

    /**
     * Ranks in the group.
     *
     * @return the number of ranks in the group, at least 1
     */
    public int worldSize() {
        return engine.worldSize();
    }

    /**
     * The CUDA ordinal this rank drives.
     *
     * @return the CUDA device ordinal
     */
    public int device() {
        return engine.device();
    }

    /**
     * The detected (or overridden) topology.
     *
     * @return the topology the dispatcher decides with
     */
    public Topology topology() {
        return engine.topology();
    }

    /**
     * Whether the custom kernels were set up (otherwise every call goes to NCCL).
     *
     * @return {@code true} if the custom kernels are set up
     */
    public boolean hasCustomKernels() {
        return engine.hasCustomKernels();
    }

    /**
     * The staging buffer size in bytes.
     *
     * @return the staging buffer size in bytes, a multiple of 16
     */
    public long stagingBytes() {
        return engine.stagingBytes();
    }

    /**
     * The other collectives of this group, through NCCL: all-gather, reduce-scatter, broadcast,
     * reduce, send/recv and all-reduce with any reduction, for every dtype the installed NCCL
     * supports (see {@link dev.ar4j.nccl.NcclCollectives}); group them with
     * {@link dev.ar4j.nccl.NcclCollectives#startGroup()}. Arguments are checked as strictly as
     * {@code allReduce}'s. The watchdog, {@link #abort()} and {@link #close()} cover these calls too.
     *
     * @return the collectives of this group's NCCL communicator
     * @throws IllegalStateException when the communicator failed or is closed
     * @throws dev.ar4j.nccl.NcclDisabledException when it was built with {@code nccl(false)}
     */
    public NcclCollectives collectives() {
        return engine.collectives();
    }

    /**
     * Splits this group into sub-communicators, like {@code ncclCommSplit} and
     * {@code MPI_Comm_split}: collective over this group (every rank calls it, in the same order as
     * its other collective calls). The ranks that give the same {@code color} form one
     * sub-communicator; their sub-ranks follow {@code key}, ties broken by the rank in this group.
     * Each sub-communicator is a full communicator of its own: it finds its own topology, sets up
     * its own custom kernels (signal blocks and staging buffers shared through IPC or direct peer
     * access) when its ranks share a host and its size allows them, and its own NCCL communicator
     * (unless this one was built with {@code nccl(false)}). It inherits this communicator's
     * settings (device, staging size, timeouts, policy, launch configuration, NCCL and PDL on/off,
     * watchdog interval, failure listener) and meets its ranks through this communicator's
     * rendezvous, under keys of its own.
     *
     * <pre>{@code
     * // 8 ranks as 2 data-parallel replicas of 4-way tensor parallelism:
     * try (Communicator tp = comm.split(comm.rank() / 4, comm.rank());
     *      Communicator dp = comm.split(comm.rank() % 4, comm.rank())) {
     *     tp.allReduce(activations, DType.BFLOAT16, stream);
     * }
     * }</pre>
     *
     * <p>The caller owns the sub-communicator and closes it, before this communicator; how the two
     * fail together is in the {@linkplain dev.ar4j package documentation}.
     *
     * @param color the sub-group to join: 0 or more, or -1 to join none (this rank still takes part
     *     in the split, and gets {@code null})
     * @param key orders the ranks of one color: lower keys get lower sub-ranks, equal keys are ordered
     *     by rank in this group
     * @return this rank's sub-communicator (rank = its sub-rank, its GPU current on the calling thread),
     *     or {@code null} when {@code color} is -1 (a {@code null} resource in try-with-resources is
     *     not closed, so the example above works for every rank)
     * @throws IllegalArgumentException on every rank alike, if any rank gave a color below -1 (this
     *     communicator stays usable)
     * @throws IllegalStateException if this communicator is closed or aborted, or
     *     another thread is inside a call of it (a second split at the same time is refused so); or if
     *     building the sub-communicator failed on a rendezvous step of its own
     * @throws PeerLostException if a rank of this group was lost (during the split or before it)
     * @throws dev.ar4j.rendezvous.RendezvousException if the sub-communicator's ranks cannot meet (a
     *     timeout, a lost rank); this communicator stays usable
     * @throws Ar4jException if the sub-communicator's GPU or NCCL setup fails (see {@link Builder#build()})
     */
    public Communicator split(int color, int key) {
        Communicator[] child = new Communicator[1];
        Engine sub = engine.split(color, key, listener == null ? null : failure -> listener.failed(child[0], failure));
        if (sub == null) {
            return null;
        }
        child[0] = new Communicator(sub, listener);
        return child[0];
    }

    /**
     * Whether the group has an NCCL communicator (false when built with {@code nccl(false)}).
     *
     * @return {@code true} if the group has an NCCL communicator
     */
    public boolean hasNccl() {
        return engine.hasNccl();
    }

    /**
     * Waits until every rank of the group called {@code barrier()} (collective, in the same order
     * as the group's other collective calls), bounded by the rendezvous timeout. Use it, for
     * example, before {@link #close()}, so that no peer still reads this rank's buffers.
     *
     * @throws IllegalStateException if the communicator is closed or aborted, or used by
     *     another thread at the same time
     * @throws PeerLostException if a peer was lost (during this call or before it)
     * @throws OutOfStepException if the ranks fell out of step (during this call or before it)
     * @throws dev.ar4j.rendezvous.RendezvousException if the other ranks did not arrive in time
     */
    public void barrier() {
        engine.barrier();
    }

    /**
     * Every rank's {@code value}, in rank order: collective (every rank calls it, in the same order
     * as the group's other collective calls), through the group's rendezvous, bounded by the
     * rendezvous timeout. For small host-side values (a measurement, a status), not for tensors:
     * those go through {@link #collectives()}.
     *
     * @param value this rank's bytes, at most a few MiB; not {@code null}
     * @return every rank's bytes, rank r at index r (this rank's is a copy of {@code value})
     * @throws NullPointerException if {@code value} is {@code null}
     * @throws IllegalStateException if the communicator is closed or aborted, or used by
     *     another thread at the same time
     * @throws PeerLostException if a peer was lost (during this call or before it)
     * @throws OutOfStepException if the ranks fell out of step (during this call or before it)
     * @throws dev.ar4j.rendezvous.RendezvousException if the other ranks did not arrive in time
     */
    public byte[][] exchange(byte[] value) {
        return engine.exchange(value);
    }

    /**
     * Frees everything this rank allocated and opened, exactly once, never while a call uses it:
     * new calls are refused at once, a call in flight gets up to 2 s to leave, then the
     * communicator is failed (kernels poisoned, NCCL aborted) and the call gets 2 s more. Not
     * collective, so call it once every rank's last all-reduce of this group has completed (peers
     * may still read this rank's buffers until then), for example after a {@link #barrier()}. A failed or aborted group's NCCL communicator is aborted, not
     * destroyed. Any thread.
     *
     * @throws IllegalStateException if a call is still inside after that (nothing was freed; call
     *                               close again once it returned)
     */
    @Override
    public void close() {
        abortAfterBuild.close();
        engine.close();
    }

    @Override
    public String toString() {
        return "Communicator[" + engine.describe() + "]";
    }

    /** The engine behind this communicator (tests in this module reach it through {@code EngineAccess}). */
    Engine engine() {
        return engine;
    }

    /**
     * Told once when a communicator fails ({@link Builder#onFailure}): a peer was lost, a
     * kernel gave up waiting, NCCL reported an error, or the ranks fell out of step (or
     * {@link #abort()} was called). By then the custom kernels are poisoned and NCCL is
     * aborted; calls on the communicator throw. Called on the thread that saw the failure (often the
     * communicator's watchdog): return quickly and never block; close the communicator from another
     * thread.
     */
    @FunctionalInterface
    public interface FailureListener {

        /**
         * Called once, with the first failure of {@code communicator}; later failures are not reported.
         *
         * @param communicator the communicator that failed
         * @param failure      what failed, naming the rank where known
         *                     ({@link PeerLostException#peer()}, {@link PeerTimeoutException#peer()})
         */
        void failed(Communicator communicator, RuntimeException failure);
    }

    /**
     * Configures and builds a {@link Communicator}. Every setter validates its value at once, and
     * {@link #build()} the whole.
     *
     * <p>Precedence: a value set here wins over the system property, which wins over the environment
     * variable, which wins over the default.
     */
    public static final class Builder {
        /** The settings as set so far; frozen into an immutable record at build. */
        private final Settings.Draft draft = new Settings.Draft();

        /**
         * Reads rank, world size, local rank and the rendezvous address from the launcher's environment.
         *
         * @return this builder
         */
        public Builder fromEnvironment() {
            draft.fromEnvironment = true;
            return this;
        }

        /**
         * Uses this map instead of {@code System.getenv()} for the launcher and configuration variables (tests).
         *
         * @param environment the variables to read instead of the process environment; copied, must not be
         *     {@code null} nor hold {@code null} keys or values
         * @return this builder
         * @throws NullPointerException if {@code environment} or one of its keys or values is {@code null}
         */
        public Builder environment(Map<String, String> environment) {
            draft.environment = Map.copyOf(environment);
            return this;
        }

        /**
         * Uses these instead of {@code System.getProperties()} for configuration (tests).
         *
         * @param properties the properties to read instead of the system properties; kept by reference, not
         *     copied
         * @return this builder
         */
        public Builder systemProperties(Properties properties) {
            draft.systemProperties = properties;
            return this;
        }

        /**
         * This process's rank (with {@link #worldSize(int)} and {@link #masterAddress(String, int)}, instead of the environment).
         *
         * @param rank this process's rank, 0 to world size - 1 (checked against the world size, and against the
         *     rendezvous's rank if one is given, at {@code build()})
         * @return this builder
         */
        public Builder rank(int rank) {
            draft.rank = rank;
            return this;
        }

        /**
         * The number of ranks.
         *
         * @param worldSize the number of ranks in the group, at least 1
         * @return this builder
         */
        public Builder worldSize(int worldSize) {
            draft.worldSize = worldSize;
            return this;
        }

        /**
         * This rank's index on its host; the default GPU.
         *
         * @param localRank this rank's index among the ranks on its host, 0 to the local world size - 1
         * @return this builder
         */
        public Builder localRank(int localRank) {
            draft.localRank = localRank;
            return this;
        }

        /**
         * The number of ranks on this host. Without it (and without launcher variables) a group
         * whose rendezvous address is loopback is taken to be all on this host.
         *
         * @param localWorldSize the number of ranks on this host, at least 1
         * @return this builder
         */
        public Builder localWorldSize(int localWorldSize) {
            draft.localWorldSize = localWorldSize;
            return this;
        }

        /**
         * The CUDA ordinal to drive (default: the local rank).
         *
         * @param device the CUDA device ordinal, 0 or more (below the number of visible devices, checked at
         *     {@code build()})
         * @return this builder
         * @throws IllegalArgumentException if {@code device} is negative
         */
        public Builder device(int device) {
            if (device < 0) {
                throw new IllegalArgumentException("device ordinal must be >= 0, got " + device);
            }
            draft.device = device;
            return this;
        }

        /**
         * Where rank 0 serves the TCP rendezvous (rank 0 binds it; loopback unless an address is given).
         *
         * @param host the host name or address of rank 0's rendezvous server; not {@code null}
         * @param port the TCP port of rank 0's rendezvous server
         * @return this builder
         * @throws NullPointerException if {@code host} is {@code null}
         */
        public Builder masterAddress(String host, int port) {
            draft.masterAddr = Objects.requireNonNull(host, "host");
            draft.masterPort = port;
            return this;
        }

        /**
         * Uses an existing rendezvous (an implementation of the application's); not closed by the communicator.
         *
         * @param rendezvous the rendezvous to join the group through; not {@code null}. The rank is its rank
         *     unless {@link #rank(int)} is set too, in which case the two must agree (checked at {@code build()})
         * @return this builder
         * @throws NullPointerException if {@code rendezvous} is {@code null}
         */
        public Builder rendezvous(Rendezvous rendezvous) {
            draft.rendezvous = Objects.requireNonNull(rendezvous, "rendezvous");
            return this;
        }

        /**
         * Size of the staging buffer and the two-stage scratch (default 8 MiB, multiple of 16).
         *
         * @param bytes the staging size in bytes: a multiple of 16 from 16 to 4 GiB
         * @return this builder
         * @throws IllegalArgumentException if {@code bytes} is not a multiple of 16 in that range
         */
        public Builder stagingBytes(long bytes) {
            BuilderChecks.stagingBytes(bytes);
            draft.stagingBytes = bytes;
            return this;
        }

        /**
         * How long a custom kernel waits for a peer before it gives up (default 30 s).
         *
         * @param timeout how long a kernel spins on a peer, 1 ms to 24 h
         * @return this builder
         * @throws IllegalArgumentException if {@code timeout} is {@code null} or outside 1 ms to 24 h
         */
        public Builder kernelTimeout(Duration timeout) {
            BuilderChecks.kernelTimeout(timeout);
            draft.kernelTimeout = timeout;
            return this;
        }

        /**
         * How long each rendezvous step waits for the other ranks (default 2 min).
         *
         * @param timeout the wait of each rendezvous step: positive, at most 24 h
         * @return this builder
         * @throws IllegalArgumentException if {@code timeout} is {@code null}, zero, negative or longer than 24 h
         */
        public Builder rendezvousTimeout(Duration timeout) {
            BuilderChecks.rendezvousTimeout(timeout);
            draft.rendezvousTimeout = timeout;
            return this;
        }

        /**
         * Capacity for registered buffers plus captured graph inputs (default 4096).
         *
         * @param n the number of registration slots, 1 to 1,048,576
         * @return this builder
         * @throws IllegalArgumentException if {@code n} is outside 1 to 1,048,576
         */
        public Builder maxRegistrations(int n) {
            BuilderChecks.maxRegistrations(n);
            draft.maxRegistrations = n;
            return this;
        }

        /**
         * The algorithm policy (highest precedence): {@link Algorithm#AUTO} (the default: the dispatcher
         * chooses by topology and size), or a forced {@link Algorithm#ONE_STAGE}, {@link Algorithm#TWO_STAGE},
         * {@link Algorithm#PUSH} or {@link Algorithm#NCCL}. The system property and environment variable
         * take the same policies by name ({@link Algorithm#parse}).
         *
         * @param policy the policy; a policy constant ({@link Algorithm#isPolicy()}), not {@code null}
         * @return this builder
         * @throws NullPointerException if {@code policy} is {@code null}
         * @throws IllegalArgumentException if {@code policy} is not a policy ({@link Algorithm#LOCAL})
         */
        public Builder algorithmPolicy(Algorithm policy) {
            Objects.requireNonNull(policy, "policy");
            if (!policy.isPolicy()) {
                throw new IllegalArgumentException(policy + " is not an algorithm policy; accepted: "
                        + Algorithm.ACCEPTED_VALUES);
            }
            draft.algorithmPolicy = policy;
            return this;
        }

        /**
         * Lifts (true) or keeps (false) the PCIe gate for more than two GPUs without full NVLink.
         *
         * @param force {@code true} to allow the custom kernels on PCIe-only groups of more than two GPUs,
         *     {@code false} to keep them on NCCL
         * @return this builder
         */
        public Builder forceCustomOnPcie(boolean force) {
            draft.forceCustomOnPcie = force;
            return this;
        }

        /**
         * Overrides the detected "NVLink between every pair" (tests, or hardware the probe misjudges).
         *
         * @param nvlink {@code true} to treat every pair of GPUs as joined by NVLink, {@code false} to treat none
         *     as joined
         * @return this builder
         */
        public Builder fullNvlink(boolean nvlink) {
            draft.nvlinkOverride = nvlink;
            return this;
        }

        /**
         * Overrides the detected "P2P between every pair".
         *
         * @param p2p {@code true} to treat every pair of GPUs as able to access each other's memory,
         *     {@code false} to treat none as able
         * @return this builder
         */
        public Builder p2pAllPairs(boolean p2p) {
            draft.p2pOverride = p2p;
            return this;
        }

        /**
         * Up to which size the automatic policy uses the push kernel (0: never; at most
         * 512 KiB). Default: 512 KiB for two ranks, 256 KiB for more.
         *
         * @param bytes the largest size in bytes sent to the push kernel by the automatic policy, 0 to 524,288
         *     ({@link Algorithm#PUSH_MAX_BYTES})
         * @return this builder
         * @throws IllegalArgumentException if {@code bytes} is negative or above {@link Algorithm#PUSH_MAX_BYTES}
         */
        public Builder pushUpToBytes(long bytes) {
            if (bytes < 0 || bytes > Algorithm.PUSH_MAX_BYTES) {
                throw new IllegalArgumentException("pushUpToBytes must be between 0 and " + Algorithm.PUSH_MAX_BYTES
                        + " (the push kernel's limit), got " + bytes);
            }
            draft.pushUpToBytes = bytes;
            return this;
        }

        /**
         * Overrides the custom kernels' launch geometry (defaults: one block per SM, at most 128,
         * of 512 threads; with several ranks on one GPU, the smallest SM count / ranks per GPU).
         * Every rank must give the same values (checked at build).
         *
         * @param maxBlocks 1 to 128
         * @param threads   a multiple of 32, 32 to 1024
         * @return this builder
         * @throws IllegalArgumentException if {@code maxBlocks} or {@code threads} is outside its range
         */
        public Builder launchConfig(int maxBlocks, int threads) {
            BuilderChecks.launchConfig(maxBlocks, threads);
            draft.launchBlocks = maxBlocks;
            draft.launchThreads = threads;
            return this;
        }

        /**
         * Whether the group sets up NCCL (default true; else system property
         * {@code ar4j.nccl}, environment {@code AR4J_NCCL}). Without
         * NCCL, every call the dispatcher would send to NCCL throws {@link dev.ar4j.nccl.NcclDisabledException}
         * naming the size and why, instead of falling back silently: for ranks sharing one GPU
         * (which NCCL refuses), and for users who want a fallback to be an error.
         *
         * @param enabled {@code false} to build the group without NCCL, {@code true} to set it up
         * @return this builder
         */
        public Builder nccl(boolean enabled) {
            draft.ncclEnabled = enabled;
            return this;
        }

        /**
         * Whether the custom kernels use programmatic dependent launch on GPUs of compute capability
         * 9.0 and newer (default true; else system property {@code ar4j.pdl}, environment
         * {@code AR4J_PDL}, each {@code 0|1|false|true|off|on}): a kernel then starts while the
         * previous one on the stream finishes and waits ({@code griddepcontrol.wait}) before its first
         * dependent access, which saves a few hundred nanoseconds a call in CUDA graphs. Older GPUs are
         * unaffected.
         *
         * @param enabled false to launch the kernels plainly
         * @return this builder
         */
        public Builder pdl(boolean enabled) {
            draft.pdlEnabled = enabled;
            return this;
        }

        /**
         * How often the watchdog polls the kernels' timeout record and NCCL's asynchronous error
         * (default 100 ms; else system property {@code ar4j.watchdog.interval.ms} or
         * environment {@code AR4J_WATCHDOG_INTERVAL_MS}, in milliseconds). Zero stops the
         * polling (peer-loss reports from the rendezvous are still acted on).
         *
         * @param interval zero, or 1 ms to 60 s
         * @return this builder
         * @throws IllegalArgumentException if {@code interval} is {@code null}, negative, or between zero and 1
         *     ms, or above 60 s
         */
        public Builder watchdogInterval(Duration interval) {
            BuilderChecks.watchdogInterval(interval);
            draft.watchdogInterval = interval;
            return this;
        }

        /** The settings as they stand (tests of the checks). */
        Settings settings() {
            return draft.freeze();
        }

        private FailureListener failureListener;
        private BuildAbort buildAbort;

        private Builder() {
        }

        /**
         * Told once when the communicator fails or is aborted (see {@link FailureListener}).
         *
         * @param listener called once, on the thread that notices, with the first failure; not {@code null}
         * @return this builder
         * @throws NullPointerException if {@code listener} is {@code null}
         */
        public Builder onFailure(FailureListener listener) {
            this.failureListener = Objects.requireNonNull(listener, "listener");
            return this;
        }

        /**
         * Lets {@code abort} end the build from another thread, and abort the communicator once it is
         * built (see {@link BuildAbort}).
         *
         * @param abort the handle (it may serve several builds); not {@code null}
         * @return this builder
         * @throws NullPointerException if {@code abort} is {@code null}
         */
        public Builder abortWith(BuildAbort abort) {
            this.buildAbort = Objects.requireNonNull(abort, "abort");
            return this;
        }

        /**
         * Joins the group: collective, blocking until every rank has joined (bounded by the
         * rendezvous timeout, and ended early by a {@link #abortWith BuildAbort}). On the calling
         * thread, the communicator's GPU becomes current.
         *
         * @return this rank's communicator
         * @throws IllegalArgumentException if the builder's rank, world size or rendezvous are missing or
         *     disagree
         * @throws ConfigurationException if a launcher variable or an {@code AR4J_*} / {@code ar4j.*} setting
         *     is missing or invalid (the message names it and what is accepted)
         * @throws dev.ar4j.rendezvous.RendezvousException if the ranks cannot meet (timeout, refusal, a lost
         *     rank)
         * @throws NativeLibraryException if the native libraries cannot be loaded
         * @throws dev.ar4j.cuda.CudaException if the GPU cannot be set up
         * @throws BuildAbortedException if the {@link #abortWith BuildAbort} was aborted before or during the build
         */
        public Communicator build() {
            Settings settings = draft.freeze();
            return new Communicator(settings, failureListener, buildAbort == null ? AbortSignal.none() : buildAbort.signal());
        }
    }
}
