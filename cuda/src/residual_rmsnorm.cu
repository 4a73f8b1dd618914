// The residual add + RMSNorm kernel of include/ar4j/residual_rmsnorm.h: one block of kNormThreads
// threads per row, fp32 arithmetic, a fixed-order block reduction of the row's sum of squares (the
// order and the arithmetic are shared with the fused kernels: rmsnorm_math.cuh).
//
// Two forms, the same bits:
//  - the pack kernel, for rows of a multiple of 16 bytes on 16-byte aligned buffers (every
//    hidden size a model uses): 16-byte loads and stores. A thread holds its packs of the row in
//    registers when the row has at most kNormThreads * 4 packs (hidden 16384 in fp16/bf16, 8192
//    in fp32): every load of in, residual and weight is issued before the first add, and out is
//    computed from the registers, not read back from residual_out. Longer rows loop, reading
//    back what the thread itself wrote.
//  - the element kernel, for everything else (an odd hidden size, an unaligned buffer): one
//    element at a time, in the same order.
//
// Why one block per row, also when rows are few (decode: 1..8 rows of 4096..8192): a row of
// hidden 8192 in bf16 is 1024 packs, two per thread of a 512-thread block, so one block reads its
// row (in, residual, weight: 48 KiB) with every load in flight at once, one memory round trip, then
// reduces inside the block (no second round trip through global memory). Splitting a row over
// several blocks needs a cross-block reduction: a second kernel or a grid-wide flag costs a further
// round trip (about as much as the row's loads), and a thread block cluster (distributed shared
// memory) is sm_90 only and would need a fallback of its own. More threads per block would change
// the summation order that the fused kernels share (kNormThreads), and with it the bits.
//
// Programmatic dependent launch (ar4j_residual_rmsnorm_ex, AR4J_RMSNORM_PDL): every thread waits
// (griddepcontrol.wait) before its first load, then lets the next kernel of the stream launch at
// once: this kernel never waits for another grid, so the next one's blocks, which wait for this
// grid's completion in their own griddepcontrol.wait, cannot hold it up.

#include <atomic>
#include <cmath>
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "ar4j/residual_rmsnorm.h"
#include "api_export.h"
#include "kernel_launch.cuh"
#include "kernel_sync.cuh"
#include "rmsnorm_math.cuh"

