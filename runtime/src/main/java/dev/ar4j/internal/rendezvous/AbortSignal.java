package dev.ar4j.internal.rendezvous;

import dev.ar4j.BuildAbortedException;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The mechanism behind {@code dev.ar4j.BuildAbort}: a flag set once with a reason, the actions
 * that end the waits of whatever is in progress (close a socket being dialled, abort the
 * rendezvous, stop an NCCL init's poll), and a pause that ends early when it is set. Actions run
 * on the aborting thread, must not block, and are run once each.
 */
public final class AbortSignal {

    /** An action registered with {@link #onAbort}; closing it removes it. */
    public interface Registration extends AutoCloseable {
        @Override
        void close();
    }

    private static final System.Logger LOG = System.getLogger(AbortSignal.class.getName());

    private final Object lock = new Object();
    private final List<Runnable> actions = new ArrayList<>();  // guarded by lock
    private volatile String reason;

    /** A signal nobody can reach: for the builds and connects made without a handle. */
    public static AbortSignal none() {
        return new AbortSignal();
    }

    /**
     * Sets the signal (the first reason stays) and runs every registered action once.
     *
     * @return whether this call set it
     */
    public boolean abort(String why) {
        Objects.requireNonNull(why, "reason");
        List<Runnable> toRun;
        synchronized (lock) {
            if (reason != null) {
                return false;
            }
            reason = why;
            toRun = new ArrayList<>(actions);
            actions.clear();
            lock.notifyAll();
        }
        for (Runnable action : toRun) {
            run(action);
        }
        return true;
    }

    /** Whether the signal is set. */
    public boolean aborted() {
        return reason != null;
    }

    /** The reason given, or null. */
    public String reason() {
        return reason;
    }

    /**
     * Runs {@code action} when the signal is set: at once (on this thread) if it already is.
     *
     * @return the handle that removes the action
     */
    public Registration onAbort(Runnable action) {
        Objects.requireNonNull(action, "action");
        synchronized (lock) {
            if (reason == null) {
                actions.add(action);
                return () -> {
                    synchronized (lock) {
                        actions.remove(action);
                    }
                };
            }
        }
        run(action);
        return () -> { };
    }

    /**
     * @throws BuildAbortedException if the signal is set, naming {@code during} (what was about to start)
     */
    public void throwIfAborted(String during) {
        String why = reason;
        if (why != null) {
            throw aborted(during, null);
        }
    }

    /** The exception of an abort seen {@code during} a step, with the failure it caused there. */
    public BuildAbortedException aborted(String during, Throwable cause) {
        return new BuildAbortedException("the build was aborted (" + reason + ") " + during
                + "; what it had made was freed; build a new group to try again", cause);
    }

    /**
     * Pauses up to {@code millis}, ending early when the signal is set.
     *
     * @throws InterruptedException if the thread is interrupted
     */
    public void sleep(long millis) throws InterruptedException {
        long deadline = System.nanoTime() + millis * 1_000_000L;
        synchronized (lock) {
            while (reason == null) {
                long left = (deadline - System.nanoTime()) / 1_000_000L;
                if (left <= 0) {
                    return;
                }
                lock.wait(left);
            }
        }
    }

    private static void run(Runnable action) {
        try {
            action.run();
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "an abort action failed (" + e + "); the abort goes on", e);
        }
    }
}
