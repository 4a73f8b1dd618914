package dev.ar4j.nccl;


/**
 * The installed NCCL (or the GPU) cannot do what was asked: a data type, reduction or function
 * that came in a later NCCL release (fp8 before 2.24, {@code ncclAvg} or bf16 before 2.10,
 * {@code ncclCommSplit} before 2.18, ...), or an fp8 reduction on a GPU older than compute
 * capability 9.0. Refused before NCCL is called, so the communicator is unharmed;
 * {@link #code()} is {@code ncclInvalidArgument}, what NCCL itself would have answered.
 */
public final class NcclUnsupportedException extends NcclException {
    private static final long serialVersionUID = 1L;

    /** The NCCL version that is loaded. */
    private final NcclVersion installed;
    /** The oldest NCCL version that has the feature. */
    private final NcclVersion required;

    /**
     * A call the loaded NCCL or GPU cannot make.
     *
     * @param message what is missing and what to do
     * @param call the refused call
     * @param installed the loaded NCCL's version
     * @param required the oldest version that has the feature
     */
    public NcclUnsupportedException(String message, String call, NcclVersion installed, NcclVersion required) {
        super(message, call, NcclChecks.INVALID_ARGUMENT, NcclChecks.resultName(NcclChecks.INVALID_ARGUMENT),
                "unsupported by the installed NCCL or GPU", "", null);
        this.installed = installed;
        this.required = required;
    }

    /**
     * The NCCL version that is loaded.
     *
     * @return the loaded version
     */
    public NcclVersion installed() {
        return installed;
    }

    /**
     * The oldest NCCL version that has the feature (equal to {@link #installed()} when the GPU is what lacks it).
     *
     * @return the required version
     */
    public NcclVersion required() {
        return required;
    }
}
