package dev.ar4j.cuda;

import dev.ar4j.bindings.cudart.cuda_runtime_api_h;

/**
 * The {@code cudaDeviceP2PAttr} values. Without NVML, ar4j takes {@link #NATIVE_ATOMIC_SUPPORTED}
 * as the sign of an NVLink connection (PCIe peer links do not carry native atomics).
 */
public enum P2PAttribute {
    /** A relative value of the link's performance (lower is better). */
    PERFORMANCE_RANK(cuda_runtime_api_h.cudaDevP2PAttrPerformanceRank()),
    /** 1 if peer access between the two devices is supported. */
    ACCESS_SUPPORTED(cuda_runtime_api_h.cudaDevP2PAttrAccessSupported()),
    /** 1 if native atomic operations over the link are supported. */
    NATIVE_ATOMIC_SUPPORTED(cuda_runtime_api_h.cudaDevP2PAttrNativeAtomicSupported()),
    /** 1 if CUDA arrays can be accessed over the link. */
    CUDA_ARRAY_ACCESS_SUPPORTED(cuda_runtime_api_h.cudaDevP2PAttrCudaArrayAccessSupported()),
    /**
     * 1 if only some native atomic operations are supported over the link. New in CUDA 13.0: a
     * CUDA 12 runtime does not know it and {@link Cuda#p2pAttribute} then throws a
     * {@link CudaException} that says so.
     */
    ONLY_PARTIAL_NATIVE_ATOMIC_SUPPORTED(cuda_runtime_api_h.cudaDevP2PAttrOnlyPartialNativeAtomicSupported());

    private final int code;

    P2PAttribute(int code) {
        this.code = code;
    }

    /**
     * The {@code cudaDeviceP2PAttr} value.
     *
     * @return the runtime's value of this attribute
     */
    public int code() {
        return code;
    }
}
