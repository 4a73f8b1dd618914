package dev.ar4j.nccl;

import dev.ar4j.DType;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Optional;
import java.util.function.BooleanSupplier;

/**
 * One rank's NCCL communicator ({@code ncclComm_t}), bound to the device that was current when it
 * was made. Owned: exactly one of {@link #close()}, {@link #destroyOrAbort(boolean)} and
 * {@link #abort()} frees it, and never while another thread is inside a call on it.
 *
 * <p>Two kinds. {@link #initRank(NcclUniqueId, int, int, Duration)} makes a <b>non-blocking</b>
 * communicator ({@code blocking = 0}): no NCCL call blocks; each wait for NCCL
 * ({@code ncclInProgress}) is a poll of {@code ncclCommGetAsyncError} bounded by the timeout given
 * at init, ended early by {@link #abort()} from any thread, and a wait that expires aborts the
 * communicator and throws {@link NcclTimeoutException}. {@link #initRank(NcclUniqueId, int, int)}
 * makes a blocking one, as before: its init has no deadline.
 *
 * <p>The collectives are in {@link #collectives()}; {@link #allReduceSum} stays here. One thread
 * at a time may call into a communicator (NCCL's rule); a call from a second thread while the first
 * is inside throws {@link IllegalStateException} naming both. {@link #asyncError()} and
 * {@link #abort()} are the exceptions: safe from any thread at any time. Use after
 * close or abort throws {@link IllegalStateException}; so does use after a fatal NCCL error
 * ({@link #isFailed()}), after which only close or abort make sense.
 */
public final class NcclCommunicator implements AutoCloseable {
    /** {@code NCCL_WIN_DEFAULT}. */
    public static final int WINDOW_DEFAULT = NcclWindow.DEFAULT;
    /** {@code NCCL_WIN_COLL_SYMMETRIC}: every rank registers a buffer of the same size from {@code ncclMemAlloc}. */
    public static final int WINDOW_COLLECTIVE_SYMMETRIC = NcclWindow.COLLECTIVE_SYMMETRIC;
    /** {@code NCCL_WIN_STRICT_ORDERING}. */
    public static final int WINDOW_STRICT_ORDERING = NcclWindow.STRICT_ORDERING;
    /** {@code NCCL_SPLIT_NOCOLOR}: the color of a rank that takes part in a {@link #split} but joins no new communicator. */
    public static final int SPLIT_NO_COLOR = -1;
    /** The bound on each NCCL wait of a communicator made by the blocking {@link #initRank(NcclUniqueId, int, int)}. */
    public static final Duration BLOCKING_WAIT_TIMEOUT = Duration.ofMinutes(5);

    private final NcclCalls calls;
    private final MemorySegment comm;
    private final int rank;
    private final int nranks;
    private final int device;
    private final boolean blocking;
    private final Duration timeout;
    private final NcclSupport support;
    private final NcclCallsInFlight inFlight = new NcclCallsInFlight();
    private final NcclCallProtocol protocol;
    private final NcclCommTeardown teardown;
    private final NcclCollectives collectives;
    private final String site;
    private volatile int computeCapabilityMajor;

    NcclCommunicator(NcclCalls calls, MemorySegment comm, int rank, int nranks, int device, boolean blocking,
                     Duration timeout, NcclSupport support) {
        this.calls = calls;
        this.comm = comm;
        this.rank = rank;
        this.nranks = nranks;
        this.device = device;
        this.blocking = blocking;
        this.timeout = timeout;
        this.support = support;
        this.site = NcclArguments.site(rank, nranks);
        this.protocol = new NcclCallProtocol(this, calls, comm, rank, nranks, timeout, inFlight);
        this.teardown = new NcclCommTeardown(this, calls, comm, rank, nranks, blocking, timeout, inFlight, protocol);
        this.collectives = new NcclCollectives(this);
    }

    /**
     * Joins the communicator named by {@code id} as {@code rank} of {@code nranks}, on the calling
     * thread's current device ({@code ncclCommInitRank}), blocking until all ranks have joined,
     * with no deadline. Prefer {@link #initRank(NcclUniqueId, int, int, Duration)}.
     *
     * @param id the unique id rank 0 made ({@link NcclUniqueId#generate()}) and sent to every rank
     * @param nranks the number of ranks, at least 1
     * @param rank this process's rank, 0 to {@code nranks - 1}
     * @return this rank's communicator, owned by the caller
     * @throws IllegalArgumentException unless {@code nranks >= 1} and {@code 0 <= rank < nranks}
     * @throws NcclException if NCCL fails the init
     */
    public static NcclCommunicator initRank(NcclUniqueId id, int nranks, int rank) {
        return NcclCommInit.blocking(id, nranks, rank);
    }

