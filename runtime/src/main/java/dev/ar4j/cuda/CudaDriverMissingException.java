package dev.ar4j.cuda;

/**
 * CUDA cannot run because no usable NVIDIA driver is installed: the runtime reported
 * {@code cudaErrorInsufficientDriver} while the driver version is 0 (no {@code libcuda.so.1}),
 * or {@code cudaErrorStubLibrary} (only the link-time stub of the driver was found).
 * A machine with a driver but no GPU raises {@link CudaNoDeviceException} instead.
 */
public final class CudaDriverMissingException extends CudaException {
    private static final long serialVersionUID = 1L;

    CudaDriverMissingException(String call, int code, String errorName, String errorDescription, String advice) {
        super(call, code, errorName, errorDescription, advice);
    }
}
