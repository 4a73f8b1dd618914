package dev.ar4j.cuda;

/**
 * CUDA cannot run because no usable NVIDIA driver is installed: the runtime reported
 * {@code cudaErrorInsufficientDriver} while the driver version is 0 (no {@code libcuda.so.1}),
 * or {@code cudaErrorStubLibrary} (only the link-time stub of the driver was found).
 * A machine with a driver but no GPU raises {@link CudaNoDeviceException} instead.
 */
public final class CudaDriverMissingException extends CudaException {
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
    public CudaDriverMissingException(String call, int code, String errorName, String errorDescription, String advice) {
        super(call, code, errorName, errorDescription, advice);
    }
}
