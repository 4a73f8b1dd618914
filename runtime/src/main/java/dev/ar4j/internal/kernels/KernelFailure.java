package dev.ar4j.internal.kernels;

import dev.ar4j.bindings.customar.ar4j_failure_info;
import dev.ar4j.bindings.customar.ar4j_timeout_info;

import java.lang.foreign.MemorySegment;

/**
 * What {@code ar4j_read_failure} knows of a group's failure, as read by one rank.
 *
 * @param poisoned         whether the group is poisoned; then every kernel of every rank writes
 *                         NaN and returns, and every later call on the context fails
 * @param originRank       the rank that poisoned it first (as this rank's signal block says), or -1
 * @param reason           {@code AR4J_POISON_*} code (see {@link CustomAllReduceKernels#poisonReasonName}),
 *                         or 0 when not poisoned
 * @param peer             for {@code TIMEOUT} the rank that was waited for, for {@code GEOMETRY} the
 *                         rank whose geometry differs; else -1
 * @param block            for {@code TIMEOUT} and {@code CONCURRENT_USE} the CUDA block that found it; else -1
 * @param geometryMismatch whether this context found a peer publishing another launch geometry
 * @param geometryPeer     that peer, or -1
 * @param localGeometry    this context's geometry
 * @param peerGeometry     that peer's published geometry (zeros if it published none), or null
 * @param timeout          this rank's own kernels' timeout record
 * @param poisonWord       the raw poison word (0 when healthy)
 */
public record KernelFailure(boolean poisoned, int originRank, int reason, int peer, int block, boolean geometryMismatch,
                            int geometryPeer, LaunchGeometry localGeometry, LaunchGeometry peerGeometry,
                            KernelTimeout timeout, long poisonWord) {

    /** Decodes an {@code ar4j_failure_info} struct. */
    static KernelFailure from(MemorySegment info) {
        MemorySegment t = ar4j_failure_info.timeout(info);
        KernelTimeout timeout = new KernelTimeout(ar4j_timeout_info.timed_out(t) != 0, ar4j_timeout_info.peer(t),
                ar4j_timeout_info.block(t), ar4j_timeout_info.barrier(t),
                Integer.toUnsignedLong(ar4j_timeout_info.flag(t)));
        boolean mismatch = ar4j_failure_info.geometry_mismatch(info) != 0;
        LaunchGeometry local = new LaunchGeometry(ar4j_failure_info.local_max_blocks(info),
                ar4j_failure_info.local_threads(info), ar4j_failure_info.local_push_blocks(info),
                ar4j_failure_info.local_push_threads(info));
        LaunchGeometry peer = mismatch ? new LaunchGeometry(ar4j_failure_info.peer_max_blocks(info),
                ar4j_failure_info.peer_threads(info), ar4j_failure_info.peer_push_blocks(info),
                ar4j_failure_info.peer_push_threads(info)) : null;
        return new KernelFailure(ar4j_failure_info.poisoned(info) != 0, ar4j_failure_info.origin_rank(info),
                ar4j_failure_info.reason(info), ar4j_failure_info.peer(info), ar4j_failure_info.block(info), mismatch,
                ar4j_failure_info.geometry_peer(info), local, peer, timeout, ar4j_failure_info.poison_word(info));
    }

    /**
     * Whether anything failed.
     *
     * @return {@code true} if the group is poisoned, this context found a geometry mismatch, or this
     *         rank's own kernels timed out
     */
    public boolean failed() {
        return poisoned || geometryMismatch || timeout.timedOut();
    }

    /**
     * The record as one sentence, for logs and exception messages.
     *
     * @return e.g. {@code "poisoned by rank 0 (TIMEOUT: its block 3 gave up waiting for rank 1)"};
     *         {@code "healthy"} when nothing {@link #failed() failed}
     */
    public String describe() {
        StringBuilder b = new StringBuilder();
        if (poisoned) {
            b.append("poisoned by rank ").append(originRank).append(" (")
                    .append(CustomAllReduceKernels.poisonReasonName(reason));
            if (reason == CustomAllReduceKernels.POISON_TIMEOUT) {
                b.append(": its block ").append(block).append(" gave up waiting for rank ").append(peer);
            } else if (reason == CustomAllReduceKernels.POISON_CONCURRENT_USE) {
                b.append(": two launches of its context overlapped at block ").append(block)
                        .append(" (two streams or graphs at once)");
            } else if (reason == CustomAllReduceKernels.POISON_GEOMETRY) {
                b.append(": rank ").append(peer).append(" publishes another launch geometry");
            } else if (reason == CustomAllReduceKernels.POISON_UNREGISTERED) {
                b.append(": a CUDA graph was replayed before its captured inputs were registered"
                        + " (register the graph's inputs after capture, before the first replay)");
            }
            b.append(')');
        }
        if (geometryMismatch) {
            b.append(b.isEmpty() ? "" : "; ").append("launch geometry ").append(localGeometry).append(" here, ")
                    .append(peerGeometry != null && peerGeometry.maxBlocks() == 0 ? "none published"
                            : String.valueOf(peerGeometry))
                    .append(" on rank ").append(geometryPeer);
        }
        if (timeout.timedOut()) {
            b.append(b.isEmpty() ? "" : "; ").append("this rank's block ").append(timeout.block())
                    .append(" timed out at barrier ").append(timeout.barrier()).append(" waiting for rank ")
                    .append(timeout.peer());
        }
        return b.isEmpty() ? "healthy" : b.toString();
    }
}
