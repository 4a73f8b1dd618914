// Causal grouped-query attention of a prefill chunk in one kernel on tensor cores (mma.sync
// m16n8k16, bf16 in, fp32 accumulate): the scores never leave the SM. See
// ar4j_llama_prefill_attention in kernels.h.
//
// A block takes 64 query rows of one head (4 warps of 16 rows) and walks the key tiles of 64 keys
// its rows can see, twice (each tile's copies, cp.async, in flight while the previous tile is used): the first walk finds each row's softmax max and sum (pairs merged tile
// by tile), the second recomputes the same scores (the same products in the same order: the same
// bits), turns them into probabilities rounded to bf16 as transformers' eager attention does, and
// accumulates P . V. Two walks cost a third more products than one online-softmax walk, but give
// each probability exactly the rounding point of eager attention (softmax, then bf16), which an
// online rescaling of the partial sums cannot.
#include "common.cuh"

namespace ar4j_llama {
namespace {

constexpr int kRows = 64;     // query rows per block
constexpr int kKeys = 64;     // keys per tile
constexpr int kThreadsFa = 128;
constexpr int kPad = 8;       // bf16 of padding per shared row: ldmatrix's 8 rows fall in different banks

__device__ __forceinline__ uint32_t smem_u32(const void *p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(p)));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(p)));
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

// Issues the copies of a tile of kKeys rows x D bf16 from global (row stride in elements) into shared
// (row stride D + kPad) as one cp.async group (16 bytes a copy, through L2); rows at or past `valid`
// are zero-filled without a read. Every copy is in flight at once: the caller waits for the group.
template <int D>
__device__ __forceinline__ void issue_tile(bf16 *dst, const bf16 *src, int64_t stride, int32_t valid) {
    constexpr int kChunks = D / 8;
#pragma unroll
    for (int i = threadIdx.x; i < kKeys * kChunks; i += kThreadsFa) {
        const int r = i / kChunks, c = i % kChunks;
        const bool in = r < valid;
        const bf16 *from = in ? src + int64_t(r) * stride + c * 8 : src;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_u32(dst + r * (D + kPad) + c * 8)),
                     "l"(from), "r"(in ? 16 : 0)
                     : "memory");
    }
}

__device__ __forceinline__ void commit_copies() { asm volatile("cp.async.commit_group;" ::: "memory"); }

// Waits until at most `pending` of this thread's copy groups are still in flight.
template <int pending>
__device__ __forceinline__ void wait_copies() {
    asm volatile("cp.async.wait_group %0;" ::"n"(pending) : "memory");
}

struct FaArgs {
    const bf16 *q;
    int64_t q_stride;
    const bf16 *k;
    const bf16 *v;
    int64_t kv_stride;
    bf16 *out;
    int64_t out_stride;
    int32_t n;
    int32_t start;
    int32_t group;  // query heads per KV head
    float scale;
};

// The scores of a warp's 16 rows against the tile's 64 keys, as eager attention rounds them:
// s = bf16(bf16(q . k) * scale); -inf where masked (key > the row's position, or a padding row).
template <int D>
__device__ __forceinline__ void tile_scores(float (&s)[kKeys / 8][4], const uint32_t (&qf)[D / 16][4],
                                            const bf16 *k_tile, int lane, int32_t key0, int32_t row_pos0,
                                            int32_t rows_valid0, float scale) {
#pragma unroll
    for (int j = 0; j < kKeys / 8; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
        for (int j = 0; j < kKeys / 8; j += 2) {
            // Keys 8j .. 8j + 15, dims 16kk .. 16kk + 15: b of n-tile j in r0, r1; of j + 1 in r2, r3.
            const int key = 8 * j + (lane & 7) + ((lane >> 4) << 3);
            const int dim = 16 * kk + (((lane >> 3) & 1) << 3);
            uint32_t b[4];
            ldmatrix_x4(b, k_tile + key * (D + kPad) + dim);
            mma_bf16(s[j], qf[kk], b[0], b[1]);
            mma_bf16(s[j + 1], qf[kk], b[2], b[3]);
        }
    }
    const int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int j = 0; j < kKeys / 8; ++j) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int row = g + ((e >> 1) << 3);  // e 0, 1: row g; 2, 3: row g + 8
            const int32_t key = key0 + 8 * j + 2 * t + (e & 1);
            const bool ok = row < rows_valid0 && key <= row_pos0 + row;
            s[j][e] = ok ? round_bf16(__fmul_rn(round_bf16(s[j][e]), scale)) : -INFINITY;
        }
    }
}

