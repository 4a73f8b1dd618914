package dev.ar4j.internal.engine;

import dev.ar4j.internal.engine.FailureState.Failure;

import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.concurrent.locks.LockSupport;

/**
 * A communicator's watchdog: one daemon thread that polls its {@link Probe}s every interval (the
 * kernels' timeout record, NCCL's asynchronous error) and takes reports pushed to it (the
 * rendezvous's peer-loss events), and hands the first failure it sees to its handler, once. The
 * handler runs on the watchdog thread, so a report from a rendezvous thread returns at once.
 *
 * <p>With an interval of zero the probes are never polled (for measuring the fast path without
 * the watchdog); pushed reports are still handled.
 */
final class Watchdog implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger(Watchdog.class.getName());
    private static final long JOIN_NANOS = TimeUnit.SECONDS.toNanos(5);

    /** One source of failure: returns the failure it sees now, or null. Must not block. */
    @FunctionalInterface
    interface Probe {
        Failure poll();
    }

    private final Thread thread;
    private final long intervalNanos;
    private final List<Probe> probes;
    private final Consumer<Failure> handler;
    private final AtomicReference<Failure> reported = new AtomicReference<>();
    private volatile boolean stopped;

    Watchdog(String name, Duration interval, List<Probe> probes, Consumer<Failure> handler) {
        this.intervalNanos = interval.toNanos();
        this.probes = List.copyOf(probes);
        this.handler = handler;
        this.thread = Thread.ofPlatform().name(name).daemon(true).unstarted(this::run);
    }

    /**
     * What a communicator's watchdog polls: the kernels' timeout record and NCCL's asynchronous
     * error, each under the containment lock (so that neither reads what an abort or close frees).
     */
    static List<Probe> probes(Containment containment, int rank, CustomKernelPath kernels, NcclPath nccl) {
        List<Probe> probes = new java.util.ArrayList<>(2);
        if (kernels != null) {
            // The kernels' failure record: a peer's poison, this rank's own timeout, a geometry
            // mismatch or overlapping launches (CustomKernelPath.readFailure maps each).
            probes.add(() -> containment.whileOpen(kernels::readFailure));
        }
        if (nccl != null) {
            probes.add(() -> containment.whileOpen(() -> nccl.asyncError().map(e -> new Failure(
                    FailureState.Kind.PEER_LOST, -1, "rank " + rank + ": NCCL reported an asynchronous error ("
                    + e.getMessage() + "); a peer is probably gone or hung. This communicator is failed: close it "
                    + "and build a new group", e)).orElse(null)));
        }
        return probes;
    }

    void start() {
        thread.start();
    }

    /** Pushes a failure seen elsewhere (a rendezvous thread); returns at once. */
    void report(Failure failure) {
        if (reported.compareAndSet(null, failure)) {
            LockSupport.unpark(thread);
        }
    }

    /** The watchdog's thread (tests, and the guard's messages). */
    Thread thread() {
        return thread;
    }

    private void run() {
        while (!stopped) {
            Failure f = reported.get();
            if (f == null && intervalNanos > 0) {
                f = pollOnce();
            }
            if (f != null) {
                try {
                    handler.accept(f);
                } catch (RuntimeException e) {
                    LOG.log(Level.ERROR, "the failure handler threw while containing: " + f.message(), e);
                }
                return;  // one failure per communicator: it is failed from now on
            }
            if (intervalNanos > 0) {
                LockSupport.parkNanos(this, intervalNanos);
            } else {
                LockSupport.park(this);
            }
        }
    }

    /** Polls every probe once; the first failure wins. A probe that throws is a failure too. */
    Failure pollOnce() {
        for (Probe p : probes) {
            try {
                Failure f = p.poll();
                if (f != null) {
                    return f;
                }
            } catch (RuntimeException e) {
                return new Failure(FailureState.Kind.PEER_LOST, -1, "the watchdog could not read the group's state ("
                        + e.getMessage() + "); the communicator is failed: close it and build a new group", e);
            }
        }
        return null;
    }

    /**
     * Stops the thread and waits for it (bounded): after a true return no probe runs again.
     *
     * @return false if the thread did not stop in time (then nothing it reads may be freed)
     */
    @Override
    public void close() {
        stop();
    }

    boolean stop() {
        stopped = true;
        if (thread == Thread.currentThread() || !thread.isAlive() && thread.getState() != Thread.State.NEW) {
            return true;
        }
        if (thread.getState() == Thread.State.NEW) {
            return true;
        }
        LockSupport.unpark(thread);
        try {
            thread.join(Duration.ofNanos(JOIN_NANOS));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return !thread.isAlive();
    }
}
