package dev.ar4j.internal.engine;

import dev.ar4j.rendezvous.RendezvousException;
import dev.ar4j.ConfigurationException;
import dev.ar4j.DType;
import dev.ar4j.internal.nccl.NcclCommInit;
import dev.ar4j.internal.nccl.NcclCommunicator;
import dev.ar4j.internal.nccl.NcclUniqueId;
import dev.ar4j.nccl.NcclCollectives;
import dev.ar4j.nccl.NcclDataType;
import dev.ar4j.nccl.NcclException;
import dev.ar4j.nccl.NcclReduction;

import java.util.Optional;

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
     * Rank 0 makes the unique id, every rank joins (collective). The ranks meet in a bounded
     * barrier first, so that a rank that is already gone is named here instead of hanging NCCL.
     */
    static NcclPath open(Group group, dev.ar4j.internal.rendezvous.AbortSignal abort) {
        if (group.maxRanksPerGpu() > 1) {
            // The same answer on every rank (it comes from the all-gathered peer records).
            throw new ConfigurationException("rank " + group.rank + ": " + group.maxRanksPerGpu() + " ranks of this "
                    + "group share one GPU, which NCCL refuses (\"Duplicate GPU detected\"); build the group with "
                    + "nccl(false) (custom kernels only; calls they cannot take then throw), or give each rank its "
                    + "own GPU");
        }
        byte[] id = group.rendezvous.broadcast(group.key("nccl-id"), 0,
                group.rank == 0 ? NcclUniqueId.generate().toBytes() : null, group.timeout);
        group.rendezvous.barrier(group.key("nccl-init"), group.timeout);
        return new NcclPath(initRank(NcclUniqueId.fromBytes(id), group, abort));
    }

    /**
     * The non-blocking {@code ncclCommInitRankConfig}, polled against the group's rendezvous
     * deadline and aborted on expiry ({@code NcclTimeoutException} naming the rank); the wait also
     * ends as soon as the rendezvous reports a lost rank or the build is aborted.
     */
    private static NcclCommunicator initRank(NcclUniqueId id, Group group,
                                             dev.ar4j.internal.rendezvous.AbortSignal abort) {
        java.util.concurrent.atomic.AtomicBoolean lost = new java.util.concurrent.atomic.AtomicBoolean();
        try (AutoCloseable subscription = group.rendezvous.onPeerLost((rank, reason) -> lost.set(true))) {
            return NcclCommInit.nonBlocking(id, group.worldSize, group.rank, group.timeout,
                    () -> lost.get() || abort.aborted());
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new RendezvousException("rank " + group.rank + ": unsubscribing from the rendezvous failed: " + e, e);
        }
    }

    void allReduce(long in, long out, long count, DType dtype, long stream) {
        comm.allReduce(in, out, count, NcclDataType.of(dtype), NcclReduction.SUM, stream);
    }

    /** NCCL's asynchronous error (a peer died, a timeout), or empty; safe from the watchdog thread. */
    Optional<NcclException> asyncError() {
        return comm.isOpen() ? comm.asyncError() : Optional.empty();
    }

    /** Aborts the communicator ({@code ncclCommAbort}): unblocks its work; once. */
    void abort() {
        comm.abort();
    }

    /** The communicator's collectives, for {@code Communicator.collectives()}; the path keeps ownership. */
    NcclCollectives collectives() {
        return comm;
    }

    /** Destroys the communicator, or aborts it when the group failed (destroy could wait forever on a lost peer). */
    void close(boolean failed) {
        comm.destroyOrAbort(failed);
    }

    @Override
    public void close() {
        close(false);
    }
}
