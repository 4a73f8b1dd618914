package dev.ar4j;

import dev.ar4j.internal.rendezvous.AbortSignal;

import java.util.Objects;

/**
 * Ends a communicator's build from another thread: a watchdog, a shutdown hook, a job scheduler
 * that gave up. Hand it to {@link Communicator.Builder#abortWith(BuildAbort)}, then call
 * {@link #abort(String)} from any thread at any time:
 * <ul>
 *   <li>before the build starts: {@code build()} throws {@link BuildAbortedException} at once;</li>
 *   <li>while it runs (connecting to the rendezvous, waiting for the peers, NCCL's init, sharing
 *       buffers): every wait of the build ends at once, everything it made is freed, and
 *       {@code build()} throws {@link BuildAbortedException}; through the TCP and in-process
 *       rendezvous the peers' builds that wait for this rank end too, with a
 *       {@link PeerLostException} naming it and the reason;</li>
 *   <li>after {@code build()} returned: the communicator it built is {@linkplain Communicator#abort()
 *       aborted}, until that communicator is closed.</li>
 * </ul>
 * {@code abort} never blocks and is idempotent (the first reason is kept). One handle may be given
 * to several builds (every rank of a {@link Communicator#localGroup localGroup}, or one build and
 * its retries): it ends, or aborts, all of them. A rendezvous of the caller's own ({@code rendezvous(..)}) that does not implement
 * {@code Rendezvous.abortRank} leaves its waits to end at their timeout.
 *
 * <pre>{@code
 * BuildAbort abort = new BuildAbort();
 * scheduler.schedule(() -> abort.abort("the job was cancelled"), 5, TimeUnit.MINUTES);
 * try (Communicator comm = Communicator.builder().fromEnvironment().abortWith(abort).build()) {
 *     ...
 * }
 * }</pre>
 */
public final class BuildAbort {

    private final AbortSignal signal = new AbortSignal();

    /** A handle nobody has aborted yet. */
    public BuildAbort() {
    }

    /**
     * Ends the build (or aborts the communicator it built, see above); any thread, never blocks.
     *
     * @param reason why, for this rank's exception and the peers' messages; not {@code null}
     */
    public void abort(String reason) {
        signal.abort(Objects.requireNonNull(reason, "reason"));
    }

    /**
     * Whether {@link #abort(String)} was called.
     *
     * @return true once aborted
     */
    public boolean isAborted() {
        return signal.aborted();
    }

    /** The mechanism behind the handle, for the builds given it. */
    AbortSignal signal() {
        return signal;
    }

    @Override
    public String toString() {
        return signal.aborted() ? "BuildAbort[aborted: " + signal.reason() + "]" : "BuildAbort[not aborted]";
    }
}