template <int D>
__global__ void __launch_bounds__(kThreadsFa) prefill_attention_kernel(const FaArgs a) {
    extern __shared__ __align__(16) bf16 fa_shared[];
    // Two K and two V tiles: tile t + 1's copies fly while tile t is computed on. Q passes through
    // the second V buffer once, before the first walk.
    constexpr int kTile = kKeys * (D + kPad);
    auto k_buf = [&](int i) { return fa_shared + i * kTile; };
    auto v_buf = [&](int i) { return fa_shared + (2 + i) * kTile; };
    bf16 *q_tile = v_buf(1);
    pdl_enter();

    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int g = lane >> 2, t = lane & 3;
    // The blocks with the most keys (the last rows) first: the causal triangle's long blocks start early.
    const int32_t row0 = int32_t(gridDim.x - 1 - blockIdx.x) * kRows;
    const int head = blockIdx.y;
    const int kv_head = head / a.group;
    const int32_t last_row = min(a.n, row0 + kRows) - 1;
    const int32_t keys = a.start + last_row + 1;  // the keys this block's rows can see
    const int32_t tiles = (keys + kKeys - 1) / kKeys;
    const bf16 *k_head = a.k + int64_t(kv_head) * D;
    const bf16 *v_head = a.v + int64_t(kv_head) * D;

    // Q: 64 rows of this head -> shared -> each warp's A fragments (16 rows x D); K's first tile
    // flies meanwhile.
    issue_tile<D>(q_tile, a.q + int64_t(row0) * a.q_stride + int64_t(head) * D, a.q_stride, a.n - row0);
    commit_copies();
    issue_tile<D>(k_buf(0), k_head, a.kv_stride, keys);
    commit_copies();
    wait_copies<1>();
    __syncthreads();
    uint32_t qf[D / 16][4];
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
        ldmatrix_x4(qf[kk], q_tile + (warp * 16 + (lane & 15)) * (D + kPad) + 16 * kk + ((lane >> 4) << 3));
    }

    // Before tile `tile` is used: its successor's copies (K, and V when with_v) go out into the other
    // buffers -- last read in the previous trip, before its closing barrier -- and tile `tile`'s are waited for.
    auto next_tile = [&](int32_t tile, bool with_v) {
        if (tile + 1 < tiles) {
            const int next = (tile + 1) & 1;
            const int64_t row = int64_t(tile + 1) * kKeys;
            issue_tile<D>(k_buf(next), k_head + row * a.kv_stride, a.kv_stride, keys - int32_t(row));
            if (with_v) issue_tile<D>(v_buf(next), v_head + row * a.kv_stride, a.kv_stride, keys - int32_t(row));
            commit_copies();
            wait_copies<1>();
        } else {
            wait_copies<0>();
        }
    };

    const int32_t wrow0 = row0 + warp * 16;          // the warp's first row (chunk index)
    const int32_t rows_valid = a.n - wrow0;           // rows of the warp below n (may be <= 0)
    const int32_t pos0 = a.start + wrow0;             // its first row's position

    // Walk 1: each row's max and sum (rows g and g + 8 of the warp; the 4 lanes of a quad share them).
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
    for (int32_t tile = 0; tile < tiles; ++tile) {
        const int32_t key0 = tile * kKeys;
        next_tile(tile, false);
        __syncthreads();
        if (key0 <= pos0 + 15 && rows_valid > 0) {
            float s[kKeys / 8][4];
            tile_scores<D>(s, qf, k_buf(tile & 1), lane, key0, pos0, rows_valid, a.scale);
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                float tm = -INFINITY;
#pragma unroll
                for (int j = 0; j < kKeys / 8; ++j) tm = fmaxf(tm, fmaxf(s[j][2 * h], s[j][2 * h + 1]));
                tm = fmaxf(tm, __shfl_xor_sync(0xffffffffu, tm, 1));
                tm = fmaxf(tm, __shfl_xor_sync(0xffffffffu, tm, 2));
                float tl = 0.0f;
                if (tm != -INFINITY) {
#pragma unroll
                    for (int j = 0; j < kKeys / 8; ++j) {
                        tl = __fadd_rn(tl, s[j][2 * h] == -INFINITY ? 0.0f : expf(s[j][2 * h] - tm));
                        tl = __fadd_rn(tl, s[j][2 * h + 1] == -INFINITY ? 0.0f : expf(s[j][2 * h + 1] - tm));
                    }
                }
                tl = __fadd_rn(tl, __shfl_xor_sync(0xffffffffu, tl, 1));
                tl = __fadd_rn(tl, __shfl_xor_sync(0xffffffffu, tl, 2));
                softmax_merge(m[h], l[h], tm, tl);
            }
        }
        __syncthreads();
    }

    // Walk 2: p = bf16(expf(s - max) / sum), O += P . V.
    float o[D / 8][4];
