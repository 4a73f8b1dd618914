// Element-wise and row-reduction kernels: SiLU(gate) x up, argmax of logits rows.
#include "common.cuh"

namespace ar4j_llama {
namespace {

constexpr int kElementThreads = 256;
constexpr int kArgmaxThreads = 1024;

__global__ void silu_mul_kernel(const bf16 *gate, int64_t gate_stride, const bf16 *up, int64_t up_stride,
                                bf16 *out, int64_t out_stride, int64_t rows, int64_t cols) {
    pdl_enter();
    const int64_t count = rows * cols;
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x) {
        const int64_t r = i / cols;
        const int64_t c = i - r * cols;
        const float g = __bfloat162float(gate[r * gate_stride + c]);
        const float u = __bfloat162float(up[r * up_stride + c]);
        // F.silu in bf16: x / (1 + exp(-x)) in fp32, stored as bf16; then the bf16 product.
        const float silu = round_bf16(__fdiv_rn(g, __fadd_rn(1.0f, expf(-g))));
        out[r * out_stride + c] = __float2bfloat16_rn(__fmul_rn(silu, u));
    }
}

template <typename T>
__device__ __forceinline__ float load_float(const T *p);
template <>
__device__ __forceinline__ float load_float<float>(const float *p) { return *p; }
template <>
__device__ __forceinline__ float load_float<bf16>(const bf16 *p) { return __bfloat162float(*p); }

// One block per row.
template <typename T>
__global__ void __launch_bounds__(kArgmaxThreads) argmax_kernel(const T *logits, int64_t row_stride, int32_t cols,
                                                                int32_t index_offset, int32_t *out_index,
                                                                float *out_value) {
    pdl_enter();
    const T *row = logits + int64_t(blockIdx.x) * row_stride;
    float best = -INFINITY;
    int32_t best_index = INT32_MAX;
    for (int32_t c = threadIdx.x; c < cols; c += blockDim.x) {
        const float v = load_float(row + c);
        if (argmax_wins(v, c, best, best_index)) {
            best = v;
            best_index = c;
        }
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        const float other = __shfl_xor_sync(0xffffffffu, best, offset);
        const int32_t other_index = __shfl_xor_sync(0xffffffffu, best_index, offset);
        if (argmax_wins(other, other_index, best, best_index)) {
            best = other;
            best_index = other_index;
        }
    }
    __shared__ float warp_best[kArgmaxThreads / 32];
    __shared__ int32_t warp_index[kArgmaxThreads / 32];
    const int warp = threadIdx.x / 32;
    if (threadIdx.x % 32 == 0) {
        warp_best[warp] = best;
        warp_index[warp] = best_index;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < int(blockDim.x / 32); ++w) {
            if (argmax_wins(warp_best[w], warp_index[w], best, best_index)) {
                best = warp_best[w];
                best_index = warp_index[w];
            }
        }
        out_index[blockIdx.x] = index_offset + best_index;
        if (out_value != nullptr) out_value[blockIdx.x] = best;
    }
}

}  // namespace
}  // namespace ar4j_llama

using namespace ar4j_llama;

AR4J_LLAMA_API int ar4j_llama_silu_mul(const void *gate, int64_t gate_row_stride, const void *up,
                                       int64_t up_row_stride, void *out, int64_t out_row_stride,
                                       int32_t rows, int32_t cols, int32_t pdl, void *stream) {
    if (gate == nullptr || up == nullptr || out == nullptr) return AR4J_LLAMA_ERROR_NULL_POINTER;
    if (rows < 1 || cols < 1) return AR4J_LLAMA_ERROR_SIZE;
    if (gate_row_stride < cols || up_row_stride < cols || out_row_stride < cols) return AR4J_LLAMA_ERROR_STRIDE;
    if (!aligned(gate, 2) || !aligned(up, 2) || !aligned(out, 2)) return AR4J_LLAMA_ERROR_MISALIGNED;
    const int64_t count = int64_t(rows) * cols;
    return launch(silu_mul_kernel, dim3(stride_blocks(count, kElementThreads)), dim3(kElementThreads), 0, stream,
                  pdl != 0, static_cast<const bf16 *>(gate), gate_row_stride, static_cast<const bf16 *>(up),
                  up_row_stride, static_cast<bf16 *>(out), out_row_stride, int64_t(rows), int64_t(cols));
}

AR4J_LLAMA_API int ar4j_llama_argmax(int32_t dtype, const void *logits, int64_t row_stride, int32_t rows,
                                     int32_t cols, int32_t index_offset, int32_t *out_index, float *out_value,
                                     int32_t pdl, void *stream) {
    if (logits == nullptr || out_index == nullptr) return AR4J_LLAMA_ERROR_NULL_POINTER;
    if (dtype != AR4J_LLAMA_DTYPE_FLOAT32 && dtype != AR4J_LLAMA_DTYPE_BFLOAT16) return AR4J_LLAMA_ERROR_DTYPE;
    if (rows < 1 || cols < 1) return AR4J_LLAMA_ERROR_SIZE;
    if (row_stride < cols) return AR4J_LLAMA_ERROR_STRIDE;
    if (index_offset < 0 || int64_t(index_offset) + cols > int64_t(INT32_MAX)) return AR4J_LLAMA_ERROR_INVALID_ARGUMENT;
    if (!aligned(out_index, 4) || (out_value != nullptr && !aligned(out_value, 4))) return AR4J_LLAMA_ERROR_MISALIGNED;
    if (dtype == AR4J_LLAMA_DTYPE_FLOAT32) {
        if (!aligned(logits, 4)) return AR4J_LLAMA_ERROR_MISALIGNED;
        return launch(argmax_kernel<float>, dim3(rows), dim3(kArgmaxThreads), 0, stream, pdl != 0,
                      static_cast<const float *>(logits), row_stride, cols, index_offset, out_index, out_value);
    }
    if (!aligned(logits, 2)) return AR4J_LLAMA_ERROR_MISALIGNED;
    return launch(argmax_kernel<bf16>, dim3(rows), dim3(kArgmaxThreads), 0, stream, pdl != 0,
                  static_cast<const bf16 *>(logits), row_stride, cols, index_offset, out_index, out_value);
}
