// Causal grouped-query attention of a prefill chunk in one kernel on tensor cores (mma.sync
// m16n8k16, bf16 in, fp32 accumulate): the scores never leave the SM. See
// ar4j_llama_prefill_attention in kernels.h.
//
// A block takes 128 query rows of one head (4 warps of 32 rows) and walks the key tiles of 64 keys
// its rows can see once, with an online softmax (the FlashAttention-2 form); each tile's K and V
// copies (cp.async) are in flight while the previous tile is used. Measured on an H100 (prefill of
// 4096 tokens, llama3-8b, one lease): 129.4 ms (attention 28.3) with this kernel, 134.9 (33.9) with
// 16 rows a warp; earlier, 157 ms through cuBLAS's batched GEMMs around a softmax kernel and 172 ms
// with a two-walk form that first found each row's max and sum to round every probability at eager
// attention's point. RESULTS.md has the figures.
#include "mma.cuh"

namespace ar4j_llama {
namespace {

// 4 warps of two 16-row m-tiles: at head_dim 128 a block needs 255 registers a thread (32K in all)
// and 104 KB of shared memory, so two fit an SM. Two m-tiles a warp halve the shared-memory reads of
// K and V per product (each fragment feeds both), which is what bounds this kernel; 8 warps of one
// m-tile (50K registers a block) were no faster than 4 (130.4 against 131.6 ms, same prefill).
constexpr int kWarpsFa = 4;
constexpr int kMTiles = 2;  // 16-row m-tiles per warp
constexpr int kKeys = 64;     // keys per tile
constexpr int kThreadsFa = 32 * kWarpsFa;
constexpr int kPad = 8;       // bf16 of padding per shared row: ldmatrix's 8 rows fall in different banks

// Issues the copies of a tile of kTileRows rows x D bf16 from global (row stride in elements) into shared
// (row stride D + kPad), 16 bytes a copy through L2; rows at or past `valid` are zero-filled without a
// read. The caller commits them as a group (cp_async_commit) and waits for it (cp_async_wait). A thread
// copies one column of chunks, every kRowsPerPass-th row from its first: its addresses advance by a constant
// (one 64-bit add a copy, where the index arithmetic of a flat loop cost several multiplies).
template <int D, int kTileRows = kKeys>
__device__ __forceinline__ void issue_tile(bf16 *dst, const bf16 *src, int64_t stride, int32_t valid) {
    constexpr int kChunks = D / 8;
    static_assert(kThreadsFa % kChunks == 0, "a pass of the block's threads covers whole rows");
    constexpr int kRowsPerPass = kThreadsFa / kChunks;
    static_assert(kTileRows % kRowsPerPass == 0, "whole passes cover the tile");
    const int r0 = threadIdx.x / kChunks, c = threadIdx.x % kChunks;
    const bf16 *g = src + int64_t(r0) * stride + c * 8;
    bf16 *s = dst + r0 * (D + kPad) + c * 8;
    const int64_t step = int64_t(kRowsPerPass) * stride;
#pragma unroll
    for (int i = 0; i < kTileRows / kRowsPerPass; ++i) {
        const bool in = r0 + i * kRowsPerPass < valid;
        cp_async16_or_zero(s + i * kRowsPerPass * (D + kPad), in ? g : src, in);
        g += step;
    }
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

// A warp's 16-row m-tile's scores as eager attention rounds them, in place: s = bf16(bf16(q . k) *
// scale); -inf where masked (key > the row's position, or a row at or past n). `unmasked`: every key
// of the tile is visible to all 16 rows (warp-uniform), so no compare is needed.
__device__ __forceinline__ void round_and_mask(float (&s)[kKeys / 8][4], int lane, int32_t key0, int32_t row_pos0,
                                               int32_t rows_valid0, float scale, bool unmasked) {
    const int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int j = 0; j < kKeys / 8; ++j) {
#pragma unroll
        for (int e = 0; e < 4; e += 2) {
            // Elements e and e + 1 (one row, keys 2t and 2t + 1) rounded as a pair, one packed conversion a rounding
            // where a conversion an element was twice as many: on an H100 the kernel took 14-17% less time with
            // pairs, the same bits (RESULTS.md).
            round_bf16_pair(s[j][e], s[j][e + 1]);
            s[j][e] = __fmul_rn(s[j][e], scale);
            s[j][e + 1] = __fmul_rn(s[j][e + 1], scale);
            round_bf16_pair(s[j][e], s[j][e + 1]);
            const int row = g + ((e >> 1) << 3);  // e 0, 1: row g; 2, 3: row g + 8
            const int32_t key = key0 + 8 * j + 2 * t;
            if (!unmasked) {
                const bool in = row < rows_valid0;
                if (!(in && key <= row_pos0 + row)) s[j][e] = -INFINITY;
                if (!(in && key + 1 <= row_pos0 + row)) s[j][e + 1] = -INFINITY;
            }
        }
    }
}

__device__ __forceinline__ float exp2_approx(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// A's fragments of 16 query rows x dims 16kk .. 16kk + 15 from the block's Q tile in shared memory.
template <int D>
__device__ __forceinline__ void load_q(uint32_t (&qf)[4], const bf16 *q_tile, int row0, int kk, int lane) {
    ldmatrix_x4(qf, q_tile + (row0 + (lane & 15)) * (D + kPad) + 16 * kk + ((lane >> 4) << 3));
}

// One key tile of a warp's MT m-tiles: S = Q K^T, the scores rounded (and masked), the online softmax's update
// and O += P V. MASK false: every key of the tile is visible to every row of the warp, all of them below n (the
// tiles left of the causal diagonal, most of a long prompt's), so no compare is compiled in: about a fifth fewer
// instructions a tile at head_dim 128. The values are the same either way.
template <int D, int MT, bool MASK>
__device__ __forceinline__ void attend_tile(float (&o)[MT][D / 8][4], float (&m)[MT][2], float (&l)[MT][2],
                                            const bf16 *q_tile, const bf16 *k_tile, const bf16 *v_tile, int warp,
                                            int lane, int32_t key0, int32_t pos0, int32_t rows_valid, float scale) {
    constexpr float kLog2e = 1.4426950408889634f;
    float s[MT][kKeys / 8][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int j = 0; j < kKeys / 8; ++j) s[mt][j][0] = s[mt][j][1] = s[mt][j][2] = s[mt][j][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
        uint32_t qf[MT][4];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) load_q<D>(qf[mt], q_tile, warp * 16 * MT + 16 * mt, kk, lane);
#pragma unroll
        for (int j = 0; j < kKeys / 8; j += 2) {
            // Keys 8j .. 8j + 15, dims 16kk .. 16kk + 15: b of n-tile j in r0, r1; of j + 1 in r2, r3.
            const int key = 8 * j + (lane & 7) + ((lane >> 4) << 3);
            const int dim = 16 * kk + (((lane >> 3) & 1) << 3);
            uint32_t b[4];
            ldmatrix_x4(b, k_tile + key * (D + kPad) + dim);
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) {
                mma_bf16(s[mt][j], qf[mt], b[0], b[1]);
                mma_bf16(s[mt][j + 1], qf[mt], b[2], b[3]);
            }
        }
    }
    uint32_t p[MT][kKeys / 16][4];  // A fragments of P, 16 keys each
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
        const int32_t mpos0 = pos0 + 16 * mt, mvalid = rows_valid - 16 * mt;
        round_and_mask(s[mt], lane, key0, mpos0, mvalid, scale, !MASK || (key0 + kKeys - 1 <= mpos0 && mvalid >= 16));
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float tm = -INFINITY;
#pragma unroll
            for (int j = 0; j < kKeys / 8; ++j) tm = fmaxf(tm, fmaxf(s[mt][j][2 * h], s[mt][j][2 * h + 1]));
            tm = fmaxf(tm, __shfl_xor_sync(0xffffffffu, tm, 1));
            tm = fmaxf(tm, __shfl_xor_sync(0xffffffffu, tm, 2));
            const float m_new = fmaxf(m[mt][h], tm);
            // A row that has seen no key yet (masked, or past n) keeps zeros: no inf - inf.
            const float base = m_new == -INFINITY ? 0.0f : m_new * kLog2e;
            const float alpha = exp2_approx(m[mt][h] * kLog2e - base);  // 0 on a row's first keys
            m[mt][h] = m_new;
            l[mt][h] *= alpha;
#pragma unroll
            for (int j = 0; j < D / 8; ++j) {
                o[mt][j][2 * h] *= alpha;
                o[mt][j][2 * h + 1] *= alpha;
            }
#pragma unroll
            for (int j = 0; j < kKeys / 8; ++j) {
                const float p0 = exp2_approx(fmaf(s[mt][j][2 * h], kLog2e, -base));
                const float p1 = exp2_approx(fmaf(s[mt][j][2 * h + 1], kLog2e, -base));
                l[mt][h] += p0 + p1;
                // n-tile j is half of k-step j / 2: rows g (a0 / a2) and g + 8 (a1 / a3).
                p[mt][j >> 1][(j & 1) * 2 + h] = pack_bf16(p0, p1);
            }
        }
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
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) {
                mma_bf16(o[mt][j], p[mt][kk], b[0], b[1]);
                mma_bf16(o[mt][j + 1], p[mt][kk], b[2], b[3]);
            }
        }
    }
}