namespace {

using ar4j::kNormThreads;

// The element kernel: one block per row. Elements are visited pack by pack (see rmsnorm_math.cuh):
// thread t takes the 16-byte packs t, t + kNormThreads, ... of the row (the last one possibly
// partial), so that the row's sum of squares has exactly the order of the fused kernels'.
template <typename T>
__global__ void __launch_bounds__(kNormThreads)
residual_rmsnorm_kernel(const T *in, const T *residual, const T *weight, T *out, T *residual_out,
                        size_t hidden, float eps) {
    __shared__ float warp_sums[ar4j::kNormWarps];
    using S = ar4j::NormScalar<T>;
    constexpr size_t kPack = 16 / sizeof(T);
    ar4j::pdl_wait();
    ar4j::pdl_launch_dependents();
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

// The pack kernel: one block per row of row_packs 16-byte packs (hidden * sizeof(T) / 16), every
// buffer 16-byte aligned. kHeld > 0: each thread holds its at most kHeld packs (t, t + kNormThreads,
// ...) in registers; kHeld == 0: any row length, out computed from residual_out read back.
// Aliasing as the element kernel: each element of in and residual is read, then residual_out and
// out written, by the one thread that owns its pack.
template <typename T, int kHeld>
__global__ void __launch_bounds__(kNormThreads)
residual_rmsnorm_pack_kernel(const uint4 *in, const uint4 *residual, const uint4 *weight, uint4 *out,
                             uint4 *residual_out, int64_t row_packs, int64_t hidden, float eps) {
    __shared__ float warp_sums[ar4j::kNormWarps];
    ar4j::pdl_wait();
    ar4j::pdl_launch_dependents();
    const int64_t base = static_cast<int64_t>(blockIdx.x) * row_packs;
    float squares = 0.f;
    if constexpr (kHeld > 0) {
        uint4 a[kHeld], b[kHeld], w[kHeld];
#pragma unroll
        for (int k = 0; k < kHeld; ++k) {
            const int64_t j = threadIdx.x + static_cast<int64_t>(k) * kNormThreads;
            if (j < row_packs) {
                a[k] = in[base + j];
                b[k] = residual[base + j];
                w[k] = weight[j];
            }
        }
#pragma unroll
        for (int k = 0; k < kHeld; ++k) {
            const int64_t j = threadIdx.x + static_cast<int64_t>(k) * kNormThreads;
            if (j < row_packs) {
                a[k] = ar4j::add_residual_pack<T>(a[k], b[k], squares);  // a[k] now holds residual_out
                residual_out[base + j] = a[k];
            }
        }
        const float inv = ar4j::norm_inverse(ar4j::norm_block_sum(squares, warp_sums), hidden, eps);
#pragma unroll
        for (int k = 0; k < kHeld; ++k) {
            const int64_t j = threadIdx.x + static_cast<int64_t>(k) * kNormThreads;
            if (j < row_packs) out[base + j] = ar4j::normalized_pack<T>(a[k], w[k], inv);
        }
    } else {
        for (int64_t j = threadIdx.x; j < row_packs; j += kNormThreads) {
            residual_out[base + j] = ar4j::add_residual_pack<T>(in[base + j], residual[base + j], squares);
        }
        const float inv = ar4j::norm_inverse(ar4j::norm_block_sum(squares, warp_sums), hidden, eps);
        for (int64_t j = threadIdx.x; j < row_packs; j += kNormThreads) {
            out[base + j] = ar4j::normalized_pack<T>(residual_out[base + j], weight[j], inv);
        }
    }
}

thread_local int last_cuda_error = 0;

// Whether the calling thread's current device runs these kernels with griddepcontrol: compute
// capability 9.0 or newer and machine code built for sm_90 or newer (a build for older
// architectures only runs without it, and must not be launched with the attribute). Asked once per
// device; 0 unknown, 1 yes, 2 no.
constexpr int kPdlDevices = 64;
std::atomic<int> pdl_capable_by_device[kPdlDevices];

bool pdl_capable() {
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= kPdlDevices) return false;
    const int known = pdl_capable_by_device[device].load(std::memory_order_relaxed);
    if (known != 0) return known == 1;
    int major = 0;
    bool capable = false;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess && major >= 9) {
        cudaFuncAttributes attr;
        capable = cudaFuncGetAttributes(&attr, residual_rmsnorm_pack_kernel<__nv_bfloat16, 2>) == cudaSuccess &&
                  attr.binaryVersion >= 90;
    }
    (void)cudaGetLastError();  // a failed query is no launch error
    pdl_capable_by_device[device].store(capable ? 1 : 2, std::memory_order_relaxed);
    return capable;
}

template <typename T>
cudaError_t launch_packs(const void *in, const void *residual, const void *weight, void *out, void *residual_out,
                         unsigned rows, size_t hidden, float eps, cudaStream_t s, bool pdl) {
    const int64_t row_packs = static_cast<int64_t>(hidden * sizeof(T) / 16);
    const auto i = static_cast<const uint4 *>(in), r = static_cast<const uint4 *>(residual),
               w = static_cast<const uint4 *>(weight);
    const auto o = static_cast<uint4 *>(out), ro = static_cast<uint4 *>(residual_out);
    const auto h = static_cast<int64_t>(hidden);
    const unsigned t = kNormThreads;
    if (row_packs <= kNormThreads)
        return ar4j::launch_kernel(residual_rmsnorm_pack_kernel<T, 1>, rows, t, s, pdl, i, r, w, o, ro, row_packs, h, eps);
    if (row_packs <= 2 * kNormThreads)
        return ar4j::launch_kernel(residual_rmsnorm_pack_kernel<T, 2>, rows, t, s, pdl, i, r, w, o, ro, row_packs, h, eps);
    if (row_packs <= 4 * kNormThreads)
        return ar4j::launch_kernel(residual_rmsnorm_pack_kernel<T, 4>, rows, t, s, pdl, i, r, w, o, ro, row_packs, h, eps);
    return ar4j::launch_kernel(residual_rmsnorm_pack_kernel<T, 0>, rows, t, s, pdl, i, r, w, o, ro, row_packs, h, eps);
}

