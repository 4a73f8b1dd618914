package dev.ar4j.nccl;


import java.time.Duration;

/**
 * An NCCL operation was still in progress ({@code ncclInProgress}) when its deadline passed: most
 * often a rank that never joined {@code ncclCommInitRankConfig} or a peer that died. The
 * communicator was aborted ({@code ncclCommAbort}) before this was thrown, so nothing is left
 * running; make a new one. {@link #code()} is {@code ncclInProgress}, the last state NCCL reported.
 */
public final class NcclTimeoutException extends NcclException {
    private static final long serialVersionUID = 1L;

    /** This process's rank in the communicator that timed out. */
    private final int rank;
    /** The communicator's number of ranks. */
    private final int nranks;
    /** The deadline that passed. */
    private final Duration timeout;

    /**
     * A wait on {@code call} that passed {@code timeout}.
     *
     * @param message what happened and what to do
     * @param call the NCCL call that was waited on
     * @param rank this process's rank in the communicator
     * @param nranks the communicator's number of ranks
     * @param timeout the deadline that passed
     * @param lastError NCCL's last error message, empty if none
     */
    public NcclTimeoutException(String message, String call, int rank, int nranks, Duration timeout, String lastError) {
        super(message, call, NcclChecks.IN_PROGRESS, NcclChecks.resultName(NcclChecks.IN_PROGRESS),
                "operation still in progress", lastError, null);
        this.rank = rank;
        this.nranks = nranks;
        this.timeout = timeout;
    }

    /**
     * This process's rank in the communicator that timed out.
     *
     * @return the rank, 0 to {@link #nranks()} - 1
     */
    public int rank() {
        return rank;
    }

    /**
     * The communicator's number of ranks.
     *
     * @return the number of ranks, at least 1
     */
    public int nranks() {
        return nranks;
    }

    /**
     * The deadline that passed.
     *
     * @return the communicator's wait bound
     */
    public Duration timeout() {
        return timeout;
    }
}
