package dev.ar4j.nccl;

/**
 * An NCCL wait ended because the communicator was aborted ({@link NcclCommunicator#abort()} from
 * another thread, a watchdog) or because the caller's cancel condition became true during
 * {@link NcclCommunicator#initRank(NcclUniqueId, int, int, java.time.Duration, java.util.function.BooleanSupplier)}.
 * The communicator is unusable afterwards; NCCL's resources were released by {@code ncclCommAbort}.
 */
public final class NcclAbortedException extends NcclException {
    private static final long serialVersionUID = 1L;

    /** This process's rank in the aborted communicator. */
    private final int rank;

    NcclAbortedException(String message, String call, int rank, Throwable cause) {
        super(message, call, NcclErrors.IN_PROGRESS, NcclErrors.resultName(NcclErrors.IN_PROGRESS),
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
