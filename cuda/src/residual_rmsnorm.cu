// The residual add + RMSNorm kernel of include/ar4j/residual_rmsnorm.h: one block per row,
// fp32 arithmetic, a fixed-order block reduction of the row's sum of squares.

#include <cmath>
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "ar4j/residual_rmsnorm.h"

#define AR4J_API extern "C" __attribute__((visibility("default")))

namespace {

constexpr int kNormThreads = 512;
constexpr int kWarps = kNormThreads / 32;

template <typename T>
struct Scalar;

template <>
struct Scalar<float> {
    __device__ __forceinline__ static float load(const float *p, size_t i) { return p[i]; }
    __device__ __forceinline__ static float round(float v) { return v; }
    __device__ __forceinline__ static void store(float *p, size_t i, float v) { p[i] = v; }
};

template <>
struct Scalar<__half> {
    __device__ __forceinline__ static float load(const __half *p, size_t i) { return __half2float(p[i]); }
    __device__ __forceinline__ static float round(float v) { return __half2float(__float2half_rn(v)); }
    __device__ __forceinline__ static void store(__half *p, size_t i, float v) { p[i] = __float2half_rn(v); }
};

template <>
struct Scalar<__nv_bfloat16> {
    __device__ __forceinline__ static float load(const __nv_bfloat16 *p, size_t i) {
        return __bfloat162float(p[i]);
    }
    __device__ __forceinline__ static float round(float v) { return __bfloat162float(__float2bfloat16_rn(v)); }
    __device__ __forceinline__ static void store(__nv_bfloat16 *p, size_t i, float v) {
        p[i] = __float2bfloat16_rn(v);
    }
};

// Sum over the block in a fixed order: lanes by xor-butterfly, then warps 0..kWarps-1.
__device__ __forceinline__ float block_sum(float v, float *shared) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    float total = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) total += shared[w];
    return total;
}

template <typename T>
__global__ void __launch_bounds__(kNormThreads)
residual_rmsnorm_kernel(const T *in, const T *residual, const T *weight, T *out, T *residual_out,
                        size_t hidden, float eps) {
    __shared__ float warp_sums[kWarps];
    using S = Scalar<T>;
    const size_t row = static_cast<size_t>(blockIdx.x) * hidden;
    float squares = 0.f;
    for (size_t i = threadIdx.x; i < hidden; i += kNormThreads) {
        const float r = S::round(S::load(in, row + i) + S::load(residual, row + i));
        S::store(residual_out, row + i, r);
        squares += r * r;
    }
    const float inv = rsqrtf(block_sum(squares, warp_sums) / static_cast<float>(hidden) + eps);
    // Each thread reads back only the elements it wrote itself: no cross-thread ordering.
    for (size_t i = threadIdx.x; i < hidden; i += kNormThreads) {
        const float r = S::load(residual_out, row + i);
        S::store(out, row + i, r * inv * S::load(weight, i));
    }
}

thread_local int last_cuda_error = 0;

template <typename T>
int launch(const void *in, const void *residual, const void *weight, void *out, void *residual_out,
           size_t rows, size_t hidden, float eps, cudaStream_t stream) {
    residual_rmsnorm_kernel<T><<<static_cast<unsigned>(rows), kNormThreads, 0, stream>>>(
        static_cast<const T *>(in), static_cast<const T *>(residual), static_cast<const T *>(weight),
        static_cast<T *>(out), static_cast<T *>(residual_out), hidden, eps);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) {
        last_cuda_error = static_cast<int>(err);
        return AR4J_ERROR_CUDA;
    }
    return AR4J_SUCCESS;
}

}  // namespace

AR4J_API int ar4j_residual_rmsnorm(int32_t dtype, const void *in, const void *residual, const void *weight,
                                   void *out, void *residual_out, size_t rows, size_t hidden, float eps,
                                   void *stream) {
    if (!in || !residual || !weight || !out || !residual_out) return AR4J_ERROR_NULL_POINTER;
    if (rows == 0 || hidden == 0) return AR4J_ERROR_EMPTY;
    if (hidden > AR4J_RMSNORM_MAX_HIDDEN) return AR4J_ERROR_TOO_LARGE;
    if (rows > 0x7fffffffu) return AR4J_ERROR_TOO_LARGE;  // one block per row
    if (!(eps > 0.f) || !std::isfinite(eps)) return AR4J_ERROR_INVALID_ARGUMENT;
    if (out == residual_out || out == residual) return AR4J_ERROR_INVALID_ARGUMENT;
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    switch (dtype) {
        case AR4J_DTYPE_FLOAT32: return launch<float>(in, residual, weight, out, residual_out, rows, hidden, eps, s);
        case AR4J_DTYPE_FLOAT16: return launch<__half>(in, residual, weight, out, residual_out, rows, hidden, eps, s);
        case AR4J_DTYPE_BFLOAT16:
            return launch<__nv_bfloat16>(in, residual, weight, out, residual_out, rows, hidden, eps, s);
        default: return AR4J_ERROR_DTYPE;
    }
}

AR4J_API int ar4j_rmsnorm_last_cuda_error(void) { return last_cuda_error; }
