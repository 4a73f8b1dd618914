package dev.ar4j.cuda;

import dev.ar4j.Ar4jException;

/**
 * A CUDA runtime or driver call failed. Carries the call, the error code, its symbolic name
 * ({@code cudaErrorMemoryAllocation}, {@code CUDA_ERROR_INVALID_VALUE}) and the library's own
 * description of it.
 */
public class CudaException extends Ar4jException {
    private static final long serialVersionUID = 1L;

    /** The call that failed, with the arguments that help. */
    private final String call;
    /** The {@code cudaError_t} or {@code CUresult}. */
    private final int code;
    /** The code's symbolic name. */
    private final String errorName;
    /** The library's description of the code. */
    private final String errorDescription;

    /**
     * Creates the exception for one failed CUDA runtime or driver call; the message joins the call, the name,
     * the code, the description and the advice.
     *
     * @param call             the call that failed, with whatever arguments help ("cudaMalloc(4096 bytes)")
     * @param code             the {@code cudaError_t} or {@code CUresult}
     * @param errorName        the code's symbolic name
     * @param errorDescription the library's description of the code
     * @param advice           what to do about it, or null
     */
    public CudaException(String call, int code, String errorName, String errorDescription, String advice) {
        super(call + " failed: " + errorName + " (" + code + "): " + errorDescription
                + (advice == null ? "" : ". " + advice));
        this.call = call;
        this.code = code;
        this.errorName = errorName;
        this.errorDescription = errorDescription;
    }

    /**
     * The call that failed.
     *
     * @return the call's name and arguments, as given to the constructor
     */
    public String call() {
        return call;
    }

    /**
     * The numeric error code ({@code cudaError_t}, or {@code CUresult} for driver calls).
     *
     * @return the non-zero code the call returned
     */
    public int code() {
        return code;
    }

    /**
     * The code's symbolic name, e.g. {@code cudaErrorInsufficientDriver}.
     *
     * @return the symbolic name
     */
    public String errorName() {
        return errorName;
    }

    /**
     * CUDA's description of the code.
     *
     * @return the description
     */
    public String errorDescription() {
        return errorDescription;
    }
}
