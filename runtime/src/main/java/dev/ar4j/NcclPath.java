package dev.ar4j;

import dev.ar4j.nccl.NcclCommunicator;
import dev.ar4j.nccl.NcclUniqueId;

/**
 * The NCCL path of one rank: the group's {@link NcclCommunicator} (owned, destroyed or aborted
 * once) and the all-reduce calls routed to it.
 */
final class NcclPath implements AutoCloseable {

    private final NcclCommunicator comm;

    private NcclPath(NcclCommunicator comm) {
        this.comm = comm;
    }

    /**
     * Rank 0 makes the unique id, every rank joins (collective). {@code ncclCommInitRank} blocks
     * until every rank joins, with no deadline of ours: the ranks meet in a bounded barrier first,
     * so that a rank that is already gone is named here instead.
     */
    static NcclPath open(Group group) {
        byte[] id = group.rendezvous.broadcast(group.key("nccl-id"), 0,
                group.rank == 0 ? NcclUniqueId.generate().toBytes() : null, group.timeout);
        group.rendezvous.barrier(group.key("nccl-init"), group.timeout);
        return new NcclPath(NcclCommunicator.initRank(NcclUniqueId.fromBytes(id), group.worldSize, group.rank));
    }

    void allReduce(long in, long out, long count, DType dtype, long stream) {
        comm.allReduceSum(in, out, count, dtype, stream);
    }

    /** The communicator, for benchmarks and interoperability; the path keeps ownership. */
    NcclCommunicator communicator() {
        return comm;
    }

    @Override
    public void close() {
        comm.close();
    }
}
