package dev.ar4j.nccl;

import dev.ar4j.bindings.nccl.nccl_h;

import java.lang.foreign.MemorySegment;

import static dev.ar4j.nccl.NcclArguments.checkCount;
import static dev.ar4j.nccl.NcclArguments.checkRank;

/**
 * The calls of {@link NcclCollectives} on device addresses, in this order: the count and rank
 * checks, the data type or reduction gate ({@link NcclReductionGate}, {@link NcclSupport}), then the
 * NCCL call under the communicator's call protocol: enter, the {@code nccl_h} call, settle, exit,
 * and on failure the exception {@link NcclCommunicator#fail} makes.
 */
final class NcclCollectiveCalls {
    static final String ALL_REDUCE = "ncclAllReduce";
    static final String BROADCAST = "ncclBroadcast";
    static final String REDUCE = "ncclReduce";
    static final String ALL_GATHER = "ncclAllGather";
    static final String REDUCE_SCATTER = "ncclReduceScatter";
    static final String SEND = "ncclSend";
    static final String RECV = "ncclRecv";

    private final NcclCommunicator comm;
    private final NcclReductionGate gate;

    NcclCollectiveCalls(NcclCommunicator comm) {
        this.comm = comm;
        this.gate = new NcclReductionGate(comm);
    }

    /** {@link NcclCollectives#allReduce(long, long, long, NcclDataType, NcclReduction, long)}. */
    void allReduce(long sendAddress, long receiveAddress, long count, NcclDataType type, NcclReduction op,
                   long streamHandle) {
        checkCount(ALL_REDUCE, comm.site(), count, "count");
        gate.requireReduction(type, op, ALL_REDUCE);
        comm.enter(ALL_REDUCE);
        int result;
        try {
            result = comm.settle(nccl_h.ncclAllReduce(MemorySegment.ofAddress(sendAddress),
                    MemorySegment.ofAddress(receiveAddress), count, type.code(), gate.effective(op), comm.comm(),
                    MemorySegment.ofAddress(streamHandle)));
        } finally {
            comm.exit();
        }
        if (result != NcclErrors.SUCCESS) {
            throw comm.fail(result, ALL_REDUCE + "(" + count + " x " + type.ncclName() + ", " + op.ncclName() + ")");
        }
    }

    /** {@link NcclCollectives#broadcast(long, long, long, NcclDataType, int, long)}. */
    void broadcast(long sendAddress, long receiveAddress, long count, NcclDataType type, int root,
                   long streamHandle) {
        checkCount(BROADCAST, comm.site(), count, "count");
        checkRank(BROADCAST, comm.site(), root, comm.nranks(), "root");
        comm.support().requireType(type, BROADCAST, comm.site());
        comm.enter(BROADCAST);
        int result;
        try {
            result = comm.settle(nccl_h.ncclBroadcast(MemorySegment.ofAddress(sendAddress),
                    MemorySegment.ofAddress(receiveAddress), count, type.code(), root, comm.comm(),
                    MemorySegment.ofAddress(streamHandle)));
        } finally {
            comm.exit();
        }
        if (result != NcclErrors.SUCCESS) {
            throw comm.fail(result, BROADCAST + "(" + count + " x " + type.ncclName() + ", root " + root + ")");
        }
    }

    /** {@link NcclCollectives#reduce(long, long, long, NcclDataType, NcclReduction, int, long)}. */
    void reduce(long sendAddress, long receiveAddress, long count, NcclDataType type, NcclReduction op, int root,
                long streamHandle) {
        checkCount(REDUCE, comm.site(), count, "count");
        checkRank(REDUCE, comm.site(), root, comm.nranks(), "root");
        gate.requireReduction(type, op, REDUCE);
        comm.enter(REDUCE);
        int result;
        try {
            result = comm.settle(nccl_h.ncclReduce(MemorySegment.ofAddress(sendAddress),
                    MemorySegment.ofAddress(receiveAddress), count, type.code(), gate.effective(op), root, comm.comm(),
                    MemorySegment.ofAddress(streamHandle)));
        } finally {
            comm.exit();
        }
        if (result != NcclErrors.SUCCESS) {
            throw comm.fail(result, REDUCE + "(" + count + " x " + type.ncclName() + ", " + op.ncclName() + ", root "
                    + root + ")");
        }
    }

    /** {@link NcclCollectives#allGather(long, long, long, NcclDataType, long)}. */
    void allGather(long sendAddress, long receiveAddress, long sendCount, NcclDataType type, long streamHandle) {
        checkCount(ALL_GATHER, comm.site(), sendCount, "sendCount");
        comm.support().requireType(type, ALL_GATHER, comm.site());
        comm.enter(ALL_GATHER);
        int result;
        try {
            result = comm.settle(nccl_h.ncclAllGather(MemorySegment.ofAddress(sendAddress),
                    MemorySegment.ofAddress(receiveAddress), sendCount, type.code(), comm.comm(),
                    MemorySegment.ofAddress(streamHandle)));
        } finally {
            comm.exit();
        }
        if (result != NcclErrors.SUCCESS) {
            throw comm.fail(result, ALL_GATHER + "(" + sendCount + " x " + type.ncclName() + " per rank)");
        }
    }

    /** {@link NcclCollectives#reduceScatter(long, long, long, NcclDataType, NcclReduction, long)}. */
    void reduceScatter(long sendAddress, long receiveAddress, long receiveCount, NcclDataType type,
                       NcclReduction op, long streamHandle) {
        checkCount(REDUCE_SCATTER, comm.site(), receiveCount, "receiveCount");
        gate.requireReduction(type, op, REDUCE_SCATTER);
        comm.enter(REDUCE_SCATTER);
        int result;
        try {
            result = comm.settle(nccl_h.ncclReduceScatter(MemorySegment.ofAddress(sendAddress),
                    MemorySegment.ofAddress(receiveAddress), receiveCount, type.code(), gate.effective(op), comm.comm(),
                    MemorySegment.ofAddress(streamHandle)));
        } finally {
            comm.exit();
        }
        if (result != NcclErrors.SUCCESS) {
            throw comm.fail(result, REDUCE_SCATTER + "(" + receiveCount + " x " + type.ncclName() + " per rank, "
                    + op.ncclName() + ")");
        }
    }

    /**
     * {@link NcclCollectives#send(long, long, NcclDataType, int, long)} ({@code isSend}) or
     * {@link NcclCollectives#recv(long, long, NcclDataType, int, long)}.
     */
    void pointToPoint(boolean isSend, long address, long count, NcclDataType type, int peer, long streamHandle) {
        String call = isSend ? SEND : RECV;
        checkCount(call, comm.site(), count, "count");
        checkRank(call, comm.site(), peer, comm.nranks(), "peer");
        comm.support().requireType(type, call, comm.site());
        comm.enter(call);
        int result;
        try {
            MemorySegment buffer = MemorySegment.ofAddress(address);
            MemorySegment stream = MemorySegment.ofAddress(streamHandle);
            result = comm.settle(isSend
                    ? nccl_h.ncclSend(buffer, count, type.code(), peer, comm.comm(), stream)
                    : nccl_h.ncclRecv(buffer, count, type.code(), peer, comm.comm(), stream));
        } finally {
            comm.exit();
        }
        if (result != NcclErrors.SUCCESS) {
            throw comm.fail(result, call + "(" + count + " x " + type.ncclName() + (isSend ? " to" : " from") + " rank "
                    + peer + ")");
        }
    }
}
