// The rotary embedding's arithmetic, shared by rope.cu's kernels and the decode attention's
// fused form (attention.cu): the same expressions, so the same bits.
#pragma once

#include "common.cuh"

namespace ar4j_llama {
namespace {

// cos and sin of pair i at position pos as HF rounds them: freqs = inv_freq @ position (fp32), cos/sin in
// fp32, times attention_scaling, to bf16.
__device__ __forceinline__ float2 rope_cos_sin(const float *inv_freq, float attention_scaling, int32_t pos, int32_t i) {
    const float freq = __fmul_rn(static_cast<float>(pos), inv_freq[i]);
    return make_float2(round_bf16(__fmul_rn(cosf(freq), attention_scaling)),
                       round_bf16(__fmul_rn(sinf(freq), attention_scaling)));
}

// The pair (x1, x2) = (x[i], x[i + half]) rotated by (c, s): x * cos + rotate_half(x) * sin, each bf16 op
// rounded, rotate_half = cat(-x2, x1); bf16 values in fp32.
__device__ __forceinline__ float2 rotated(float x1, float x2, float2 cs) {
    const float lo = __fadd_rn(round_bf16(__fmul_rn(x1, cs.x)), round_bf16(__fmul_rn(-x2, cs.y)));
    const float hi = __fadd_rn(round_bf16(__fmul_rn(x2, cs.x)), round_bf16(__fmul_rn(x1, cs.y)));
    return make_float2(round_bf16(lo), round_bf16(hi));
}

// Rotates the pair (i, i + half) of src into dst (which may equal src) by (c, s).
__device__ __forceinline__ void rotate_with(const bf16 *src, bf16 *dst, int32_t half, int32_t i, float2 cs) {
    const float2 r = rotated(__bfloat162float(src[i]), __bfloat162float(src[i + half]), cs);
    dst[i] = __float2bfloat16_rn(r.x);
    dst[i + half] = __float2bfloat16_rn(r.y);
}

}  // namespace
}  // namespace ar4j_llama
