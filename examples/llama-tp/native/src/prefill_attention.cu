// Causal grouped-query attention of a prefill chunk in one kernel on tensor cores (mma.sync
// m16n8k16, bf16 in, fp32 accumulate): the scores never leave the SM. See
// ar4j_llama_prefill_attention in kernels.h.
//
// A block takes kRows query rows of one head (a warp per 16 rows) and walks the key tiles of 64
// keys its rows can see once, with an online softmax (the FlashAttention-2 form); each tile's K and
// V copies (cp.async) are in flight while the previous tile is used. Measured on an H100 (prefill
// of 4096 tokens, llama3-8b): 131 ms with this kernel against 156 ms through cuBLAS's batched
// GEMMs around a softmax kernel and 172 ms with a two-walk form that first found each row's max
// and sum to round every probability at eager attention's point; RESULTS.md has the figures.
#include "common.cuh"

namespace ar4j_llama {
namespace {

// 4 warps, 64 rows: a block needs 23K registers and 70 KB of shared memory (head_dim 128). 8 warps
// (128 rows, 50K registers: most of an SM's) were measured on an H100 at 130.4 ms against 131.6 for
// the prefill of 4096 tokens, not enough to give up a block that fits beside other kernels' blocks.
constexpr int kWarpsFa = 4;
constexpr int kRows = 16 * kWarpsFa;  // query rows per block
constexpr int kKeys = 64;     // keys per tile
constexpr int kThreadsFa = 32 * kWarpsFa;
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

// Issues the copies of a tile of kTileRows rows x D bf16 from global (row stride in elements) into shared
// (row stride D + kPad) as one cp.async group (16 bytes a copy, through L2); rows at or past `valid`
// are zero-filled without a read. Every copy is in flight at once: the caller waits for the group.
template <int D, int kTileRows = kKeys>
__device__ __forceinline__ void issue_tile(bf16 *dst, const bf16 *src, int64_t stride, int32_t valid) {
    constexpr int kChunks = D / 8;
#pragma unroll
    for (int i = threadIdx.x; i < kTileRows * kChunks; i += kThreadsFa) {
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
// `unmasked`: the caller knows every key of the tile is visible to all 16 rows (warp-uniform).
template <int D>
__device__ __forceinline__ void tile_scores(float (&s)[kKeys / 8][4], const uint32_t (&qf)[D / 16][4],
                                            const bf16 *k_tile, int lane, int32_t key0, int32_t row_pos0,
                                            int32_t rows_valid0, float scale, bool unmasked = false) {
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
            const bool ok = unmasked || (row < rows_valid0 && key <= row_pos0 + row);
            s[j][e] = ok ? round_bf16(__fmul_rn(round_bf16(s[j][e]), scale)) : -INFINITY;
        }
    }
}

__device__ __forceinline__ float exp2_approx(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// One walk with an online softmax (the FlashAttention-2 form): per tile, the rows' running max
// rises, the partial sums and O are rescaled by exp(old max - new max), and P = exp(s - max) --
// not yet divided by the sum -- is rounded to bf16 for P . V; O is divided by the sum at the end.
// The scores are eager attention's (bf16(bf16(q . k) * scale)); the probabilities are rounded
// before normalisation, so the output differs from eager attention's by bf16 rounding, not more.
template <int D>
__global__ void __launch_bounds__(kThreadsFa) prefill_attention_kernel(const FaArgs a) {
    extern __shared__ __align__(16) bf16 fa_shared[];
    constexpr int kTile = kKeys * (D + kPad);
    // Shared: K0, V0, K1, V1 (tile t in buffers t & 1). Q passes through K1 and V1 (kRows <= 2 * kKeys
    // rows) once, before the walk.
    static_assert(kRows <= 2 * kKeys, "Q's rows must fit two tile buffers");
    auto k_buf = [&](int i) { return fa_shared + (2 * i) * kTile; };
    auto v_buf = [&](int i) { return fa_shared + (2 * i + 1) * kTile; };
    bf16 *q_tile = k_buf(1);
    pdl_wait();  // the trigger is at the end: see there

    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int t = lane & 3;
    const int32_t row0 = int32_t(gridDim.x - 1 - blockIdx.x) * kRows;
    const int head = blockIdx.y;
    const int kv_head = head / a.group;
    const int32_t last_row = min(a.n, row0 + kRows) - 1;
    const int32_t keys = a.start + last_row + 1;
    const int32_t tiles = (keys + kKeys - 1) / kKeys;
    const bf16 *k_head = a.k + int64_t(kv_head) * D;
    const bf16 *v_head = a.v + int64_t(kv_head) * D;

    // Q through shared into A fragments; K's and V's first tiles fly meanwhile.
    issue_tile<D, kRows>(q_tile, a.q + int64_t(row0) * a.q_stride + int64_t(head) * D, a.q_stride, a.n - row0);
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
    __syncthreads();  // Q's buffers are tile 1's: read before its copies land there
    issue_tile<D>(v_buf(0), v_head, a.kv_stride, keys);
    commit_copies();

    const int32_t wrow0 = row0 + warp * 16;
    const int32_t rows_valid = a.n - wrow0;
    const int32_t pos0 = a.start + wrow0;
    constexpr float kLog2e = 1.4426950408889634f;

    float o[D / 8][4];
#pragma unroll
    for (int j = 0; j < D / 8; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};  // l: this lane's part of the row's sum

    for (int32_t tile = 0; tile < tiles; ++tile) {
        const int32_t key0 = tile * kKeys;
        if (tile + 1 < tiles) {
            const int next = (tile + 1) & 1;
            const int64_t row = int64_t(tile + 1) * kKeys;
            issue_tile<D>(k_buf(next), k_head + row * a.kv_stride, a.kv_stride, keys - int32_t(row));
            issue_tile<D>(v_buf(next), v_head + row * a.kv_stride, a.kv_stride, keys - int32_t(row));
            commit_copies();
            wait_copies<1>();
        } else {
            wait_copies<0>();
        }
        __syncthreads();
        if (key0 <= pos0 + 15 && rows_valid > 0) {
            float s[kKeys / 8][4];
            const bool unmasked = key0 + kKeys - 1 <= pos0 && rows_valid >= 16;
            tile_scores<D>(s, qf, k_buf(tile & 1), lane, key0, pos0, rows_valid, a.scale, unmasked);
            uint32_t p[kKeys / 16][4];
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                float tm = -INFINITY;
#pragma unroll
                for (int j = 0; j < kKeys / 8; ++j) tm = fmaxf(tm, fmaxf(s[j][2 * h], s[j][2 * h + 1]));
                tm = fmaxf(tm, __shfl_xor_sync(0xffffffffu, tm, 1));
                tm = fmaxf(tm, __shfl_xor_sync(0xffffffffu, tm, 2));
                const float m_new = fmaxf(m[h], tm);
                // A row that has seen no key yet (only past n) keeps zeros: no inf - inf.
                const float base = m_new == -INFINITY ? 0.0f : m_new * kLog2e;
                const float alpha = exp2_approx(m[h] * kLog2e - base);  // 0 on the first tile
                m[h] = m_new;
                l[h] *= alpha;
#pragma unroll
                for (int j = 0; j < D / 8; ++j) {
                    o[j][2 * h] *= alpha;
                    o[j][2 * h + 1] *= alpha;
                }
#pragma unroll
                for (int j = 0; j < kKeys / 8; ++j) {
                    const float p0 = exp2_approx(fmaf(s[j][2 * h], kLog2e, -base));
                    const float p1 = exp2_approx(fmaf(s[j][2 * h + 1], kLog2e, -base));
                    l[h] += p0 + p1;
                    // n-tile j is half of k-step j / 2: rows g (a0 / a2) and g + 8 (a1 / a3).
                    p[j >> 1][(j & 1) * 2 + h] = pack_bf16(p0, p1);
                }
            }
            const bf16 *v_tile = v_buf(tile & 1);
#pragma unroll
            for (int kk = 0; kk < kKeys / 16; ++kk) {
#pragma unroll
                for (int j = 0; j < D / 8; j += 2) {
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
    // The next kernel may launch once every block is here, not at entry: a dependent launched early
    // holds SM slots while it waits, for the whole of this long grid -- with ranks sharing one GPU,
    // slots that another rank's all-reduce needs (as linear.cu's trigger).
    pdl_trigger();

    const int g = lane >> 2;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        float sum = l[h];
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);
        sum += __shfl_xor_sync(0xffffffffu, sum, 2);
        const int32_t row = wrow0 + g + 8 * h;
        if (row < a.n && row >= 0) {
            const float inv = 1.0f / sum;
            bf16 *dst = a.out + int64_t(row) * a.out_stride + int64_t(head) * D;
#pragma unroll
            for (int j = 0; j < D / 8; ++j) {
                const uint32_t bits = pack_bf16(o[j][2 * h] * inv, o[j][2 * h + 1] * inv);
                *reinterpret_cast<uint32_t *>(dst + 8 * j + 2 * t) = bits;
            }
        }
    }
}

template <int D>
int launch_fa(const FaArgs &a, int32_t n_heads, bool pdl, void *stream) {
    const size_t shared = size_t(4) * kKeys * (D + kPad) * sizeof(bf16);
    auto kernel = prefill_attention_kernel<D>;
    const int error = allow_shared(kernel, shared);
    if (error != 0) return error;
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
