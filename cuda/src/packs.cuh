#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "kernel_interface.cuh"

namespace ar4j {

// ---------------------------------------------------------------------------------------
// 16-byte packs and fp32 accumulation.

template <typename T>
struct PackTraits;

template <>
struct PackTraits<float> {
    static constexpr int kElems = 4;
    __device__ __forceinline__ static void unpack(const uint4 &v, float (&f)[4]) {
        f[0] = __uint_as_float(v.x);
        f[1] = __uint_as_float(v.y);
        f[2] = __uint_as_float(v.z);
        f[3] = __uint_as_float(v.w);
    }
    __device__ __forceinline__ static uint4 pack(const float (&f)[4]) {
        return make_uint4(__float_as_uint(f[0]), __float_as_uint(f[1]), __float_as_uint(f[2]),
                          __float_as_uint(f[3]));
    }
};

template <>
struct PackTraits<__half> {
    static constexpr int kElems = 8;
    __device__ __forceinline__ static float2 to2(uint32_t w) {
        __half2 h = *reinterpret_cast<const __half2 *>(&w);
        return __half22float2(h);
    }
    __device__ __forceinline__ static uint32_t from2(float a, float b) {
        __half2 h = __floats2half2_rn(a, b);
        return *reinterpret_cast<const uint32_t *>(&h);
    }
    __device__ __forceinline__ static void unpack(const uint4 &v, float (&f)[8]) {
        float2 a = to2(v.x), b = to2(v.y), c = to2(v.z), d = to2(v.w);
        f[0] = a.x; f[1] = a.y; f[2] = b.x; f[3] = b.y;
        f[4] = c.x; f[5] = c.y; f[6] = d.x; f[7] = d.y;
    }
    __device__ __forceinline__ static uint4 pack(const float (&f)[8]) {
        return make_uint4(from2(f[0], f[1]), from2(f[2], f[3]), from2(f[4], f[5]), from2(f[6], f[7]));
    }
};

template <>
struct PackTraits<__nv_bfloat16> {
    static constexpr int kElems = 8;
    __device__ __forceinline__ static float2 to2(uint32_t w) {
        __nv_bfloat162 h = *reinterpret_cast<const __nv_bfloat162 *>(&w);
        return __bfloat1622float2(h);
    }
    __device__ __forceinline__ static uint32_t from2(float a, float b) {
        __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
        return *reinterpret_cast<const uint32_t *>(&h);
    }
    __device__ __forceinline__ static void unpack(const uint4 &v, float (&f)[8]) {
        float2 a = to2(v.x), b = to2(v.y), c = to2(v.z), d = to2(v.w);
        f[0] = a.x; f[1] = a.y; f[2] = b.x; f[3] = b.y;
        f[4] = c.x; f[5] = c.y; f[6] = d.x; f[7] = d.y;
    }
    __device__ __forceinline__ static uint4 pack(const float (&f)[8]) {
        return make_uint4(from2(f[0], f[1]), from2(f[2], f[3]), from2(f[4], f[5]), from2(f[6], f[7]));
    }
};

// Sum of pack i over all ranks, always in rank order 0..WS-1 so every rank computes the
// bitwise-same result. All WS loads are issued before the first add.
template <typename T, int WS>
__device__ __forceinline__ uint4 reduce_pack(const uint4 *const (&src)[WS], int64_t i) {
    using Tr = PackTraits<T>;
    uint4 v[WS];
#pragma unroll
    for (int r = 0; r < WS; ++r) v[r] = src[r][i];
    float acc[Tr::kElems];
    Tr::unpack(v[0], acc);
#pragma unroll
    for (int r = 1; r < WS; ++r) {
        float x[Tr::kElems];
        Tr::unpack(v[r], x);
#pragma unroll
        for (int e = 0; e < Tr::kElems; ++e) acc[e] += x[e];
    }
    return Tr::pack(acc);
}

template <int WS>
__device__ __forceinline__ void load_sources(const Params &p, const uint4 *(&src)[WS]) {
#pragma unroll
    for (int r = 0; r < WS; ++r) {
        src[r] = reinterpret_cast<const uint4 *>(static_cast<const char *>(p.inputs->ptrs[r]) + p.in_offset);
    }
}

// ---------------------------------------------------------------------------------------
// NaN: what a poisoned or failed launch leaves in its output. The whole output, from every
// block that gives up (blocks that completed before may have left exact values): never a
// plausible number.

template <typename T>
struct NanWord;
template <>
struct NanWord<float> { static constexpr uint32_t kValue = 0x7fc00000u; };
template <>
struct NanWord<__half> { static constexpr uint32_t kValue = 0x7e007e00u; };
template <>
struct NanWord<__nv_bfloat16> { static constexpr uint32_t kValue = 0x7fc07fc0u; };

template <typename T>
__device__ __forceinline__ void fill_output_nan(const Params &p) {
    const uint32_t w = NanWord<T>::kValue;
    const uint4 nan = make_uint4(w, w, w, w);
    for (int64_t i = threadIdx.x; i < p.npacks; i += blockDim.x) p.out[i] = nan;
}

}  // namespace ar4j
