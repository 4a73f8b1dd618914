package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.*;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The rendezvous server's memory budget in total ({@link RendezvousSettings#maxServerBytes()}):
 * every rank's stored values and every large request being read are charged to it before they are
 * allocated, so no request, however large or however many at once, makes the server allocate
 * more than the budget. Replies are streamed from the stored values and cost nothing beyond them.
 */
final class ServerMemoryBudget {
    /** Frames up to this size are not charged: each connection reads at most one at a time. */
    static final int UNCHARGED_FRAME_BYTES = RendezvousProtocol.MAX_MESSAGE_PAYLOAD;

    private final long limit;
    private final AtomicLong used = new AtomicLong();

    ServerMemoryBudget(long limit) {
        this.limit = limit;
    }

    /** Charges {@code bytes} if they fit; false (nothing charged) if they do not. */
    boolean tryCharge(long bytes) {
        if (bytes <= 0) {
            return true;
        }
        while (true) {
            long now = used.get();
            if (now + bytes > limit) {
                return false;
            }
            if (used.compareAndSet(now, now + bytes)) {
                return true;
            }
        }
    }

    void release(long bytes) {
        if (bytes > 0) {
            used.addAndGet(-bytes);
        }
    }

    long limit() {
        return limit;
    }

    long used() {
        return used.get();
    }

    /** For messages: why {@code bytes} more do not fit. */
    String describeRefusal(long bytes, String what) {
        return "the rendezvous server's memory budget has no room for " + what + " of " + bytes + " bytes: "
                + used() + " of its " + limit + " bytes are in use (all ranks' values and the requests being read);"
                + " raise ar4j.rdzv.maxServerBytes / AR4J_RDZV_MAX_SERVER_BYTES (and the serving JVM's -Xmx), or"
                + " exchange less";
    }
}
