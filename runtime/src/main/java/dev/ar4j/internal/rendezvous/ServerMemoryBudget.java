package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.*;

/**
 * The rendezvous server's memory budget ({@link RendezvousSettings#maxServerBytes()}), shared
 * fairly among the ranks. Every rank's stored values, the large requests being read and the copy
 * a SET makes of its value are charged to the rank before they are allocated. Half the budget is
 * reserved, split evenly: a rank's first {@link #reserve()} bytes are always its own, so ranks that
 * exchange small values go on whatever the others do. The other half is common: a rank over its
 * reserve draws from it, and when it is used up such a rank is refused (named, with what it holds)
 * while every other rank keeps its reserve. In total no more than the budget is ever charged.
 * Replies are streamed from the stored values and cost nothing beyond them.
 */
final class ServerMemoryBudget {
    /** Frames up to this size are not charged: each connection reads at most one at a time. */
    static final int UNCHARGED_FRAME_BYTES = RendezvousProtocol.MAX_MESSAGE_PAYLOAD;

    private final long limit;
    private final long reserve;
    private final long commonLimit;
    /** Bytes charged to each rank. */
    private final long[] usedBy;
    private long used;
    /** Bytes charged beyond the ranks' reserves (and those of no rank). */
    private long common;

    /** A budget of {@code limit} bytes for a group of {@code ranks}. */
    ServerMemoryBudget(long limit, int ranks) {
        this.limit = limit;
        this.reserve = limit / 2 / ranks;
        this.commonLimit = limit - reserve * ranks;
        this.usedBy = new long[ranks];
    }

    /**
     * Charges {@code bytes} to {@code rank} if they fit its reserve or the common part; false
     * (nothing charged) if they do not. A rank below 0 (no rank yet) draws from the common part.
     */
    synchronized boolean tryCharge(int rank, long bytes) {
        if (bytes <= 0) {
            return true;
        }
        long extra = rank < 0 ? bytes : beyondReserve(usedBy[rank] + bytes) - beyondReserve(usedBy[rank]);
        if (common + extra > commonLimit) {
            return false;
        }
        if (rank >= 0) {
            usedBy[rank] += bytes;
        }
        common += extra;
        used += bytes;
        return true;
    }

    synchronized void release(int rank, long bytes) {
        if (bytes <= 0) {
            return;
        }
        long extra = rank < 0 ? bytes : beyondReserve(usedBy[rank]) - beyondReserve(usedBy[rank] - bytes);
        if (rank >= 0) {
            usedBy[rank] -= bytes;
        }
        common -= extra;
        used -= bytes;
    }

    private long beyondReserve(long bytes) {
        return Math.max(0, bytes - reserve);
    }

    long limit() {
        return limit;
    }

    /** What each rank may always hold: half the budget split evenly among the ranks. */
    long reserve() {
        return reserve;
    }

    synchronized long used() {
        return used;
    }

    synchronized long usedBy(int rank) {
        return usedBy[rank];
    }

    /** For messages: why {@code bytes} more for {@code rank} do not fit. */
    String describeRefusal(int rank, long bytes, String what) {
        long held;
        long commonUsed;
        synchronized (this) {
            held = rank >= 0 ? usedBy[rank] : 0;
            commonUsed = common;
        }
        return "the rendezvous server's memory budget has no room for " + what + " of " + bytes + " bytes"
                + (rank >= 0 ? " from rank " + rank + ": it holds " + held + " bytes, over its reserve of " + reserve
                + " bytes (half the budget, split evenly among the ranks), and " : ": ")
                + commonUsed + " of the " + commonLimit + " common bytes are in use, of its " + limit + " bytes in all"
                + " (values and the requests being read); the other ranks keep their reserves. Raise"
                + " ar4j.rdzv.maxServerBytes / AR4J_RDZV_MAX_SERVER_BYTES (and the serving JVM's -Xmx), or exchange less";
    }
}
