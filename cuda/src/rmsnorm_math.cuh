// The arithmetic shared by the residual add + RMSNorm kernel (residual_rmsnorm.cu) and the fused
// all-reduce + residual + RMSNorm kernel (fused_kernels.cuh), so that both compute bitwise the same:
// fp32 rounding of one element to the dtype, and the fixed-order sum of a row's squares.
//
// Order of a row's sum of squares (all three kernels): the row is cut into 16-byte packs (4 fp32 or 8
// half elements); thread t of a kNormThreads-thread block takes packs t, t + kNormThreads, ... and
// within each pack its elements in order, accumulating fmaf(r, r, squares); then the block sums the
// threads' partials (xor butterfly in each warp, warps 0..kNormWarps-1 in order).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "kernel_interface.cuh"
#include "packs.cuh"

namespace ar4j {

// kNormThreads: kernel_interface.cuh (the geometry word carries it).
constexpr int kNormWarps = kNormThreads / 32;

template <typename T>
struct NormScalar;

template <>
struct NormScalar<float> {
    __device__ __forceinline__ static float load(const float *p, size_t i) { return p[i]; }
    __device__ __forceinline__ static float round(float v) { return v; }
    __device__ __forceinline__ static void store(float *p, size_t i, float v) { p[i] = v; }
};

template <>
struct NormScalar<__half> {
    __device__ __forceinline__ static float load(const __half *p, size_t i) { return __half2float(p[i]); }
    __device__ __forceinline__ static float round(float v) { return __half2float(__float2half_rn(v)); }
    __device__ __forceinline__ static void store(__half *p, size_t i, float v) { p[i] = __float2half_rn(v); }
};

template <>
struct NormScalar<__nv_bfloat16> {
    __device__ __forceinline__ static float load(const __nv_bfloat16 *p, size_t i) { return __bfloat162float(p[i]); }
    __device__ __forceinline__ static float round(float v) { return __bfloat162float(__float2bfloat16_rn(v)); }
    __device__ __forceinline__ static void store(__nv_bfloat16 *p, size_t i, float v) { p[i] = __float2bfloat16_rn(v); }
};

// Sum over a kNormThreads block in a fixed order: lanes by xor-butterfly, then warps in order.
// Every thread gets the total. `shared` holds kNormWarps floats; the caller must not write it
// again before a __syncthreads() that follows every thread's return from here.
__device__ __forceinline__ float norm_block_sum(float v, float *shared) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    float total = 0.f;
#pragma unroll
    for (int w = 0; w < kNormWarps; ++w) total += shared[w];
    return total;
}

// 1 / rms of a row from its sum of squares (both kernels: the same expression).
__device__ __forceinline__ float norm_inverse(float squares_total, int64_t hidden, float eps) {
    return rsqrtf(squares_total / static_cast<float>(hidden) + eps);
}

// The residual add of one 16-byte pack, element by element in pack order (so that the fused kernels
// and ar4j_residual_rmsnorm compute the same bits): residual_out = round(sum + residual), whose
// squares are added to `squares` in element order.
template <typename T>
__device__ __forceinline__ uint4 add_residual_pack(uint4 sum_pack, uint4 residual_pack, float &squares) {
    using Tr = PackTraits<T>;
    using S = NormScalar<T>;
    float sum[Tr::kElems], res[Tr::kElems];
    Tr::unpack(sum_pack, sum);  // the all-reduce result, rounded to the dtype
    Tr::unpack(residual_pack, res);
#pragma unroll
    for (int e = 0; e < Tr::kElems; ++e) {
        const float r = S::round(sum[e] + res[e]);
        res[e] = r;
        squares = __fmaf_rn(r, r, squares);
    }
    return Tr::pack(res);
}

// out = residual_out * inv * weight for one 16-byte pack (r * inv first, then * w: the scalar
// kernel's expression).
template <typename T>
__device__ __forceinline__ uint4 normalized_pack(uint4 residual_out_pack, uint4 weight_pack, float inv) {
    using Tr = PackTraits<T>;
    float r[Tr::kElems], w[Tr::kElems], o[Tr::kElems];
    Tr::unpack(residual_out_pack, r);
    Tr::unpack(weight_pack, w);
#pragma unroll
    for (int e = 0; e < Tr::kElems; ++e) o[e] = r[e] * inv * w[e];
    return Tr::pack(o);
}

}  // namespace ar4j