template <typename T>
int launch(const void *in, const void *residual, const void *weight, void *out, void *residual_out,
           size_t rows, size_t hidden, float eps, cudaStream_t stream, bool pdl) {
    const bool packed = (hidden * sizeof(T)) % 16 == 0 &&
                        ((reinterpret_cast<uintptr_t>(in) | reinterpret_cast<uintptr_t>(residual) |
                          reinterpret_cast<uintptr_t>(weight) | reinterpret_cast<uintptr_t>(out) |
                          reinterpret_cast<uintptr_t>(residual_out)) & 15) == 0;
    const unsigned grid = static_cast<unsigned>(rows);
    const cudaError_t err =
        packed ? launch_packs<T>(in, residual, weight, out, residual_out, grid, hidden, eps, stream, pdl)
               : ar4j::launch_kernel(residual_rmsnorm_kernel<T>, grid, kNormThreads, stream, pdl,
                                     static_cast<const T *>(in), static_cast<const T *>(residual),
                                     static_cast<const T *>(weight), static_cast<T *>(out),
                                     static_cast<T *>(residual_out), hidden, eps);
    if (err != cudaSuccess) {
        last_cuda_error = static_cast<int>(err);
        return AR4J_ERROR_CUDA;
    }
    return AR4J_SUCCESS;
}

}  // namespace

AR4J_API int ar4j_residual_rmsnorm_ex(int32_t dtype, const void *in, const void *residual, const void *weight,
                                      void *out, void *residual_out, size_t rows, size_t hidden, float eps,
                                      void *stream, uint32_t flags) {
    if (!in || !residual || !weight || !out || !residual_out) return AR4J_ERROR_NULL_POINTER;
    if (rows == 0 || hidden == 0) return AR4J_ERROR_EMPTY;
    if (hidden > AR4J_RMSNORM_MAX_HIDDEN) return AR4J_ERROR_TOO_LARGE;
    if (rows > 0x7fffffffu) return AR4J_ERROR_TOO_LARGE;  // one block per row
    if (!(eps > 0.f) || !std::isfinite(eps)) return AR4J_ERROR_INVALID_ARGUMENT;
    if (out == residual_out || out == residual) return AR4J_ERROR_INVALID_ARGUMENT;
    if ((flags & ~static_cast<uint32_t>(AR4J_RMSNORM_PDL)) != 0) return AR4J_ERROR_INVALID_ARGUMENT;
    if (dtype != AR4J_DTYPE_FLOAT32 && dtype != AR4J_DTYPE_FLOAT16 && dtype != AR4J_DTYPE_BFLOAT16) {
        return AR4J_ERROR_DTYPE;
    }
    const bool pdl = (flags & AR4J_RMSNORM_PDL) != 0 && pdl_capable();
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    switch (dtype) {
        case AR4J_DTYPE_FLOAT32:
            return launch<float>(in, residual, weight, out, residual_out, rows, hidden, eps, s, pdl);
        case AR4J_DTYPE_FLOAT16:
            return launch<__half>(in, residual, weight, out, residual_out, rows, hidden, eps, s, pdl);
        default:
            return launch<__nv_bfloat16>(in, residual, weight, out, residual_out, rows, hidden, eps, s, pdl);
    }
}

AR4J_API int ar4j_residual_rmsnorm(int32_t dtype, const void *in, const void *residual, const void *weight,
                                   void *out, void *residual_out, size_t rows, size_t hidden, float eps,
                                   void *stream) {
    return ar4j_residual_rmsnorm_ex(dtype, in, residual, weight, out, residual_out, rows, hidden, eps, stream, 0);
}

AR4J_API int ar4j_rmsnorm_pdl_capable(int32_t *out) {
    if (!out) return AR4J_ERROR_NULL_POINTER;
    *out = pdl_capable() ? 1 : 0;
    return AR4J_SUCCESS;
}

AR4J_API int ar4j_rmsnorm_last_cuda_error(void) { return last_cuda_error; }
