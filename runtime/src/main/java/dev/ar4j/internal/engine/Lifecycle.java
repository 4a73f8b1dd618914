package dev.ar4j.internal.engine;

import dev.ar4j.Health;
import dev.ar4j.internal.engine.FailureState.Failure;
import dev.ar4j.internal.engine.FailureState.Kind;
import dev.ar4j.cuda.Cuda;

import java.util.concurrent.TimeUnit;

/**
 * One communicator's life once its native parts are open: {@link #start} starts the watchdog
 * thread and subscribes it to the rendezvous's peer-loss reports (closing the parts if that
 * fails); {@link #close} is the close sequence of {@code Communicator.close()} (refuse new calls,
 * wait out the call in flight, stop the watchdog, free every part exactly once under the
 * containment lock); {@link #health} reads the outcome.
 */
final class Lifecycle {

    /** How long {@link #close()} lets a call in flight leave (twice: before and after failing it). */
    private static final long CLOSE_WAIT_NANOS = TimeUnit.SECONDS.toNanos(2);

    private final GroupParts parts;
    private final FailureState state;
    private final CallGuard guard;
    private final Containment containment;
    private final Watchdog watchdog;
    private final AutoCloseable peerLoss;
    private volatile boolean closed;

    private Lifecycle(GroupParts parts, FailureState state, CallGuard guard, Containment containment,
                      Watchdog watchdog, AutoCloseable peerLoss) {
        this.parts = parts;
        this.state = state;
        this.guard = guard;
        this.containment = containment;
        this.watchdog = watchdog;
        this.peerLoss = peerLoss;
    }

    /** Starts the watchdog and the peer-loss subscription; on failure closes {@code parts} and rethrows. */
    static Lifecycle start(GroupParts parts, Settings b, FailureState state, CallGuard guard,
                           Containment containment) {
        Group g = parts.group();
        Watchdog w = null;
        AutoCloseable subscription = null;
        try {
            w = new Watchdog("ar4j-watchdog-rank-" + g.rank, BuilderChecks.watchdogInterval(b),
                    Watchdog.probes(containment, g.rank, parts.kernels(), parts.nccl()), containment::contain);
            Watchdog dog = w;
            int me = g.rank;
            subscription = g.rendezvous.onPeerLost((lost, reason) -> dog.report(new Failure(Kind.PEER_LOST, lost,
                    "rank " + me + ": the rendezvous reports " + (lost < 0 ? "that the group failed" : "rank " + lost
                    + " lost") + " (" + reason + "); this communicator is failed: close it, and build a new group "
                    + "once the lost rank is restarted", null)));
            w.start();
        } catch (RuntimeException e) {
            if (w != null) {
                w.stop();
            }
            Closing.quietly(e, subscription);
            parts.closeAfterFailure(e);
            throw e;
        }
        return new Lifecycle(parts, state, guard, containment, w, subscription);
    }

    /** Whether {@link #close()} freed the parts. */
    boolean closed() {
        return closed;
    }

    /** {@code Communicator.health()}. */
    Health health() {
        Failure f = state.get();
        if (closed) {
            return new Health(Health.Status.CLOSED, f == null ? -1 : f.peer(), f == null ? "closed" : f.message());
        }
        if (f == null) {
            return new Health(Health.Status.HEALTHY, -1, "");
        }
        return new Health(f.kind() == Kind.ABORTED ? Health.Status.ABORTED : Health.Status.FAILED, f.peer(),
                f.message());
    }

    /** {@code Communicator.close()}. */
    void close() {
        Group group = parts.group();
        CustomKernelPath kernels = parts.kernels();
        NcclPath nccl = parts.nccl();
        guard.beginClose();
        Thread inside = guard.awaitIdle(CLOSE_WAIT_NANOS);
        if (inside != null) {
            containment.contain(new Failure(Kind.ABORTED, -1, "rank " + group.rank + ": close() was called while "
                    + "thread '" + inside.getName() + "' was inside " + guard.callInFlight() + "; the communicator "
                    + "is closed", null));
            inside = guard.awaitIdle(CLOSE_WAIT_NANOS);
            if (inside != null) {
                throw new IllegalStateException("rank " + group.rank + ": close() waited " + 2 * CLOSE_WAIT_NANOS / 1_000_000
                        + " ms for thread '" + inside.getName() + "' to leave " + guard.callInFlight() + "; nothing was "
                        + "freed (freeing under a running call would crash the JVM). Call close() again once it returned");
            }
        }
        if (!watchdog.stop()) {
            throw new IllegalStateException("rank " + group.rank + ": the watchdog thread did not stop in time; nothing "
                    + "was freed. Call close() again");
        }
        RuntimeException failure = new RuntimeException("closing the communicator (rank " + group.rank + ") failed");
        containment.free(() -> {
            closed = true;
            Closing.quietly(failure, peerLoss);
            if (kernels != null) {
                // A kernel of this context may still run (or spin on a lost peer until it is
                // poisoned or times out): the memory it uses is freed only after it ended.
                try {
                    int current = Cuda.currentDevice();
                    Cuda.setDevice(group.device);
                    try {
                        Cuda.deviceSynchronize();
                    } finally {
                        Cuda.setDevice(current);
                    }
                } catch (RuntimeException e) {
                    failure.addSuppressed(e);
                }
            }
            Closing.quietly(failure, kernels);
            group.closeSharedBuffers(failure);
            if (nccl != null) {
                try {
                    nccl.close(state.failed());
                } catch (RuntimeException e) {
                    failure.addSuppressed(e);
                }
            }
            group.closeRendezvous(failure);
        });
        if (failure.getSuppressed().length > 0) {
            throw failure;
        }
    }
}