    /**
     * Joins the communicator named by {@code id} as {@code rank} of {@code nranks}, on the calling
     * thread's current device, without blocking ({@code ncclCommInitRankConfig} with
     * {@code blocking = 0}, then {@code ncclCommGetAsyncError} polled until NCCL reports success).
     * {@code timeout} bounds the init and, afterwards, every wait of this communicator.
     *
     * @param id the unique id rank 0 made ({@link NcclUniqueId#generate()}) and sent to every rank
     * @param nranks the number of ranks, at least 1
     * @param rank this process's rank, 0 to {@code nranks - 1}
     * @param timeout the bound on the init and on every later wait of this communicator; positive
     * @return this rank's communicator, owned by the caller
     * @throws NcclTimeoutException     if the group has not formed within {@code timeout} (usually a
     *                                  rank that never started); the communicator was aborted
     * @throws NcclException            if NCCL failed the init; the communicator was aborted
     * @throws NcclUnsupportedException if the loaded NCCL is older than 2.14
     * @throws IllegalArgumentException unless {@code nranks >= 1}, {@code 0 <= rank < nranks} and
     *                                  {@code timeout} is positive
     */
    public static NcclCommunicator initRank(NcclUniqueId id, int nranks, int rank, Duration timeout) {
        return initRank(id, nranks, rank, timeout, () -> false);
    }

    /**
     * {@link #initRank(NcclUniqueId, int, int, Duration)} that also ends, by aborting the
     * half-made communicator and throwing {@link NcclAbortedException}, as soon as
     * {@code cancelled} returns true (asked every poll, i.e. at least once a millisecond, on the
     * calling thread): how a watchdog or an application's {@code abort()} stops an init whose
     * peers are gone without waiting for the timeout.
     *
     * @param id the unique id rank 0 made ({@link NcclUniqueId#generate()}) and sent to every rank
     * @param nranks the number of ranks, at least 1
     * @param rank this process's rank, 0 to {@code nranks - 1}
     * @param timeout the bound on the init and on every later wait of this communicator; positive
     * @param cancelled asked on every poll whether to give up; must be cheap and must not block
     * @return this rank's communicator, owned by the caller
     * @throws NcclAbortedException if {@code cancelled} returned true before the group formed; the
     *     communicator was aborted
     * @throws NcclTimeoutException if the group has not formed within {@code timeout}; the communicator was
     *     aborted
     * @throws NcclException if NCCL failed the init; the communicator was aborted
     * @throws IllegalArgumentException unless {@code nranks >= 1}, {@code 0 <= rank < nranks} and
     *     {@code timeout} is positive
     */
    public static NcclCommunicator initRank(NcclUniqueId id, int nranks, int rank, Duration timeout,
                                            BooleanSupplier cancelled) {
        return NcclCommInit.nonBlocking(id, nranks, rank, timeout, cancelled);
    }

    /**
     * This rank.
     *
     * @return this rank, 0 to {@link #nranks()} - 1
     */
    public int rank() {
        return rank;
    }

    /**
     * Number of ranks.
     *
     * @return the number of ranks, at least 1
     */
    public int nranks() {
        return nranks;
    }

    /**
     * The CUDA device the communicator uses.
     *
     * @return the CUDA device ordinal that was current at init
     */
    public int device() {
        return device;
    }

    /**
     * True for a communicator made by the blocking {@link #initRank(NcclUniqueId, int, int)}.
     *
     * @return {@code true} if blocking, {@code false} if non-blocking
     */
    public boolean isBlocking() {
        return blocking;
    }

    /**
     * The bound on each wait of this communicator (the init timeout; {@link #BLOCKING_WAIT_TIMEOUT} for a blocking one).
     *
     * @return the wait bound, positive
     */
    public Duration timeout() {
        return timeout;
    }

    /**
     * The loaded NCCL's version.
     *
     * @return the version the loaded library reports
     */
    public NcclVersion ncclVersion() {
        return support.version();
    }

    /**
     * The collectives on this communicator.
     *
     * @return the collectives object of this communicator (always the same one)
     */
    public NcclCollectives collectives() {
        return collectives;
    }

    /**
     * The {@code ncclComm_t} as a zero-length segment.
     *
     * @return the handle, valid until close or abort
     * @throws IllegalStateException if the communicator is closed or aborted
     */
    public MemorySegment handle() {
        ensureOpen();
        return comm;
    }

    /**
     * False once closed or aborted (or while that is under way).
     *
     * @return {@code true} until close or abort begins
     */
    public boolean isOpen() {
        return !inFlight.isClosing();
    }

    /**
     * True once NCCL reported a fatal error on this communicator or a wait on it expired; close then aborts.
     *
     * @return {@code true} if the communicator failed
     */
    public boolean isFailed() {
        return protocol.failure() != null;
    }

