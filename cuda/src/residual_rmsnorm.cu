// The residual add + RMSNorm kernel of include/ar4j/residual_rmsnorm.h: one block per row,
// fp32 arithmetic, a fixed-order block reduction of the row's sum of squares (the order and the
// arithmetic are shared with the fused kernel: rmsnorm_math.cuh).

#include <cmath>
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "ar4j/residual_rmsnorm.h"
#include "api_export.h"
#include "rmsnorm_math.cuh"

namespace {

using ar4j::kNormThreads;

// One block per row. Elements are visited pack by pack (see rmsnorm_math.cuh): thread t takes the
// 16-byte packs t, t + kNormThreads, ... of the row (the last one possibly partial), so that the
// row's sum of squares has exactly the order of the fused kernel's.
template <typename T>
__global__ void __launch_bounds__(kNormThreads)
residual_rmsnorm_kernel(const T *in, const T *residual, const T *weight, T *out, T *residual_out,
                        size_t hidden, float eps) {
    __shared__ float warp_sums[ar4j::kNormWarps];
    using S = ar4j::NormScalar<T>;
    constexpr size_t kPack = 16 / sizeof(T);
    const size_t row = static_cast<size_t>(blockIdx.x) * hidden;
    float squares = 0.f;
    for (size_t p = threadIdx.x; p * kPack < hidden; p += kNormThreads) {
        for (size_t e = 0; e < kPack && p * kPack + e < hidden; ++e) {
            const size_t i = p * kPack + e;
            const float r = S::round(S::load(in, row + i) + S::load(residual, row + i));
            S::store(residual_out, row + i, r);
            squares = __fmaf_rn(r, r, squares);
        }
    }
    const float inv = ar4j::norm_inverse(ar4j::norm_block_sum(squares, warp_sums), static_cast<int64_t>(hidden), eps);
    // Each thread reads back only the elements it wrote itself: no cross-thread ordering.
    for (size_t p = threadIdx.x; p * kPack < hidden; p += kNormThreads) {
        for (size_t e = 0; e < kPack && p * kPack + e < hidden; ++e) {
            const size_t i = p * kPack + e;
            const float r = S::load(residual_out, row + i);
            S::store(out, row + i, r * inv * S::load(weight, i));
        }
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
