package dev.ar4j.internal.nccl;

import dev.ar4j.nccl.NcclException;
import dev.ar4j.nccl.NcclTimeoutException;
import dev.ar4j.nccl.NcclAbortedException;
import dev.ar4j.internal.platform.NativeLibraries;
import dev.ar4j.bindings.nccl.ncclConfig_v23000;
import dev.ar4j.bindings.nccl.nccl_h;

import java.lang.foreign.AddressLayout;
import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.Objects;
import java.util.function.BooleanSupplier;

/**
 * How an {@link NcclCommunicator} comes to be: the blocking init, the non-blocking init's state
 * machine (start, poll until settled, abort on failure, timeout or cancel), and the adoption of a
 * communicator made by a split. Every failure aborts what NCCL had made.
 */
public final class NcclCommInit {
    private NcclCommInit() {
    }

    /**
     * Joins the communicator named by {@code id} as {@code rank} of {@code nranks}, on the calling
     * thread's current device ({@code ncclCommInitRank}), blocking until all ranks have joined,
     * with no deadline.
     *
     * @param id the unique id rank 0 made and sent to every rank
     * @param nranks the number of ranks, at least 1
     * @param rank this process's rank, 0 to {@code nranks - 1}
     * @return this rank's communicator, owned by the caller
     */
    public static NcclCommunicator blocking(NcclUniqueId id, int nranks, int rank) {
        checkInitArguments(id, nranks, rank);
        NativeLibraries.cudart();
        NativeLibraries.nccl();
        NcclCalls calls = NativeNcclCalls.INSTANCE;
        String call = "ncclCommInitRank(rank " + rank + " of " + nranks + ")";
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            NcclErrors.check(nccl_h.ncclCommInitRank(out, nranks, id.toStruct(arena), rank), call, MemorySegment.NULL);
            MemorySegment comm = out.get(ValueLayout.ADDRESS, 0);
            return finishInit(calls, comm, rank, nranks, true, NcclCommunicator.BLOCKING_WAIT_TIMEOUT,
                    NcclSupport.installed(), arena);
        }
    }

    /**
     * Joins the communicator named by {@code id} without blocking ({@code ncclCommInitRankConfig}
     * with {@code blocking = 0}, then {@code ncclCommGetAsyncError} polled until NCCL reports
     * success). {@code timeout} bounds the init and, afterwards, every wait of the communicator;
     * the init also ends, aborting the half-made communicator with {@link NcclAbortedException},
     * as soon as {@code cancelled} returns true (asked every poll, on the calling thread).
     *
     * @param id the unique id rank 0 made and sent to every rank
     * @param nranks the number of ranks, at least 1
     * @param rank this process's rank, 0 to {@code nranks - 1}
     * @param timeout the bound on the init and on every later wait; positive
     * @param cancelled asked on every poll whether to give up; cheap, never blocking
     * @return this rank's communicator, owned by the caller
     * @throws NcclTimeoutException if the group has not formed within {@code timeout}
     * @throws NcclException if NCCL failed the init
     */
    public static NcclCommunicator nonBlocking(NcclUniqueId id, int nranks, int rank, Duration timeout,
                                               BooleanSupplier cancelled) {
        checkInitArguments(id, nranks, rank);
        NcclTiming.requirePositive(timeout, "the NCCL init timeout");
        Objects.requireNonNull(cancelled, "cancelled");
        NativeLibraries.cudart();
        NativeLibraries.nccl();
        NcclSupport support = NcclSupport.installed();
        support.requireFeature("a non-blocking communicator (ncclCommInitRankConfig, blocking = 0)",
                NcclSupport.NON_BLOCKING, initCall(rank, nranks), "the blocking initRank(id, nranks, rank)");
        return nonBlocking(NativeNcclCalls.INSTANCE, support, id, nranks, rank, timeout, cancelled);
    }

    private static void checkInitArguments(NcclUniqueId id, int nranks, int rank) {
        Objects.requireNonNull(id, "id");
        if (nranks < 1) {
            throw new IllegalArgumentException("nranks must be >= 1, got " + nranks);
        }
        if (rank < 0 || rank >= nranks) {
            throw new IllegalArgumentException("rank must be in [0, " + nranks + "), got " + rank);
        }
    }

    private static String initCall(int rank, int nranks) {
        return "ncclCommInitRankConfig(rank " + rank + " of " + nranks + ", non-blocking)";
    }

    /** The init state machine over {@code calls}: start, poll until settled, abort on failure, timeout or cancel. */
    static NcclCommunicator nonBlocking(NcclCalls calls, NcclSupport support, NcclUniqueId id, int nranks, int rank,
                                            Duration timeout, BooleanSupplier cancelled) {
        String call = initCall(rank, nranks);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            int result = calls.commInitRankConfig(out, nranks, id.toStruct(arena), rank, nonBlockingConfig(arena));
            MemorySegment comm = out.get(ValueLayout.ADDRESS, 0);
            if (result != NcclErrors.SUCCESS && result != NcclErrors.IN_PROGRESS) {
                throw abortAfterFailedInit(calls, comm, calls.exception(result, call, comm), rank);
            }
            if (comm.address() == 0) {
                throw calls.exception(NcclErrors.INTERNAL_ERROR, call + " returned "
                        + NcclErrors.resultName(result) + " but no communicator", MemorySegment.NULL);
            }
            AsyncStateWait.Result wait = AsyncStateWait.await(calls, comm, NcclTiming.toNanos(timeout), cancelled,
                    arena.allocate(ValueLayout.JAVA_INT));
            switch (wait.outcome()) {
                case SETTLED -> {
                    if (wait.state() != NcclErrors.SUCCESS) {
                        throw abortAfterFailedInit(calls, comm,
                                calls.exception(wait.state(), call + ", asynchronously", comm), rank);
                    }
                }
                case TIMED_OUT -> throw abortAfterFailedInit(calls, comm, new NcclTimeoutException(call
                        + ": the group did not form within " + NcclTiming.format(timeout) + " (NCCL still reported"
                        + " ncclInProgress after " + NcclTiming.formatNanos(wait.waitedNanos()) + ", waiting for all "
                        + nranks + " ranks to join). Usually a rank never started or crashed, or was given another"
                        + " unique id or nranks, or the ranks cannot reach each other (NCCL_SOCKET_IFNAME). This rank's"
                        + " half-made communicator was aborted (ncclCommAbort). Start every rank of the group with the"
                        + " same unique id and nranks, or raise the timeout" + calls.lastErrorTail(comm),
                        call, rank, nranks, timeout, calls.lastError(comm)), rank);
                case STOPPED -> throw abortAfterFailedInit(calls, comm, new NcclAbortedException(call
                        + ": the init was cancelled after " + NcclTiming.formatNanos(wait.waitedNanos())
                        + " (the cancel condition turned true while NCCL was still connecting); this rank's"
                        + " half-made communicator was aborted (ncclCommAbort). Make a new one to retry",
                        call, rank, null), rank);
            }
            return finishInit(calls, comm, rank, nranks, false, timeout, support, arena);
        }
    }

    private static NcclException abortAfterFailedInit(NcclCalls calls, MemorySegment comm, NcclException e, int rank) {
        if (comm.address() != 0) {
            int aborted = calls.commAbort(comm);
            if (aborted != NcclErrors.SUCCESS) {
                e.addSuppressed(calls.exception(aborted, "ncclCommAbort(rank " + rank + ") after a failed init",
                        MemorySegment.NULL));
            }
        }
        return e;
    }

    private static NcclCommunicator finishInit(NcclCalls calls, MemorySegment comm, int rank, int nranks,
                                               boolean blocking, Duration timeout, NcclSupport support, Arena arena) {
        MemorySegment device = arena.allocate(ValueLayout.JAVA_INT);
        int result = calls.commCuDevice(comm, device);
        if (result != NcclErrors.SUCCESS) {
            NcclException e = calls.exception(result, "ncclCommCuDevice(rank " + rank + " of " + nranks + ")",
                    comm);
            int aborted = calls.commAbort(comm);
            if (aborted != NcclErrors.SUCCESS) {
                e.addSuppressed(calls.exception(aborted, "ncclCommAbort after a failed init", MemorySegment.NULL));
            }
            throw e;
        }
        return new NcclCommunicator(calls, comm, rank, nranks, device.get(ValueLayout.JAVA_INT, 0), blocking, timeout,
                support);
    }

    /** The communicator a split made: its rank, size and device asked of NCCL; aborted if that fails. */
    static NcclCommunicator adoptSplit(NcclCalls calls, MemorySegment child, int parentRank, boolean blocking,
                                       Duration timeout, NcclSupport support, Arena arena) {
        MemorySegment value = arena.allocate(ValueLayout.JAVA_INT);
        int rank = query(calls, calls.commUserRank(child, value), value, "ncclCommUserRank", child, parentRank);
        int count = query(calls, calls.commCount(child, value), value, "ncclCommCount", child, parentRank);
        int device = query(calls, calls.commCuDevice(child, value), value, "ncclCommCuDevice", child, parentRank);
        return new NcclCommunicator(calls, child, rank, count, device, blocking, timeout, support);
    }

    private static int query(NcclCalls calls, int result, MemorySegment value, String what, MemorySegment child,
                             int parentRank) {
        if (result != NcclErrors.SUCCESS) {
            NcclException e = calls.exception(result, what + " of the communicator split from rank "
                    + parentRank, child);
            int aborted = calls.commAbort(child);
            if (aborted != NcclErrors.SUCCESS) {
                e.addSuppressed(calls.exception(aborted, "ncclCommAbort of the split communicator",
                        MemorySegment.NULL));
            }
            throw e;
        }
        return value.get(ValueLayout.JAVA_INT, 0);
    }

    /**
     * An {@code ncclConfig_t} as {@code NCCL_CONFIG_INITIALIZER} makes it (size, magic, the header's
     * version, every attribute undefined), with {@code blocking = 0}. NCCL reads at most its own
     * {@code sizeof(ncclConfig_t)} of it, so an older library takes it too.
     */
    static MemorySegment nonBlockingConfig(Arena arena) {
        MemorySegment config = ncclConfig_v23000.allocate(arena);
        long offset = 0;
        for (MemoryLayout member : ncclConfig_v23000.layout().memberLayouts()) {
            if (member instanceof ValueLayout.OfInt) {
                config.set(ValueLayout.JAVA_INT, offset, nccl_h.NCCL_CONFIG_UNDEF_INT());
            } else if (member instanceof AddressLayout) {
                config.set(ValueLayout.ADDRESS, offset, nccl_h.NCCL_CONFIG_UNDEF_PTR());
            }
            offset += member.byteSize();
        }
        ncclConfig_v23000.size(config, ncclConfig_v23000.layout().byteSize());
        ncclConfig_v23000.magic(config, nccl_h.NCCL_API_MAGIC());
        ncclConfig_v23000.version(config, nccl_h.NCCL_VERSION_CODE());
        ncclConfig_v23000.blocking(config, 0);
        return config;
    }
}
