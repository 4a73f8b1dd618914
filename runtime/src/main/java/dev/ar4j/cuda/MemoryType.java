package dev.ar4j.cuda;

import dev.ar4j.bindings.cudart.cuda_runtime_api_h;

/** What kind of memory a pointer refers to ({@code cudaMemoryType}). */
public enum MemoryType {
    /** Host memory CUDA does not know about (pageable memory). */
    UNREGISTERED(cuda_runtime_api_h.cudaMemoryTypeUnregistered()),
    /** Page-locked (pinned) or registered host memory. */
    HOST(cuda_runtime_api_h.cudaMemoryTypeHost()),
    /** Device memory. */
    DEVICE(cuda_runtime_api_h.cudaMemoryTypeDevice()),
    /** Managed (unified) memory. */
    MANAGED(cuda_runtime_api_h.cudaMemoryTypeManaged());

    private final int code;

    MemoryType(int code) {
        this.code = code;
    }

    /**
     * The {@code cudaMemoryType} value.
     *
     * @return the runtime's value of this memory type
     */
    public int code() {
        return code;
    }

    /**
     * The constant for a {@code cudaMemoryType} value.
     *
     * @param code a {@code cudaMemoryType} value: 0 to 3
     * @return the matching constant
     * @throws IllegalArgumentException if {@code code} is not a known memory type
     */
    public static MemoryType ofCode(int code) {
        for (MemoryType type : values()) {
            if (type.code == code) {
                return type;
            }
        }
        throw new IllegalArgumentException("unknown cudaMemoryType " + code + "; known: 0 (unregistered), 1 (host),"
                + " 2 (device), 3 (managed)");
    }
}
