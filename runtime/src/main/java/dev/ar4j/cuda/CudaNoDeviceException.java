package dev.ar4j.cuda;

/**
 * The NVIDIA driver is present but no CUDA device is visible ({@code cudaErrorNoDevice}):
 * no GPU, or {@code CUDA_VISIBLE_DEVICES} hides them all.
 */
public final class CudaNoDeviceException extends CudaException {
    private static final long serialVersionUID = 1L;

    CudaNoDeviceException(String call, int code, String errorName, String errorDescription, String advice) {
        super(call, code, errorName, errorDescription, advice);
    }
}
