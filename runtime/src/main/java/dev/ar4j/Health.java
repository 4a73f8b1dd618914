package dev.ar4j;

/**
 * What a communicator knows about its group right now ({@link Communicator#health()}): cheap to
 * read from any thread, for a serving process's health endpoint.
 *
 * @param status what state the communicator is in
 * @param peer   the rank the failure is about, or -1 (no failure, the whole group, or unknown)
 * @param reason what was seen and what to do; empty while healthy
 */
public record Health(Status status, int peer, String reason) {

    /** The states of a communicator. */
    public enum Status {
        /** Usable: no failure seen. */
        HEALTHY,
        /** A peer was lost, a kernel timed out, NCCL failed or the ranks fell out of step: close it. */
        FAILED,
        /** {@link Communicator#abort()} was called. */
        ABORTED,
        /** {@link Communicator#close()} was called. */
        CLOSED
    }

    /**
     * Whether the communicator can still be used.
     *
     * @return {@code true} if the status is {@link Status#HEALTHY HEALTHY}
     */
    public boolean isHealthy() {
        return status == Status.HEALTHY;
    }
}
