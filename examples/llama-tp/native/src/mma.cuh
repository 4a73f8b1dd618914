// Tensor-core helpers shared by the prefill attention and the decode attention: the m16n8k16 bf16
// MMA with fp32 accumulation, ldmatrix loads of 8x8 bf16 tiles from shared memory, bf16 packing.
// Fragment layouts (PTX ISA, mma.m16n8k16 .bf16), with g = lane / 4 and t = lane % 4:
//   A (16 x 16, row-major): a0 (row g, cols 2t, 2t+1), a1 (row g+8, same), a2 (row g, cols 2t+8, 2t+9), a3 (row g+8, same)
//   B (16 x 8, "col"):      b0 (rows 2t, 2t+1, col g), b1 (rows 2t+8, 2t+9, col g)
//   C, D (16 x 8):          c0, c1 (row g, cols 2t, 2t+1), c2, c3 (row g+8, same)
#pragma once

#include <cstring>

#include "common.cuh"

namespace ar4j_llama {
namespace {

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(shared_address(p)));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(shared_address(p)));
}

// Two transposed 8x8 tiles: lanes 0-7 address the rows of the first, lanes 8-15 of the second.
__device__ __forceinline__ void ldmatrix_x2_trans(uint32_t &r0, uint32_t &r1, const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];"
                 : "=r"(r0), "=r"(r1)
                 : "r"(shared_address(p)));
}

// c += a . b for one 16x8x16 tile.
__device__ __forceinline__ void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    uint32_t bits;
    memcpy(&bits, &v, sizeof(bits));
    return bits;
}

// a and b rounded to bf16 (nearest even) and back, as round_bf16 does each, by one packed conversion.
__device__ __forceinline__ void round_bf16_pair(float &a, float &b) {
    const uint32_t bits = pack_bf16(a, b);  // a in the low half, b in the high half
    a = __uint_as_float(bits << 16);
    b = __uint_as_float(bits & 0xffff0000u);
}

}  // namespace
}  // namespace ar4j_llama
