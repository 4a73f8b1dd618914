// Fills and conversions: seeded random bf16 (synthetic weights), constant bf16, bf16 <-> fp32.
#include "common.cuh"
#include "random_hash.h"

namespace ar4j_llama {
namespace {

constexpr int kThreads = 256;

__global__ void fill_random_kernel(bf16 *dst, int64_t rows, int64_t cols, int64_t ld, int64_t row_offset,
                                   int64_t col_offset, int64_t global_cols, uint64_t seed, float amplitude) {
    pdl_enter();
    const int64_t count = rows * cols;
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x) {
        const int64_t r = i / cols;
        const int64_t c = i - r * cols;
        const uint64_t index = uint64_t(row_offset + r) * uint64_t(global_cols) + uint64_t(col_offset + c);
        dst[r * ld + c] = __float2bfloat16_rn(random_value(seed, index, amplitude));
    }
}

__global__ void fill_kernel(bf16 *dst, int64_t count, bf16 value) {
    pdl_enter();
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x) {
        dst[i] = value;
    }
}

__global__ void bf16_to_f32_kernel(const bf16 *in, float *out, int64_t count) {
    pdl_enter();
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x) {
        out[i] = __bfloat162float(in[i]);
    }
}

__global__ void f32_to_bf16_kernel(const float *in, bf16 *out, int64_t count) {
    pdl_enter();
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x) {
        out[i] = __float2bfloat16_rn(in[i]);
    }
}

}  // namespace
}  // namespace ar4j_llama

using namespace ar4j_llama;

AR4J_LLAMA_API int ar4j_llama_fill_random_bf16(void *dst, int64_t rows, int64_t cols, int64_t ld,
                                               int64_t row_offset, int64_t col_offset, int64_t global_cols,
                                               uint64_t seed, float std, void *stream) {
    if (dst == nullptr) return AR4J_LLAMA_ERROR_NULL_POINTER;
    if (rows < 1 || cols < 1 || row_offset < 0 || col_offset < 0 || col_offset + cols > global_cols ||
        rows > INT64_MAX / cols) {
        return AR4J_LLAMA_ERROR_SIZE;
    }
    if (ld < cols) return AR4J_LLAMA_ERROR_STRIDE;
    if (!(std >= 0.0f) || !std::isfinite(std)) return AR4J_LLAMA_ERROR_INVALID_ARGUMENT;
    if (!aligned(dst, 2)) return AR4J_LLAMA_ERROR_MISALIGNED;
    return launch(fill_random_kernel, dim3(stride_blocks(rows * cols, kThreads)), dim3(kThreads), 0, stream, false,
                  static_cast<bf16 *>(dst), rows, cols, ld, row_offset, col_offset, global_cols, seed,
                  random_amplitude(std));
}

AR4J_LLAMA_API int ar4j_llama_fill_bf16(void *dst, int64_t count, float value, void *stream) {
    if (dst == nullptr) return AR4J_LLAMA_ERROR_NULL_POINTER;
    if (count < 1) return AR4J_LLAMA_ERROR_SIZE;
    if (!aligned(dst, 2)) return AR4J_LLAMA_ERROR_MISALIGNED;
    return launch(fill_kernel, dim3(stride_blocks(count, kThreads)), dim3(kThreads), 0, stream, false,
                  static_cast<bf16 *>(dst), count, __float2bfloat16_rn(value));
}

AR4J_LLAMA_API int ar4j_llama_bf16_to_f32(const void *in, float *out, int64_t count, void *stream) {
    if (in == nullptr || out == nullptr) return AR4J_LLAMA_ERROR_NULL_POINTER;
    if (count < 1) return AR4J_LLAMA_ERROR_SIZE;
    if (!aligned(in, 2) || !aligned(out, 4)) return AR4J_LLAMA_ERROR_MISALIGNED;
    return launch(bf16_to_f32_kernel, dim3(stride_blocks(count, kThreads)), dim3(kThreads), 0, stream, false,
                  static_cast<const bf16 *>(in), out, count);
}

AR4J_LLAMA_API int ar4j_llama_f32_to_bf16(const float *in, void *out, int64_t count, void *stream) {
    if (in == nullptr || out == nullptr) return AR4J_LLAMA_ERROR_NULL_POINTER;
    if (count < 1) return AR4J_LLAMA_ERROR_SIZE;
    if (!aligned(in, 4) || !aligned(out, 2)) return AR4J_LLAMA_ERROR_MISALIGNED;
    return launch(f32_to_bf16_kernel, dim3(stride_blocks(count, kThreads)), dim3(kThreads), 0, stream, false,
                  in, static_cast<bf16 *>(out), count);
}
