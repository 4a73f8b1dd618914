package dev.ar4j.internal.nccl;

import dev.ar4j.nccl.NcclException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.Optional;

import static dev.ar4j.internal.nccl.NcclCommunicator.SPLIT_NO_COLOR;

/**
 * {@link NcclCommunicator#split}: the checks, then {@code ncclCommSplit} on the parent, with the
 * wait a non-blocking parent may need before NCCL hands out the new communicator; a failed split
 * aborts what it made. The new communicator is adopted by {@link NcclCommInit#adoptSplit}.
 */
final class NcclCommSplit {
    private NcclCommSplit() {
    }

    /** Splits {@code parent}; native calls go to {@code calls}, {@code inFlight} counts its calls in flight. */
    static Optional<NcclCommunicator> split(NcclCommunicator parent, NcclCalls calls, NcclCallsInFlight inFlight,
                                            int color, int key) {
        MemorySegment comm = parent.comm();
        int rank = parent.rank();
        boolean blocking = parent.isBlocking();
        Duration timeout = parent.timeout();
        long timeoutNanos = NcclTiming.toNanos(timeout);
        NcclSupport support = parent.support();
        String site = parent.site();
        NcclCallProtocol protocol = parent.protocol();
        if (color < 0 && color != SPLIT_NO_COLOR) {
            throw new IllegalArgumentException("split color must be >= 0, or SPLIT_NO_COLOR (-1) to join no new"
                    + " communicator; got " + color);
        }
        String call = "ncclCommSplit(color " + color + ", key " + key + ")";
        if (GroupScope.current() != null) {
            throw new IllegalStateException(call + " " + site + ": not supported inside an NcclGroup; split outside the"
                    + " group");
        }
        support.requireFeature("ncclCommSplit", NcclSupport.SPLIT, call + " " + site,
                "a communicator of its own per sub-group (initRank)");
        protocol.enter(call);
        int result;
        MemorySegment child;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            result = calls.commSplit(comm, color, key, out, MemorySegment.NULL);
            child = out.get(ValueLayout.ADDRESS, 0);
            // On a non-blocking communicator NCCL may set *newcomm only when its background work
            // is done (seen on an H200 with NCCL 2.28.9: success, and no handle yet). Then wait
            // on the parent and read the handle again.
            if (result == NcclErrors.SUCCESS && child.address() == 0 && color != SPLIT_NO_COLOR && !blocking) {
                result = NcclErrors.IN_PROGRESS;
            }
            if (result == NcclErrors.IN_PROGRESS) {
                MemorySegment watched = child.address() != 0 ? child : comm;
                AsyncStateWait.Result wait = AsyncStateWait.await(calls, watched, timeoutNanos, inFlight::isClosing,
                        arena.allocate(ValueLayout.JAVA_INT));
                result = switch (wait.outcome()) {
                    case SETTLED -> wait.state();
                    case TIMED_OUT -> NcclTiming.WAIT_TIMED_OUT;
                    case STOPPED -> NcclTiming.WAIT_STOPPED;
                };
                if (child.address() == 0) {
                    child = out.get(ValueLayout.ADDRESS, 0);
                }
            }
            if (result == NcclErrors.SUCCESS) {
                return child.address() == 0 ? Optional.empty()
                        : Optional.of(NcclCommInit.adoptSplit(calls, child, rank, blocking, timeout, support, arena));
            }
        } finally {
            protocol.exit();
        }
        // The split failed: abort what it made, then fail as any call does (a timeout aborts this
        // communicator too: a rank that does not take part in a collective of it is gone).
        int aborted = child.address() != 0 ? calls.commAbort(child) : NcclErrors.SUCCESS;
        NcclException failed = protocol.fail(result, call);
        if (aborted != NcclErrors.SUCCESS) {
            failed.addSuppressed(calls.exception(aborted, "ncclCommAbort of the half-made split communicator",
                    MemorySegment.NULL));
        }
        throw failed;
    }
}
