package dev.ar4j.cuda;

/**
 * The NVIDIA driver is present but no CUDA device is visible ({@code cudaErrorNoDevice}):
 * no GPU, or {@code CUDA_VISIBLE_DEVICES} hides them all.
 */
public final class CudaNoDeviceException extends CudaException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception for one failed CUDA call (see {@link CudaException#CudaException}).
     *
     * @param call             the call that failed
     * @param code             the {@code cudaError_t} or {@code CUresult}
     * @param errorName        the code's symbolic name
     * @param errorDescription the library's description of the code
     * @param advice           what to do about it, or null
     */
    public CudaNoDeviceException(String call, int code, String errorName, String errorDescription, String advice) {
        super(call, code, errorName, errorDescription, advice);
    }
}
