package dev.ar4j.internal.engine;

import java.util.function.Consumer;

import dev.ar4j.internal.engine.FailureState.Failure;

import java.lang.System.Logger.Level;
import java.util.concurrent.TimeUnit;

/**
 * What happens when a communicator fails, from whichever thread sees it first (the watchdog, a
 * calling thread, {@code Communicator.abort()}): record the failure (the first one wins), let the
 * call in flight leave (bounded), poison the custom kernels, abort NCCL, and tell the application.
 * Poisoning and aborting run under this object's lock, which {@code Communicator.close()} also
 * holds while it frees, so neither runs on freed state.
 */
final class Containment {

    private static final System.Logger LOG = System.getLogger(Containment.class.getName());
    /** How long containment lets a call in flight leave before it aborts NCCL under it. */
    static final long IN_FLIGHT_WAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(200);

    private final int rank;
    private final FailureState state;
    private final CallGuard guard;
    private final CustomKernelPath kernels;  // may be null
    private final NcclPath nccl;             // may be null
    private final Consumer<RuntimeException> listener;  // may be null
    private boolean freed;

    Containment(int rank, FailureState state, CallGuard guard, CustomKernelPath kernels, NcclPath nccl,
                Consumer<RuntimeException> listener) {
        this.rank = rank;
        this.state = state;
        this.guard = guard;
        this.kernels = kernels;
        this.nccl = nccl;
        this.listener = listener;
    }


    /**
     * Contains {@code failure}: does the work once, for the first failure only.
     *
     * @return whether this failure was the first
     */
    boolean contain(Failure failure) {
        if (!state.fail(failure)) {
            return false;
        }
        Thread inside = guard.awaitIdle(IN_FLIGHT_WAIT_NANOS);
        synchronized (this) {
            if (!freed) {
                poisonKernels(failure);
                abortNccl(inside);
            }
        }
        LOG.log(Level.ERROR, "ar4j rank " + rank + " failed: " + failure.message());
        if (listener != null) {
            try {
                listener.accept(failure.toException());
            } catch (RuntimeException e) {
                LOG.log(Level.WARNING, "the failure listener threw; ignored", e);
            }
        }
        return true;
    }

    /** Poisons the custom kernels; see {@link CustomKernelPath#poison} (the hook the kernel poison word plugs into). */
    private void poisonKernels(Failure failure) {
        if (kernels != null) {
            kernels.poison(failure.kind(), failure.message());
        }
    }

    private void abortNccl(Thread inside) {
        if (nccl == null) {
            return;
        }
        if (inside != null) {
            LOG.log(Level.WARNING, "ar4j rank " + rank + ": thread '" + inside.getName() + "' is still inside "
                    + guard.callInFlight() + "; aborting NCCL under it to unblock it");
        }
        try {
            nccl.abort();
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "ar4j rank " + rank + ": ncclCommAbort failed while containing a failure", e);
        }
    }

    /**
     * {@code Communicator.checkPeers()}: under the call guard, reads the kernels' failure record
     * now and contains and throws the failure it holds.
     */
    void checkPeers() {
        guard.enter("checkPeers");
        try {
            if (kernels != null) {
                // The kernels' own record, read now: a peer's poison that reached this rank's
                // signal block (its kernels then wrote NaN) fails this call even before the
                // watchdog's next poll saw it.
                Failure f = kernels.readFailure();
                if (f != null) {
                    contain(f);
                    throw f.toException();
                }
            }
        } finally {
            guard.exit();
        }
    }

    /**
     * Runs {@code read} under the lock unless the communicator failed or was freed (then null):
     * the watchdog's probes, so that no probe reads state that an abort or close frees.
     */
    synchronized Failure whileOpen(java.util.function.Supplier<Failure> read) {
        if (freed || state.failed()) {
            return null;
        }
        return read.get();
    }

    /** Runs {@code free} under the lock, once; containment does nothing native afterwards. */
    synchronized void free(Runnable free) {
        if (!freed) {
            freed = true;
            free.run();
        }
    }
}