    /**
     * The first fatal failure, if {@link #isFailed()}.
     *
     * @return the first failure, or empty while the communicator has not failed
     */
    public Optional<NcclException> failure() {
        return Optional.ofNullable(protocol.failure());
    }

    /**
     * Enqueues an in-place or out-of-place sum all-reduce of {@code count} elements on {@code stream}:
     * {@link NcclCollectives#allReduce(DeviceBuffer, DeviceBuffer, long, NcclDataType, NcclReduction, CudaStream)}
     * with {@link NcclReduction#SUM}.
     *
     * @param send the input, at least {@code count} elements, on the communicator's device
     * @param receive the output, at least {@code count} elements, on the communicator's device; {@code send}
     *     for in place
     * @param count the number of elements, >= 0
     * @param dtype the element type
     * @param stream the stream to enqueue on, of the communicator's device
     * @throws IllegalArgumentException if a buffer is on another device or smaller than {@code count} elements
     * @throws IllegalStateException if the communicator is closed, aborted or failed, or used by another
     *     thread at the same time
     * @throws NcclException if NCCL reports an error
     */
    public void allReduceSum(DeviceBuffer send, DeviceBuffer receive, long count, DType dtype, CudaStream stream) {
        collectives.allReduce(send, receive, count, NcclDataType.of(dtype), NcclReduction.SUM, stream);
    }

    /**
     * Enqueues a sum all-reduce of {@code count} elements from {@code sendAddress} to
     * {@code receiveAddress} (device addresses; equal for in place) on the stream {@code streamHandle}
     * (a {@code cudaStream_t}; 0 is the legacy default stream). No checks beyond NCCL's own.
     *
     * @param sendAddress the input's device address
     * @param receiveAddress the output's device address; {@code sendAddress} for in place
     * @param count the number of elements, >= 0
     * @param dtype the element type
     * @param streamHandle the {@code cudaStream_t} to enqueue on, 0 for the legacy default stream
     * @throws IllegalArgumentException if {@code count} is negative
     * @throws IllegalStateException if the communicator is closed, aborted or failed, or used by another
     *     thread at the same time
     * @throws NcclException if NCCL reports an error
     */
    public void allReduceSum(long sendAddress, long receiveAddress, long count, DType dtype, long streamHandle) {
        collectives.allReduce(sendAddress, receiveAddress, count, NcclDataType.of(dtype), NcclReduction.SUM, streamHandle);
    }

    /**
     * Registers {@code buffer} as a window ({@code ncclCommWindowRegister}); a collective call that
     * every rank makes with its own buffer of the same size. With {@code NCCL_WIN_COLL_SYMMETRIC}
     * ({@link #WINDOW_COLLECTIVE_SYMMETRIC}) the buffers must come from {@link Nccl#memAlloc} and NCCL
     * may use its symmetric-memory kernels on them.
     *
     * @param flags {@link #WINDOW_DEFAULT}, {@link #WINDOW_COLLECTIVE_SYMMETRIC}, {@link #WINDOW_STRICT_ORDERING}, or'ed
     * @param buffer the buffer to register, on the communicator's device; from {@link Nccl#memAlloc} for a
     *     symmetric window
     * @return the registered window, to be deregistered (collectively) by closing it before this communicator
     *     is closed
     * @throws IllegalStateException if the communicator is closed, aborted or failed, or used by another
     *     thread at the same time
     * @throws NcclException if NCCL refuses the registration
     */
    public NcclWindow registerWindow(DeviceBuffer buffer, int flags) {
        return NcclWindow.register(this, buffer, flags);
    }

    /**
     * Splits this communicator ({@code ncclCommSplit}, collective over every rank of this one):
     * ranks that pass the same {@code color} form a new communicator, ordered by {@code key}
     * (ties by rank here). A rank that passes {@link #SPLIT_NO_COLOR} takes part and gets none.
     * The new communicator inherits this one's configuration (non-blocking stays non-blocking,
     * with the same timeout) and device, and is owned by the caller.
     *
     * @param color the sub-group to join, >= 0, or {@link #SPLIT_NO_COLOR}
     * @param key the rank order inside the new communicator (lower first)
     * @return the new communicator, empty for {@link #SPLIT_NO_COLOR}
     * @throws IllegalArgumentException unless {@code color >= 0} or {@code color == SPLIT_NO_COLOR}
     * @throws IllegalStateException    inside an {@link NcclGroup}
     * @throws NcclTimeoutException     if the split did not complete in time (the new communicator
     *                                  and this one were aborted)
     * @throws NcclUnsupportedException if the loaded NCCL has no {@code ncclCommSplit}
     * @throws NcclException if NCCL fails the split
     */
    public Optional<NcclCommunicator> split(int color, int key) {
        return NcclCommSplit.split(this, calls, inFlight, color, key);
    }

