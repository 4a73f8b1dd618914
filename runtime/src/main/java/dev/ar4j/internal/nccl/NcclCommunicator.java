package dev.ar4j.internal.nccl;

import dev.ar4j.bindings.nccl.nccl_h;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.nccl.NcclAbortedException;
import dev.ar4j.nccl.NcclCollectives;
import dev.ar4j.nccl.NcclDataType;
import dev.ar4j.nccl.NcclException;
import dev.ar4j.nccl.NcclGroup;
import dev.ar4j.nccl.NcclReduction;
import dev.ar4j.nccl.NcclTimeoutException;
import dev.ar4j.nccl.NcclUnsupportedException;
import dev.ar4j.nccl.NcclVersion;
import dev.ar4j.nccl.NcclWindow;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Optional;

import static dev.ar4j.internal.nccl.NcclArguments.ALL_GATHER;
import static dev.ar4j.internal.nccl.NcclArguments.ALL_REDUCE;
import static dev.ar4j.internal.nccl.NcclArguments.BROADCAST;
import static dev.ar4j.internal.nccl.NcclArguments.RECV;
import static dev.ar4j.internal.nccl.NcclArguments.REDUCE;
import static dev.ar4j.internal.nccl.NcclArguments.REDUCE_SCATTER;
import static dev.ar4j.internal.nccl.NcclArguments.SEND;
import static dev.ar4j.internal.nccl.NcclArguments.checkCount;
import static dev.ar4j.internal.nccl.NcclArguments.checkRank;

/**
 * One rank's NCCL communicator ({@code ncclComm_t}), bound to the device that was current when it
 * was made. Owned: exactly one of {@link #close()}, {@link #destroyOrAbort(boolean)} and
 * {@link #abort()} frees it, and never while another thread is inside a call on it.
 *
 * <p>Two kinds. {@link NcclCommInit#nonBlocking} makes a <b>non-blocking</b>
 * communicator ({@code blocking = 0}): no NCCL call blocks; each wait for NCCL
 * ({@code ncclInProgress}) is a poll of {@code ncclCommGetAsyncError} bounded by the timeout given
 * at init, ended early by {@link #abort()} from any thread, and a wait that expires aborts the
 * communicator and throws {@link NcclTimeoutException}. {@link NcclCommInit#blocking} makes a
 * blocking one: its init has no deadline.
 *
 * <p>It is its own {@link NcclCollectives}: each call checks its arguments, gates the data type and
 * reduction on the loaded NCCL, and runs the NCCL call under the {@link NcclCallProtocol}. One thread
 * at a time may call into a communicator (NCCL's rule); a call from a second thread while the first
 * is inside throws {@link IllegalStateException} naming both. {@link #asyncError()} and
 * {@link #abort()} are the exceptions: safe from any thread at any time. Use after
 * close or abort throws {@link IllegalStateException}; so does use after a fatal NCCL error
 * ({@link #isFailed()}), after which only close or abort make sense.
 */