// One walk with an online softmax (the FlashAttention-2 form): per tile, the rows' running max
// rises, the partial sums and O are rescaled by exp(old max - new max), and P = exp(s - max) --
// not yet divided by the sum -- is rounded to bf16 for P . V; O is divided by the sum at the end.
// The scores are eager attention's (bf16(bf16(q . k) * scale)); the probabilities are rounded
// before normalisation, so the output differs from eager attention's by bf16 rounding, not more.
// MT: 16-row m-tiles per warp; each K and V fragment read from shared memory feeds MT products. Q's
// fragments are read again from shared memory for every tile: two m-tiles leave no room for them in
// registers.
template <int D, int MT>
__global__ void __launch_bounds__(kThreadsFa) prefill_attention_kernel(const FaArgs a) {
    extern __shared__ __align__(16) bf16 fa_shared[];
    constexpr int kRowsB = 16 * MT * kWarpsFa;
    constexpr int kTile = kKeys * (D + kPad);
    // Shared: Q (kRowsB rows), then K0, V0, K1, V1 (tile t in buffers t & 1).
    bf16 *q_tile = fa_shared;
    bf16 *kv = fa_shared + kRowsB * (D + kPad);
    auto k_buf = [&](int i) { return kv + (2 * i) * kTile; };
    auto v_buf = [&](int i) { return kv + (2 * i + 1) * kTile; };
    pdl_wait();  // the trigger is at the end: see there

    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int t = lane & 3;
    // The blocks with the most keys (the last rows) first, of every head before the next rows of any (the heads are
    // the grid's fast dimension, so blocks start in that order): the causal triangle's long blocks start early and
    // the last to start are the shortest of all, not one head's; the heads of a KV group run side by side.
    const int32_t row0 = int32_t(gridDim.y - 1 - blockIdx.y) * kRowsB;
    const int head = blockIdx.x;
    const int kv_head = head / a.group;
    const int32_t last_row = min(a.n, row0 + kRowsB) - 1;
    const int32_t keys = a.start + last_row + 1;  // the keys this block's rows can see
    const int32_t tiles = (keys + kKeys - 1) / kKeys;
    const bf16 *k_head = a.k + int64_t(kv_head) * D;
    const bf16 *v_head = a.v + int64_t(kv_head) * D;

    issue_tile<D, kRowsB>(q_tile, a.q + int64_t(row0) * a.q_stride + int64_t(head) * D, a.q_stride, a.n - row0);
    issue_tile<D>(k_buf(0), k_head, a.kv_stride, keys);
    issue_tile<D>(v_buf(0), v_head, a.kv_stride, keys);
    cp_async_commit();

    const int32_t wrow0 = row0 + warp * 16 * MT;  // the warp's first row (chunk index)
    const int32_t rows_valid = a.n - wrow0;        // rows of the warp below n (may be <= 0)
    const int32_t pos0 = a.start + wrow0;          // its first row's position

    float o[MT][D / 8][4];
    float m[MT][2], l[MT][2];  // l: this lane's part of the row's sum
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int j = 0; j < D / 8; ++j) o[mt][j][0] = o[mt][j][1] = o[mt][j][2] = o[mt][j][3] = 0.0f;
        m[mt][0] = m[mt][1] = -INFINITY;
        l[mt][0] = l[mt][1] = 0.0f;
    }

    for (int32_t tile = 0; tile < tiles; ++tile) {
        const int32_t key0 = tile * kKeys;
        if (tile + 1 < tiles) {
            const int next = (tile + 1) & 1;
            const int64_t row = int64_t(tile + 1) * kKeys;
            issue_tile<D>(k_buf(next), k_head + row * a.kv_stride, a.kv_stride, keys - int32_t(row));
            issue_tile<D>(v_buf(next), v_head + row * a.kv_stride, a.kv_stride, keys - int32_t(row));
            cp_async_commit();
            cp_async_wait<1>();
        } else {
            cp_async_wait<0>();
        }
        __syncthreads();
        if (key0 <= pos0 + 16 * MT - 1 && rows_valid > 0) {
            const bf16 *k_tile = k_buf(tile & 1), *v_tile = v_buf(tile & 1);
            if (key0 + kKeys - 1 <= pos0 && rows_valid >= 16 * MT) {
                attend_tile<D, MT, false>(o, m, l, q_tile, k_tile, v_tile, warp, lane, key0, pos0, rows_valid, a.scale);
            } else {
                attend_tile<D, MT, true>(o, m, l, q_tile, k_tile, v_tile, warp, lane, key0, pos0, rows_valid, a.scale);
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
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float sum = l[mt][h];
            sum += __shfl_xor_sync(0xffffffffu, sum, 1);
            sum += __shfl_xor_sync(0xffffffffu, sum, 2);
            const int32_t row = wrow0 + 16 * mt + g + 8 * h;
            if (row < a.n && row >= 0) {
                const float inv = 1.0f / sum;
                bf16 *dst = a.out + int64_t(row) * a.out_stride + int64_t(head) * D;
#pragma unroll
                for (int j = 0; j < D / 8; ++j) {
                    const uint32_t bits = pack_bf16(o[mt][j][2 * h] * inv, o[mt][j][2 * h + 1] * inv);
                    *reinterpret_cast<uint32_t *>(dst + 8 * j + 2 * t) = bits;
                }
            }
        }
    }
}

