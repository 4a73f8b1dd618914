package dev.ar4j.cuda;

import dev.ar4j.bindings.cudart.cuda_runtime_api_h;

/** The {@code cudaDeviceAttr} values ar4j reads; {@link Cuda#deviceAttribute(int, int)} takes any other by code. */
public enum DeviceAttribute {
    /** Compute capability, major number (9 for H100/H200). */
    COMPUTE_CAPABILITY_MAJOR(cuda_runtime_api_h.cudaDevAttrComputeCapabilityMajor()),
    /** Compute capability, minor number. */
    COMPUTE_CAPABILITY_MINOR(cuda_runtime_api_h.cudaDevAttrComputeCapabilityMinor()),
    /** Number of streaming multiprocessors. */
    MULTI_PROCESSOR_COUNT(cuda_runtime_api_h.cudaDevAttrMultiProcessorCount()),
    /** PCI bus number. */
    PCI_BUS_ID(cuda_runtime_api_h.cudaDevAttrPciBusId()),
    /** PCI device (slot) number. */
    PCI_DEVICE_ID(cuda_runtime_api_h.cudaDevAttrPciDeviceId()),
    /** PCI domain number. */
    PCI_DOMAIN_ID(cuda_runtime_api_h.cudaDevAttrPciDomainId()),
    /** 1 if the device shares a unified address space with the host. */
    UNIFIED_ADDRESSING(cuda_runtime_api_h.cudaDevAttrUnifiedAddressing());

    private final int code;

    DeviceAttribute(int code) {
        this.code = code;
    }

    /**
     * The {@code cudaDeviceAttr} value.
     *
     * @return the runtime's value of this attribute
     */
    public int code() {
        return code;
    }
}
