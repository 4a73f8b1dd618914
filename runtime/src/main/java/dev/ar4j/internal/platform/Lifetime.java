package dev.ar4j.internal.platform;

import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Whether a native resource (or a view of one) may still be used. A view's lifetime ends when it
 * is closed or when any lifetime it derives from ends. Closing is a one-time transition, so the
 * owner frees the resource exactly once however many threads call close.
 */
public final class Lifetime {
    private final Lifetime parent;
    private final AtomicBoolean closed = new AtomicBoolean();

    public Lifetime(Lifetime parent) {
        this.parent = parent;
    }

    /** True until this lifetime or one it derives from is closed. */
    public boolean isAlive() {
        for (Lifetime l = this; l != null; l = l.parent) {
            if (l.closed.get()) {
                return false;
            }
        }
        return true;
    }

    /** Ends this lifetime; true for the one call that ended it. */
    public boolean end() {
        return closed.compareAndSet(false, true);
    }

    /** Whether this lifetime itself (not a parent) was ended. */
    public boolean endedItself() {
        return closed.get();
    }
}
