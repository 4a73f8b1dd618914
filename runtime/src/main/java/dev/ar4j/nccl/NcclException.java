package dev.ar4j.nccl;

import dev.ar4j.Ar4jException;

/**
 * An NCCL call failed. Carries the call, the {@code ncclResult_t}, its name ({@code ncclInvalidArgument}),
 * NCCL's description of it ({@code ncclGetErrorString}) and NCCL's last error message
 * ({@code ncclGetLastError}), which usually says what exactly was wrong.
 */
public class NcclException extends Ar4jException {
    private static final long serialVersionUID = 1L;

    private final String call;
    private final int code;
    private final String resultName;
    private final String errorString;
    private final String lastError;

    NcclException(String call, int code, String resultName, String errorString, String lastError) {
        this(call + " failed: " + resultName + " (" + code + "): " + errorString
                + (lastError == null || lastError.isEmpty() ? "" : "; NCCL's last error: " + lastError)
                + NcclErrors.advice(code), call, code, resultName, errorString, lastError, null);
    }

    /** For the subtypes: a message of their own, with the same facts. */
    NcclException(String message, String call, int code, String resultName, String errorString, String lastError,
                  Throwable cause) {
        super(message, cause);
        this.call = call;
        this.code = code;
        this.resultName = resultName;
        this.errorString = errorString;
        this.lastError = lastError == null ? "" : lastError;
    }

    /** The call that failed. */
    public String call() {
        return call;
    }

    /** The {@code ncclResult_t}. */
    public int code() {
        return code;
    }

    /** The result's name, e.g. {@code ncclUnhandledCudaError}. */
    public String resultName() {
        return resultName;
    }

    /** {@code ncclGetErrorString} of the code. */
    public String errorString() {
        return errorString;
    }

    /** {@code ncclGetLastError}: NCCL's message about the failure; empty if it had none. */
    public String lastError() {
        return lastError;
    }
}