template <int D, int MT>
int launch_fa(const FaArgs &a, int32_t n_heads, size_t shared, bool pdl, void *stream) {
    constexpr int kRowsB = 16 * MT * kWarpsFa;
    auto kernel = prefill_attention_kernel<D, MT>;
    const int error = allow_shared(kernel, shared);
    if (error != 0) return error;
    const dim3 grid(unsigned(n_heads), unsigned((a.n + kRowsB - 1) / kRowsB));
    return launch(kernel, grid, dim3(kThreadsFa), shared, stream, pdl, a);
}

// Shared memory of a block: Q's rows and two K and two V tiles.
template <int D, int MT>
constexpr size_t fa_shared_bytes() {
    return size_t(16 * MT * kWarpsFa + 4 * kKeys) * (D + kPad) * sizeof(bf16);
}

// Two m-tiles a warp where the device gives a block their shared memory (104 KB at head_dim 128:
// sm_80, sm_90, sm_100), else one (87 KB: the 99 KB of sm_86, sm_89, sm_120).
template <int D>
int launch_fa(const FaArgs &a, int32_t n_heads, bool pdl, void *stream) {
    int device = 0, optin = 0;
    cudaError_t e = cudaGetDevice(&device);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
    if (e != cudaSuccess) return int(e);
    constexpr size_t two = fa_shared_bytes<D, kMTiles>(), one = fa_shared_bytes<D, 1>();
    if (size_t(optin) >= two) return launch_fa<D, kMTiles>(a, n_heads, two, pdl, stream);
    return launch_fa<D, 1>(a, n_heads, one, pdl, stream);
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
    // The grid: the heads, then the blocks of rows (at most 65535, of 64 rows where they are fewest).
    if (n < 1 || n > 65535 * 64 || n_heads < 1 || n_heads > 65535 || n_kv_heads < 1 || start_pos < 0 ||
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