public final class NcclCommunicator implements NcclCollectives, AutoCloseable {
    /** {@code NCCL_SPLIT_NOCOLOR}: the color of a rank that takes part in a {@link #split} but joins no new communicator. */
    public static final int SPLIT_NO_COLOR = -1;
    /** The bound on each NCCL wait of a communicator made by the blocking {@link NcclCommInit#blocking}. */
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
    private final NcclReductionGate gate;
    private final NcclBufferChecks checks;
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
        this.gate = new NcclReductionGate(nranks, support, site, this::computeCapabilityMajor);
        this.checks = new NcclBufferChecks(site, rank, nranks, device);
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
     * True for a communicator made by the blocking {@link NcclCommInit#blocking}.
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

    // ---- the collectives: checks, gate, then the NCCL call under the protocol ----

    @Override
    public NcclGroup startGroup() {
        return GroupScope.start();
    }

    @Override
    public NcclWindow registerWindow(DeviceBuffer buffer, int flags) {
        return RegisteredWindow.register(protocol, buffer, flags);
    }

    @Override
    public void allReduce(DeviceBuffer send, DeviceBuffer receive, long count, NcclDataType type, NcclReduction op,
                          CudaStream stream) {
        checks.allReduce(send, receive, count, type, stream);
        allReduce(send.address(), receive.address(), count, type, op, stream.handle());
    }

    @Override
    public void allReduce(long sendAddress, long receiveAddress, long count, NcclDataType type, NcclReduction op,
                          long streamHandle) {
        checkCount(ALL_REDUCE, site, count, "count");
        gate.requireReduction(type, op, ALL_REDUCE);
        int result = protocol.call(ALL_REDUCE, () ->
                nccl_h.ncclAllReduce(MemorySegment.ofAddress(sendAddress), MemorySegment.ofAddress(receiveAddress),
                        count, type.code(), gate.effective(op), comm, MemorySegment.ofAddress(streamHandle)));
        if (result != NcclErrors.SUCCESS) {
            throw protocol.fail(result, ALL_REDUCE + "(" + count + " x " + type.ncclName() + ", " + op.ncclName() + ")");
        }
    }

    @Override
    public void broadcast(DeviceBuffer send, DeviceBuffer receive, long count, NcclDataType type, int root,
                          CudaStream stream) {
        long sendAddress = checks.broadcast(send, receive, count, type, root, stream);
        broadcast(sendAddress, receive.address(), count, type, root, stream.handle());
    }

    @Override
    public void broadcast(long sendAddress, long receiveAddress, long count, NcclDataType type, int root,
                          long streamHandle) {
        checkCount(BROADCAST, site, count, "count");
        checkRank(BROADCAST, site, root, nranks, "root");
        support.requireType(type, BROADCAST, site);
        int result = protocol.call(BROADCAST, () ->
                nccl_h.ncclBroadcast(MemorySegment.ofAddress(sendAddress), MemorySegment.ofAddress(receiveAddress),
                        count, type.code(), root, comm, MemorySegment.ofAddress(streamHandle)));
        if (result != NcclErrors.SUCCESS) {
            throw protocol.fail(result, BROADCAST + "(" + count + " x " + type.ncclName() + ", root " + root + ")");
        }
    }

    @Override
    public void reduce(DeviceBuffer send, DeviceBuffer receive, long count, NcclDataType type, NcclReduction op,
                       int root, CudaStream stream) {
        long receiveAddress = checks.reduce(send, receive, count, type, root, stream);
        reduce(send.address(), receiveAddress, count, type, op, root, stream.handle());
    }

    @Override
    public void reduce(long sendAddress, long receiveAddress, long count, NcclDataType type, NcclReduction op, int root,
                       long streamHandle) {
        checkCount(REDUCE, site, count, "count");
        checkRank(REDUCE, site, root, nranks, "root");
        gate.requireReduction(type, op, REDUCE);
        int result = protocol.call(REDUCE, () ->
                nccl_h.ncclReduce(MemorySegment.ofAddress(sendAddress), MemorySegment.ofAddress(receiveAddress),
                        count, type.code(), gate.effective(op), root, comm, MemorySegment.ofAddress(streamHandle)));
        if (result != NcclErrors.SUCCESS) {
            throw protocol.fail(result, REDUCE + "(" + count + " x " + type.ncclName() + ", " + op.ncclName()
                    + ", root " + root + ")");
        }
    }

    @Override
    public void allGather(DeviceBuffer send, DeviceBuffer receive, long sendCount, NcclDataType type, CudaStream stream) {
        checks.allGather(send, receive, sendCount, type, stream);
        allGather(send.address(), receive.address(), sendCount, type, stream.handle());
    }

    @Override
    public void allGather(long sendAddress, long receiveAddress, long sendCount, NcclDataType type, long streamHandle) {
        checkCount(ALL_GATHER, site, sendCount, "sendCount");
        support.requireType(type, ALL_GATHER, site);
        int result = protocol.call(ALL_GATHER, () ->
                nccl_h.ncclAllGather(MemorySegment.ofAddress(sendAddress), MemorySegment.ofAddress(receiveAddress),
                        sendCount, type.code(), comm, MemorySegment.ofAddress(streamHandle)));
        if (result != NcclErrors.SUCCESS) {
            throw protocol.fail(result, ALL_GATHER + "(" + sendCount + " x " + type.ncclName() + " per rank)");
        }
    }

    @Override
    public void reduceScatter(DeviceBuffer send, DeviceBuffer receive, long receiveCount, NcclDataType type,
                              NcclReduction op, CudaStream stream) {
        checks.reduceScatter(send, receive, receiveCount, type, stream);
        reduceScatter(send.address(), receive.address(), receiveCount, type, op, stream.handle());
    }

    @Override
    public void reduceScatter(long sendAddress, long receiveAddress, long receiveCount, NcclDataType type,
                              NcclReduction op, long streamHandle) {
        checkCount(REDUCE_SCATTER, site, receiveCount, "receiveCount");
        gate.requireReduction(type, op, REDUCE_SCATTER);
        int result = protocol.call(REDUCE_SCATTER, () ->
                nccl_h.ncclReduceScatter(MemorySegment.ofAddress(sendAddress),
                        MemorySegment.ofAddress(receiveAddress), receiveCount, type.code(), gate.effective(op), comm,
                        MemorySegment.ofAddress(streamHandle)));
        if (result != NcclErrors.SUCCESS) {
            throw protocol.fail(result, REDUCE_SCATTER + "(" + receiveCount + " x " + type.ncclName() + " per rank, "
                    + op.ncclName() + ")");
        }
    }

    @Override
    public void send(DeviceBuffer buffer, long count, NcclDataType type, int peer, CudaStream stream) {
        checks.pointToPoint(true, buffer, count, type, peer, stream);
        pointToPoint(true, buffer.address(), count, type, peer, stream.handle());
    }

    @Override
    public void send(long address, long count, NcclDataType type, int peer, long streamHandle) {
        pointToPoint(true, address, count, type, peer, streamHandle);
    }

    @Override
    public void recv(DeviceBuffer buffer, long count, NcclDataType type, int peer, CudaStream stream) {
        checks.pointToPoint(false, buffer, count, type, peer, stream);
        pointToPoint(false, buffer.address(), count, type, peer, stream.handle());
    }

    @Override
    public void recv(long address, long count, NcclDataType type, int peer, long streamHandle) {
        pointToPoint(false, address, count, type, peer, streamHandle);
    }

    /** {@code ncclSend} ({@code isSend}) or {@code ncclRecv} on a device address. */
    private void pointToPoint(boolean isSend, long address, long count, NcclDataType type, int peer, long streamHandle) {
        String call = isSend ? SEND : RECV;
        checkCount(call, site, count, "count");
        checkRank(call, site, peer, nranks, "peer");
        support.requireType(type, call, site);
        MemorySegment buffer = MemorySegment.ofAddress(address);
        MemorySegment stream = MemorySegment.ofAddress(streamHandle);
        int result = protocol.call(call, () -> isSend ? nccl_h.ncclSend(buffer, count, type.code(), peer, comm, stream)
                : nccl_h.ncclRecv(buffer, count, type.code(), peer, comm, stream));
        if (result != NcclErrors.SUCCESS) {
            throw protocol.fail(result, call + "(" + count + " x " + type.ncclName() + (isSend ? " to" : " from")
                    + " rank " + peer + ")");
        }
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

    /** The protocol every call on this communicator follows (for the window, the group and tests). */
    NcclCallProtocol protocol() {
        return protocol;
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
