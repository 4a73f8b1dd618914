package dev.ar4j.nccl;


/**
 * An NCCL wait ended because the communicator was aborted (by {@code Communicator.abort()}, from
 * another thread, or by the watchdog) or because a lost rank ended the group's NCCL init.
 * The communicator is unusable afterwards; NCCL's resources were released by {@code ncclCommAbort}.
 */
public final class NcclAbortedException extends NcclException {
    private static final long serialVersionUID = 1L;

    /** This process's rank in the aborted communicator. */
    private final int rank;

    /**
     * A wait on {@code call} ended by an abort.
     *
     * @param message what happened and what to do
     * @param call the NCCL call that was waiting
     * @param rank this process's rank in the communicator
     * @param cause the failure that led to the abort, or {@code null}
     */
    public NcclAbortedException(String message, String call, int rank, Throwable cause) {
        super(message, call, NcclChecks.IN_PROGRESS, NcclChecks.resultName(NcclChecks.IN_PROGRESS),
                "operation abandoned in progress", "", cause);
        this.rank = rank;
    }

    /**
     * This process's rank in the aborted communicator.
     *
     * @return the rank, 0 or more
     */
    public int rank() {
        return rank;
    }
}
