package dev.ar4j.internal.nccl;

import dev.ar4j.nccl.NcclException;
import dev.ar4j.nccl.NcclTimeoutException;
import dev.ar4j.nccl.NcclAbortedException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The protocol every call on one {@link NcclCommunicator} follows: enter (refused once the
 * communicator is closing or failed, or while another thread is inside a call on it), the native
 * call, settle (an {@code ncclInProgress} waited out, bounded by the communicator's timeout, ended
 * by an abort), exit, fail (a timeout aborts the communicator; a fatal NCCL error marks it failed).
 * Holds the communicator's first failure and the thread inside a call; the {@link NcclCallsInFlight}
 * is the communicator's.
 */
final class NcclCallProtocol {
    private final NcclCommunicator owner;
    private final NcclCalls calls;
    private final MemorySegment comm;
    private final int rank;
    private final int nranks;
    private final Duration timeout;
    private final long timeoutNanos;
    private final NcclCallsInFlight inFlight;
    /** The thread inside a (non-observing) call, or null: NCCL takes one thread's calls at a time per communicator. */
    private final AtomicReference<Thread> caller = new AtomicReference<>();
    private volatile NcclException failure;

    NcclCallProtocol(NcclCommunicator owner, NcclCalls calls, MemorySegment comm, int rank, int nranks,
                     Duration timeout, NcclCallsInFlight inFlight) {
        this.owner = owner;
        this.calls = calls;
        this.comm = comm;
        this.rank = rank;
        this.nranks = nranks;
        this.timeout = timeout;
        this.timeoutNanos = NcclTiming.toNanos(timeout);
        this.inFlight = inFlight;
    }

    /** The {@code ncclComm_t} the calls go to. */
    MemorySegment comm() {
        return comm;
    }

    /** False once the communicator is closing or closed. */
    boolean isOpen() {
        return !inFlight.isClosing();
    }

    /** The first fatal failure, or null while the communicator has not failed. */
    NcclException failure() {
        return failure;
    }