    /**
     * An error NCCL met asynchronously (a peer died, a timeout) as an exception, or empty
     * ({@code ncclCommGetAsyncError}; {@code ncclInProgress} counts as no error). Safe from any
     * thread, e.g. a watchdog. A fatal error also marks the communicator failed.
     *
     * @return the asynchronous error, or empty while there is none
     * @throws NcclException if {@code ncclCommGetAsyncError} itself fails
     */
    public Optional<NcclException> asyncError() {
        return protocol.asyncError();
    }

    /**
     * NCCL's last error message ({@code ncclGetLastError}); empty if none.
     *
     * @return the message, or an empty string
     * @throws IllegalStateException if the communicator is closed or aborted
     */
    public String lastError() {
        ensureOpen();
        return calls.lastError(comm);
    }

    void ensureOpen() {
        if (inFlight.isClosing()) {
            throw new IllegalStateException(this + " is closed or aborted");
        }
    }

    // ---- the call protocol the collectives use: enter, native call, settle, exit, fail ----

    /** Counts a call in (and into the thread's open {@link NcclGroup}), or throws if closed or failed. */
    void enter(String call) {
        protocol.enter(call);
    }

    /** Counts a call in unless the communicator is closing (then false, not counted); no group join. */
    boolean enterIfOpen() {
        return protocol.enterIfOpen();
    }

    /** Counts a call out (and releases the calling thread's claim, if it holds it). */
    void exit() {
        protocol.exit();
    }

    /** The final result of a native call between {@link #enter} and {@link #exit}: {@link NcclCallProtocol#settle}. */
    int settle(int result) {
        return protocol.settle(result);
    }

    /** Waits out the {@code ncclInProgress} of a group that used this communicator, once the group has ended. */
    void settleGroup() {
        protocol.settleGroup();
    }

    /** The exception for a call's final result (after {@link #exit}): {@link NcclCallProtocol#fail}. */
    NcclException fail(int result, String call) {
        return protocol.fail(result, call);
    }

    MemorySegment comm() {
        return comm;
    }

    /** {@code "on rank r of n"}, for messages. */
    String site() {
        return site;
    }

    NcclSupport support() {
        return support;
    }

    /** The device's compute capability (major), asked once. */
    int computeCapabilityMajor() {
        int major = computeCapabilityMajor;
        if (major == 0) {
            major = calls.computeCapabilityMajor(device);
            computeCapabilityMajor = major;
        }
        return major;
    }

    // ---- ending ----

    /**
     * Aborts the communicator ({@code ncclCommAbort}): stops its pending operations and frees it.
     * Safe from any thread: waits on other threads end with {@link NcclAbortedException}, and the
     * communicator is freed once they have left (they leave within about a millisecond on a
     * non-blocking communicator). If a close is already under way, makes it abort instead of
     * waiting for its finalize. Does nothing if already closed or aborted.
     *
     * @throws IllegalStateException if calls on other threads were still inside NCCL after 2 s (only
     *                               a blocking communicator's calls can be): the communicator is
     *                               then left allocated rather than freed under them, and ended
     */
    public void abort() {
        teardown.abort();
    }

    /**
     * Ends the communicator: {@link #destroyOrAbort(boolean) destroyOrAbort(false)}. Not collective
     * for a blocking communicator; for a non-blocking one, the finalize waits (bounded) for the
     * peers' outstanding work on this communicator.
     */
    @Override
    public void close() {
        destroyOrAbort(false);
    }

    /**
     * Ends the communicator exactly once. Aborts it ({@code ncclCommAbort}) when
     * {@code groupFailed}, when it {@link #isFailed() failed}, or when {@link #abort()} was asked
     * for. Otherwise a non-blocking communicator is finalized ({@code ncclCommFinalize}: flushes the
     * outstanding work, polled against {@link #timeout()}) and then destroyed; if the finalize
     * fails or expires, the communicator is aborted and the failure thrown. A blocking one is
     * destroyed ({@code ncclCommDestroy}) as before. Does nothing if already ended.
     *
     * @param groupFailed true when the caller knows the group failed (a peer lost, a kernel
     *                    timeout): NCCL work may be outstanding that no peer will complete
     */
    public void destroyOrAbort(boolean groupFailed) {
        teardown.destroyOrAbort(groupFailed);
    }

    @Override
    public String toString() {
        return "NcclCommunicator[rank " + rank + " of " + nranks + ", device " + device
                + (blocking ? ", blocking" : ", non-blocking") + "]";
    }
}
