// Prefill attention's middle step: the scaled, causally masked softmax of the scores that a
// batched GEMM (cuBLAS, Q_h . K_g^T, bf16 out) wrote, in place, leaving the probabilities for
// the second batched GEMM (P_h . V_g). See ar4j_llama_prefill_softmax in kernels.h.
#include "common.cuh"

namespace ar4j_llama {
namespace {

constexpr int kSoftmaxThreads = 256;
constexpr int kVec = 8;  // bf16 per 16-byte access

// s = bf16(d * scale), d the bf16 the GEMM stored (HF: attn_weights = matmul(q, k^T) * scaling).
__device__ __forceinline__ float score(bf16 d, float scale) { return round_bf16(__fmul_rn(__bfloat162float(d), scale)); }

// One block per (query row, head): blockIdx.x the row, blockIdx.y the head.
__global__ void __launch_bounds__(kSoftmaxThreads)
    prefill_softmax_kernel(bf16 *scores, int64_t row_stride, int64_t head_stride, int32_t n, int32_t start_pos,
                           float scale) {
    pdl_enter();
    const int32_t i = blockIdx.x;
    bf16 *row = scores + int64_t(blockIdx.y) * head_stride + int64_t(i) * row_stride;
    const int32_t keys = start_pos + n;      // columns the GEMMs use
    const int32_t valid = start_pos + i + 1;  // keys 0 .. start_pos + i: the causal limit
    const int32_t vectors = (keys + kVec - 1) / kVec;  // the last may hold columns beyond keys: left alone

    // Pass 1: each thread's running max and sum over its 16-byte pieces, in column order.
    float m = -INFINITY, l = 0.0f;
    for (int32_t v = threadIdx.x; v * kVec < valid; v += blockDim.x) {
        const uint4 raw = *reinterpret_cast<const uint4 *>(row + int64_t(v) * kVec);
        const bf16 *d = reinterpret_cast<const bf16 *>(&raw);
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
            if (v * kVec + e < valid) {
                const float s = score(d[e], scale);
                softmax_add(m, l, s);
            }
        }
    }
    // The block's max and sum: warps by shuffles (a fixed tree), then the warps in order.
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        const float m2 = __shfl_xor_sync(0xffffffffu, m, offset);
        const float l2 = __shfl_xor_sync(0xffffffffu, l, offset);
        softmax_merge(m, l, m2, l2);
    }
    __shared__ float warp_m[kSoftmaxThreads / 32], warp_l[kSoftmaxThreads / 32];
    __shared__ float row_m, row_l;
    if (threadIdx.x % 32 == 0) {
        warp_m[threadIdx.x / 32] = m;
        warp_l[threadIdx.x / 32] = l;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        float bm = warp_m[0], bl = warp_l[0];
        for (int w = 1; w < int(blockDim.x / 32); ++w) softmax_merge(bm, bl, warp_m[w], warp_l[w]);
        row_m = bm;
        row_l = bl;
    }
    __syncthreads();
    const float mx = row_m, sum = row_l;

    // Pass 2: p = bf16(expf(s - max) / sum) up to the causal limit, 0 after it (HF's mask adds the
    // dtype's minimum, whose exp is 0), in place.
    for (int32_t v = threadIdx.x; v < vectors; v += blockDim.x) {
        const int32_t c0 = v * kVec;
        uint4 raw = *reinterpret_cast<const uint4 *>(row + c0);
        bf16 *d = reinterpret_cast<bf16 *>(&raw);
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
            const int32_t c = c0 + e;
            if (c < valid) {
                d[e] = __float2bfloat16_rn(__fdiv_rn(expf(score(d[e], scale) - mx), sum));
            } else if (c < keys) {
                d[e] = __float2bfloat16_rn(0.0f);
            }
        }
        *reinterpret_cast<uint4 *>(row + c0) = raw;
    }
}

}  // namespace
}  // namespace ar4j_llama

using namespace ar4j_llama;

AR4J_LLAMA_API int ar4j_llama_prefill_softmax(void *scores, int64_t row_stride, int64_t head_stride, int32_t n,
                                              int32_t n_heads, int32_t start_pos, float scale, int32_t pdl,
                                              void *stream) {
    if (scores == nullptr) return AR4J_LLAMA_ERROR_NULL_POINTER;
    if (n < 1 || n_heads < 1 || n_heads > 65535 || start_pos < 0 || int64_t(start_pos) + n > INT32_MAX - kVec) {
        return AR4J_LLAMA_ERROR_SIZE;
    }
    if (!(scale > 0.0f) || !std::isfinite(scale)) return AR4J_LLAMA_ERROR_INVALID_ARGUMENT;
    const int64_t keys_padded = (int64_t(start_pos) + n + kVec - 1) / kVec * kVec;
    if (row_stride < keys_padded || (n_heads > 1 && head_stride < int64_t(n) * row_stride)) {
        return AR4J_LLAMA_ERROR_STRIDE;
    }
    if (!aligned(scores, 16) || row_stride % kVec != 0 || head_stride % kVec != 0) return AR4J_LLAMA_ERROR_MISALIGNED;
    return launch(prefill_softmax_kernel, dim3(unsigned(n), unsigned(n_heads)), dim3(kSoftmaxThreads), 0, stream,
                  pdl != 0, static_cast<bf16 *>(scores), row_stride, head_stride, n, start_pos, scale);
}
