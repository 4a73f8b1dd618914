// The current device's free and total memory, for the engine's check before it allocates.
#include <cuda_runtime.h>

#include "ar4j_llama/kernels.h"

extern "C" __attribute__((visibility("default"))) int ar4j_llama_device_memory(size_t *free_bytes,
                                                                               size_t *total_bytes) {
    if (free_bytes == nullptr || total_bytes == nullptr) return AR4J_LLAMA_ERROR_NULL_POINTER;
    return static_cast<int>(cudaMemGetInfo(free_bytes, total_bytes));
}