    /** {@link NcclCommunicator#asyncError()}: an observing call, safe from any thread. */
    Optional<NcclException> asyncError() {
        NcclException failed = failure;
        if (failed != null) {
            return Optional.of(failed);
        }
        String call = "ncclCommGetAsyncError(rank " + rank + " of " + nranks + ")";
        enterObserver(call);
        int query;
        int state;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.JAVA_INT);
            query = calls.commGetAsyncError(comm, out);
            state = out.get(ValueLayout.JAVA_INT, 0);
        } finally {
            exit();
        }
        if (query != NcclErrors.SUCCESS) {
            throw fail(query, call);
        }
        if (state == NcclErrors.SUCCESS || state == NcclErrors.IN_PROGRESS) {
            return Optional.empty();
        }
        NcclException e = calls.exception(state, "asynchronous NCCL operation on rank " + rank + " of "
                + nranks, comm);
        markFailed(e);
        return Optional.of(e);
    }

    /** Counts a call in (and into the thread's open {@link NcclGroup}), or throws if closed or failed. */
    void enter(String call) {
        if (!inFlight.enter()) {
            throw new IllegalStateException(call + " on rank " + rank + " of " + nranks + ": the communicator is closed"
                    + " or aborted" + (failure == null ? "" : " after " + failure.getMessage()), failure);
        }
        NcclException failed = failure;
        if (failed != null) {
            inFlight.exit();
            throw new IllegalStateException(call + " on rank " + rank + " of " + nranks + ": the communicator failed"
                    + " earlier and must be aborted (close() does that) and made again: " + failed.getMessage(), failed);
        }
        Thread me = Thread.currentThread();
        Thread holder = caller.compareAndExchange(null, me);
        if (holder != null && holder != me) {
            inFlight.exit();
            throw new IllegalStateException(call + " on rank " + rank + " of " + nranks + " from thread '" + me.getName()
                    + "' while thread '" + holder.getName() + "' is inside an NCCL call on this communicator: NCCL"
                    + " takes the calls on one communicator from one thread at a time; serialise them, or give each"
                    + " thread its own communicator (split)");
        }
        GroupScope group = GroupScope.current();
        if (group != null) {
            group.join(this);
        }
    }

    /** A native NCCL call, returning its {@code ncclResult_t}. */
    @FunctionalInterface
    interface NativeCall {
        int invoke();
    }

    /**
     * One call under the protocol: {@link #enter}, the native call, {@link #settle}, {@link #exit};
     * the final result, which the caller turns into an exception with {@link #fail} unless it is
     * {@code ncclSuccess}.
     */
    int call(String call, NativeCall nativeCall) {
        enter(call);
        try {
            return settle(nativeCall.invoke());
        } finally {
            exit();
        }
    }

    /** Counts an observing call in (an {@link #asyncError()} from a watchdog): no claim on the thread, no group. */
    private void enterObserver(String call) {
        if (!inFlight.enter()) {
            throw new IllegalStateException(call + ": the communicator is closed or aborted", failure);
        }
    }

    /** Counts a call in unless the communicator is closing (then false, not counted); no group join. */
    boolean enterIfOpen() {
        return inFlight.enter();
    }

    /** Counts a call out (and releases the calling thread's claim, if it holds it). */
    void exit() {
        caller.compareAndSet(Thread.currentThread(), null);
        inFlight.exit();
    }

    /**
     * The final result of a native call made between {@link #enter} and {@link #exit}: an
     * {@code ncclInProgress} is waited out (bounded by {@link NcclCommunicator#timeout()}, ended by
     * an abort), except inside an {@link NcclGroup}, whose end settles it.
     */
    int settle(int result) {
        if (result != NcclErrors.IN_PROGRESS) {
            return result;
        }
        if (GroupScope.current() != null) {
            return NcclErrors.SUCCESS;
        }
        return awaitState();
    }

    /** Waits out the {@code ncclInProgress} of a group that used this communicator, once the group has ended. */
    void settleGroup() {
        String call = "ncclGroupEnd";
        if (!inFlight.enter()) {
            throw new IllegalStateException(call + " on rank " + rank + " of " + nranks + ": the communicator was closed"
                    + " or aborted while the group was open");
        }
        int result;
        try {
            result = awaitState();
        } finally {
            exit();
        }
        if (result != NcclErrors.SUCCESS) {
            throw fail(result, call);
        }
    }

    /** Polls the state until it settles; between {@link #enter} and {@link #exit}. */
    int awaitState() {
        try (Arena arena = Arena.ofConfined()) {
            AsyncStateWait.Result wait = AsyncStateWait.await(calls, comm, timeoutNanos, inFlight::isClosing,
                    arena.allocate(ValueLayout.JAVA_INT));
            return switch (wait.outcome()) {
                case SETTLED -> wait.state();
                case TIMED_OUT -> NcclTiming.WAIT_TIMED_OUT;
                case STOPPED -> NcclTiming.WAIT_STOPPED;
            };
        }
    }

    /**
     * The exception for a call's final result (after {@link #exit}): a timeout aborts the
     * communicator first; a fatal NCCL error marks it failed.
     */
    NcclException fail(int result, String call) {
        NcclException e = describeFailure(result, call);
        if (e instanceof NcclTimeoutException) {
            try {
                owner.abort();
            } catch (RuntimeException abortFailure) {
                e.addSuppressed(abortFailure);
            }
        }
        return e;
    }

    private NcclException describeFailure(int result, String call) {
        String where = call + " on rank " + rank + " of " + nranks;
        if (result == NcclTiming.WAIT_TIMED_OUT) {
            NcclException e = new NcclTimeoutException(where + ": NCCL still reported ncclInProgress after "
                    + NcclTiming.format(timeout) + ". A peer rank is probably gone, stuck, or making other calls (every"
                    + " rank must make the same NCCL calls in the same order). The communicator is aborted; make a new"
                    + " group" + calls.lastErrorTail(comm), call, rank, nranks, timeout, calls.lastError(comm));
            markFailed(e);
            return e;
        }
        if (result == NcclTiming.WAIT_STOPPED) {
            return new NcclAbortedException(where + ": the communicator was aborted (abort() on another thread) while"
                    + " this call waited for NCCL; make a new group", call, rank, failure);
        }
        NcclException e = calls.exception(result, where, comm);
        if (NcclErrors.isFatal(result)) {
            markFailed(e);
        }
        return e;
    }

    private void markFailed(NcclException e) {
        if (failure == null) {
            failure = e;
        }
    }
}