#pragma unroll
    for (int j = 0; j < D / 8; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
    issue_tile<D>(k_buf(0), k_head, a.kv_stride, keys);
    issue_tile<D>(v_buf(0), v_head, a.kv_stride, keys);
    commit_copies();
    for (int32_t tile = 0; tile < tiles; ++tile) {
        const int32_t key0 = tile * kKeys;
        next_tile(tile, true);
        __syncthreads();
        if (key0 <= pos0 + 15 && rows_valid > 0) {
            const bf16 *v_tile = v_buf(tile & 1);
            float s[kKeys / 8][4];
            tile_scores<D>(s, qf, k_buf(tile & 1), lane, key0, pos0, rows_valid, a.scale);
            uint32_t p[kKeys / 16][4];  // A fragments of P, 16 keys each
#pragma unroll
            for (int j = 0; j < kKeys / 8; ++j) {
                float pv[4];
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int h = e >> 1;
                    pv[e] = s[j][e] == -INFINITY ? 0.0f : __fdiv_rn(expf(s[j][e] - m[h]), l[h]);
                }
                // n-tile j is half of k-step j / 2: rows g (a0 / a2) and g + 8 (a1 / a3).
                p[j >> 1][(j & 1) * 2 + 0] = pack_bf16(pv[0], pv[1]);
                p[j >> 1][(j & 1) * 2 + 1] = pack_bf16(pv[2], pv[3]);
            }
#pragma unroll
            for (int kk = 0; kk < kKeys / 16; ++kk) {
#pragma unroll
                for (int j = 0; j < D / 8; j += 2) {
                    // Keys 16kk .. 16kk + 15, dims 8j .. 8j + 15, transposed: b of n-tile j in r0, r1.
                    const int key = 16 * kk + (lane & 7) + (((lane >> 3) & 1) << 3);
                    const int dim = 8 * j + ((lane >> 4) << 3);
                    uint32_t b[4];
                    ldmatrix_x4_trans(b, v_tile + key * (D + kPad) + dim);
                    mma_bf16(o[j], p[kk], b[0], b[1]);
                    mma_bf16(o[j + 1], p[kk], b[2], b[3]);
                }
            }
        }
        __syncthreads();
    }

    // O rounded to bf16 (the product's output), rows below n only.
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int32_t row = wrow0 + g + 8 * h;
        if (row < a.n && row >= 0) {
            bf16 *dst = a.out + int64_t(row) * a.out_stride + int64_t(head) * D;
#pragma unroll
            for (int j = 0; j < D / 8; ++j) {
                const uint32_t bits = pack_bf16(o[j][2 * h], o[j][2 * h + 1]);
                *reinterpret_cast<uint32_t *>(dst + 8 * j + 2 * t) = bits;
            }
        }
    }
}

template <int D>
int launch_fa(const FaArgs &a, int32_t n_heads, bool pdl, void *stream) {
    const size_t shared = size_t(4) * kKeys * (D + kPad) * sizeof(bf16);
    auto kernel = prefill_attention_kernel<D>;
    const cudaError_t error = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared));
    if (error != cudaSuccess) return int(error);
    const dim3 grid(unsigned((a.n + kRows - 1) / kRows), unsigned(n_heads));
    return launch(kernel, grid, dim3(kThreadsFa), shared, stream, pdl, a);
}

}  // namespace
}  // namespace ar4j_llama

using namespace ar4j_llama;

AR4J_LLAMA_API int ar4j_llama_prefill_attention(const void *q, int64_t q_row_stride, const void *k_cache,
                                                const void *v_cache, int64_t kv_row_stride, void *out,
                                                int64_t out_row_stride, int32_t n, int32_t start_pos,
                                                int32_t n_heads, int32_t n_kv_heads, int32_t head_dim, float scale,
                                                int32_t pdl, void *stream) {
    if (q == nullptr || k_cache == nullptr || v_cache == nullptr || out == nullptr) {
        return AR4J_LLAMA_ERROR_NULL_POINTER;
    }
    if (head_dim != 64 && head_dim != 128) return AR4J_LLAMA_ERROR_HEAD_DIM;
    if (n < 1 || n_heads < 1 || n_heads > 65535 || n_kv_heads < 1 || start_pos < 0 ||
        int64_t(start_pos) + n > INT32_MAX - kKeys) {
        return AR4J_LLAMA_ERROR_SIZE;
    }
    if (n_heads % n_kv_heads != 0) return AR4J_LLAMA_ERROR_GQA;
    if (!(scale > 0.0f) || !std::isfinite(scale)) return AR4J_LLAMA_ERROR_INVALID_ARGUMENT;
    if (q_row_stride < int64_t(n_heads) * head_dim || out_row_stride < int64_t(n_heads) * head_dim ||
        kv_row_stride < int64_t(n_kv_heads) * head_dim) {
        return AR4J_LLAMA_ERROR_STRIDE;
    }
    if (!aligned(q, 16) || !aligned(k_cache, 16) || !aligned(v_cache, 16) || !aligned(out, 16) ||
        q_row_stride % 8 != 0 || kv_row_stride % 8 != 0 || out_row_stride % 8 != 0) {
        return AR4J_LLAMA_ERROR_MISALIGNED;
    }
    FaArgs a;
    a.q = static_cast<const bf16 *>(q);
    a.q_stride = q_row_stride;
    a.k = static_cast<const bf16 *>(k_cache);
    a.v = static_cast<const bf16 *>(v_cache);
    a.kv_stride = kv_row_stride;
    a.out = static_cast<bf16 *>(out);
    a.out_stride = out_row_stride;
    a.n = n;
    a.start = start_pos;
    a.group = n_heads / n_kv_heads;
    a.scale = scale;
    return head_dim == 64 ? launch_fa<64>(a, n_heads, pdl != 0, stream) : launch_fa<128>(a, n_heads, pdl != 0, stream);
}
