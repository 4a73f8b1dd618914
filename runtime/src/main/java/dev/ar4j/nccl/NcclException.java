package dev.ar4j.nccl;


import dev.ar4j.Ar4jException;

/**
 * An NCCL call failed. Carries the call, the {@code ncclResult_t}, its name ({@code ncclInvalidArgument}),
 * NCCL's description of it ({@code ncclGetErrorString}) and NCCL's last error message
 * ({@code ncclGetLastError}), which usually says what exactly was wrong.
 */
public class NcclException extends Ar4jException {
    private static final long serialVersionUID = 1L;

    /** The call that failed. */
    private final String call;
    /** The {@code ncclResult_t}. */
    private final int code;
    /** The result's name. */
    private final String resultName;
    /** NCCL's description of the code. */
    private final String errorString;
    /** NCCL's last error message, empty if none. */
    private final String lastError;

    /**
     * An NCCL failure with its facts (ar4j composes the message for a plain failure; a subtype has its own).
     *
     * @param message the message
     * @param call the call that failed
     * @param code the {@code ncclResult_t}
     * @param resultName the result's name, such as {@code ncclInvalidUsage}
     * @param errorString NCCL's description of the code
     * @param lastError NCCL's last error message; {@code null} or empty if none
     * @param cause the cause, or {@code null}
     */
    public NcclException(String message, String call, int code, String resultName, String errorString, String lastError,
                  Throwable cause) {
        super(message, cause);
        this.call = call;
        this.code = code;
        this.resultName = resultName;
        this.errorString = errorString;
        this.lastError = lastError == null ? "" : lastError;
    }

    /**
     * The call that failed.
     *
     * @return the call's name and arguments
     */
    public String call() {
        return call;
    }

    /**
     * The {@code ncclResult_t}.
     *
     * @return the result code
     */
    public int code() {
        return code;
    }

    /**
     * The result's name, e.g. {@code ncclUnhandledCudaError}.
     *
     * @return the name of the result code
     */
    public String resultName() {
        return resultName;
    }

    /**
     * {@code ncclGetErrorString} of the code.
     *
     * @return NCCL's description of the result code
     */
    public String errorString() {
        return errorString;
    }

    /**
     * {@code ncclGetLastError}: NCCL's message about the failure; empty if it had none.
     *
     * @return the message, never {@code null}
     */
    public String lastError() {
        return lastError;
    }
}
