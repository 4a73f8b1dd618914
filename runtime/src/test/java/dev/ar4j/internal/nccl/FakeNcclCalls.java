package dev.ar4j.internal.nccl;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntSupplier;

/**
 * A scripted NCCL for the communicator's state machine: what init, split and finalize return, and
 * what {@code ncclCommGetAsyncError} reports each time it is asked. Records every call, so a test
 * can check that an abort happened exactly once and a destroy never.
 */
final class FakeNcclCalls implements NcclCalls {
    static final long COMM = 0x7000_0000L;
    static final long CHILD = 0x7100_0000L;

    int initResult = NcclErrors.IN_PROGRESS;
    int splitResult = NcclErrors.IN_PROGRESS;
    int finalizeResult = NcclErrors.IN_PROGRESS;
    /** The state {@code ncclCommGetAsyncError} reports, asked on every poll. */
    volatile IntSupplier state = () -> NcclErrors.SUCCESS;
    int device = 3;
    int computeCapability = 9;
    final AtomicInteger polls = new AtomicInteger();
    final List<String> log = new ArrayList<>();

    /** Reports ncclInProgress {@code times} times, then {@code then}. */
    static IntSupplier inProgressThen(int times, int then) {
        AtomicInteger asked = new AtomicInteger();
        return () -> asked.getAndIncrement() < times ? NcclErrors.IN_PROGRESS : then;
    }

    synchronized int count(String call) {
        return (int) log.stream().filter(call::equals).count();
    }

    private synchronized void record(String call) {
        log.add(call);
    }

    @Override
    public int commInitRankConfig(MemorySegment commOut, int nranks, MemorySegment uniqueId, int rank,
                                  MemorySegment config) {
        record("init");
        commOut.set(ValueLayout.ADDRESS, 0, MemorySegment.ofAddress(COMM));
        return initResult;
    }

    @Override
    public int commGetAsyncError(MemorySegment comm, MemorySegment stateOut) {
        polls.incrementAndGet();
        stateOut.set(ValueLayout.JAVA_INT, 0, state.getAsInt());
        return NcclErrors.SUCCESS;
    }

    @Override
    public int commCuDevice(MemorySegment comm, MemorySegment deviceOut) {
        deviceOut.set(ValueLayout.JAVA_INT, 0, device);
        return NcclErrors.SUCCESS;
    }

    @Override
    public int commSplit(MemorySegment comm, int color, int key, MemorySegment commOut, MemorySegment config) {
        record("split");
        commOut.set(ValueLayout.ADDRESS, 0, MemorySegment.ofAddress(color == -1 ? 0 : CHILD));
        return splitResult;
    }

    @Override
    public int commUserRank(MemorySegment comm, MemorySegment rankOut) {
        rankOut.set(ValueLayout.JAVA_INT, 0, 0);
        return NcclErrors.SUCCESS;
    }

    @Override
    public int commCount(MemorySegment comm, MemorySegment countOut) {
        countOut.set(ValueLayout.JAVA_INT, 0, 1);
        return NcclErrors.SUCCESS;
    }

    @Override
    public int commFinalize(MemorySegment comm) {
        record("finalize");
        return finalizeResult;
    }

    @Override
    public int commDestroy(MemorySegment comm) {
        record(comm.address() == CHILD ? "destroy child" : "destroy");
        return NcclErrors.SUCCESS;
    }

    @Override
    public int commAbort(MemorySegment comm) {
        record(comm.address() == CHILD ? "abort child" : "abort");
        return NcclErrors.SUCCESS;
    }

    @Override
    public String errorString(int result) {
        return "fake error string " + result;
    }

    @Override
    public String lastError(MemorySegment comm) {
        return "fake last error";
    }

    @Override
    public int computeCapabilityMajor(int device) {
        return computeCapability;
    }
}
