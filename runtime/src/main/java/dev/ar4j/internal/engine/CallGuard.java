package dev.ar4j.internal.engine;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * The close protocol of one communicator, modelled on a shared {@code Arena}'s: every public call
 * that reaches native state runs between {@link #enter} and {@link #exit}; {@link #beginClose}
 * refuses new calls, and {@link #awaitIdle} waits (bounded) until the call in flight has left, so
 * that native state is freed only when no call uses it.
 *
 * <p>It also enforces "one thread at a time": a call from a second thread while another thread is
 * inside throws {@link IllegalStateException} naming both threads, instead of letting the two
 * interleave barrier counters (silently wrong sums).
 *
 * <p>Cost per call: one uncontended compare-and-set and two volatile reads on entry, one release
 * store on exit. The check-then-use race with {@code close} is closed Dekker-style: the caller
 * publishes itself (CAS, a full fence) before it reads the closing and failed flags; the closer
 * publishes the flag before it reads the owner.
 */
final class CallGuard {

    private final AtomicReference<Thread> owner = new AtomicReference<>();
    private final FailureState failure;
    private volatile boolean closing;
    private String ownerCall = "";  // for messages only; racy reads are harmless

    CallGuard(FailureState failure) {
        this.failure = failure;
    }

    /**
     * Enters a call; pair with {@link #exit()} in a finally block.
     *
     * @param call what is being called, for messages
     * @throws IllegalStateException if closed, or another thread is inside a call
     * @throws RuntimeException      the recorded failure, if the communicator failed
     */
    void enter(String call) {
        Thread me = Thread.currentThread();
        if (!owner.compareAndSet(null, me)) {
            Thread other = owner.get();
            if (other == me) {
                throw new IllegalStateException(call + " was called from inside " + ownerCall + " on the same thread "
                        + "(a listener or callback re-entered the communicator); return first");
            }
            throw new IllegalStateException("thread '" + me.getName() + "' called " + call + " while thread '"
                    + (other == null ? "?" : other.getName()) + "' is inside " + ownerCall + " on this communicator; "
                    + "a communicator is used by one thread at a time: hand it over with a happens-before edge "
                    + "(a lock, a queue) or give each thread its own group");
        }
        if (closing) {
            owner.set(null);
            throw new IllegalStateException("the communicator is closed (" + call + ")");
        }
        if (failure.failed()) {
            owner.set(null);
            failure.throwIfFailed();
        }
        ownerCall = call;
    }

    /** Leaves the call entered by this thread. */
    void exit() {
        owner.setRelease(null);
    }

    /** Refuses every later call; returns false if already closing. */
    boolean beginClose() {
        if (closing) {
            return false;
        }
        closing = true;
        return true;
    }

    boolean isClosing() {
        return closing;
    }

    /**
     * Waits until no call is in flight, at most {@code nanos}.
     *
     * @return null when idle, otherwise the thread still inside (named in the caller's message)
     */
    Thread awaitIdle(long nanos) {
        long deadline = System.nanoTime() + nanos;
        Thread inside;
        while ((inside = owner.get()) != null) {
            if (inside == Thread.currentThread()) {
                return null;  // closing or aborting from inside a call (a listener): nothing else runs here
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return inside;
            }
            LockSupport.parkNanos(Math.min(left, TimeUnit.MICROSECONDS.toNanos(200)));
        }
        return null;
    }

    /** The call in flight, for messages. */
    String callInFlight() {
        return ownerCall;
    }
}
