// Kernel 2 of the decode / verify / chunk attention (attention.cu: the design, the launches):
// p.V of a block's key range on tensor cores and the merge of the splits. Included by attention.cu
// alone, after attention_scores.cuh.
#pragma once

#include "attention_scores.cuh"

namespace ar4j_llama {
namespace {

// Kernel 2's V tiles, the probabilities (bf16, the m-tiles' rows), and when it computes the
// scores again q_h and the K tiles.
size_t values_shared_bytes(int32_t m_tile_count, int32_t head_dim, bool stored) {
    size_t bytes = kStages * tile_bytes(head_dim) + size_t(16 * m_tile_count) * kProbabilityStride * sizeof(bf16);
    if (!stored) bytes += scores_shared_bytes(m_tile_count, head_dim);
    return bytes;
}

__device__ __forceinline__ void store4(bf16 *dst, const float (&x)[4]) {
    reinterpret_cast<__nv_bfloat162 *>(dst)[0] = __floats2bfloat162_rn(x[0], x[1]);
    reinterpret_cast<__nv_bfloat162 *>(dst)[1] = __floats2bfloat162_rn(x[2], x[3]);
}

// The n-tiles (8 columns of head_dim) a warp of kernel 2 accumulates: w, w + kWarps, ...
constexpr int kMaxWarpColumnTiles = AR4J_LLAMA_MAX_HEAD_DIM / 8 / kWarps;
static_assert(AR4J_LLAMA_MAX_HEAD_DIM % (8 * kWarps) == 0, "whole n-tiles per warp at the largest head_dim");

// Kernel 2: p.V of the block's range on tensor cores; the merge of the splits by the chunk's last
// block. ROPE (the fused form, STORED only): the new tokens' values patched into the tiles of their
// positions and written to the value cache.
template <int ROWS, bool STORED, bool ROPE>
__global__ void __launch_bounds__(kThreads) attention_values_kernel(AttentionArgs a) {
    constexpr int MT = m_tiles<ROWS>();
    extern __shared__ __align__(16) unsigned char shared[];
    __shared__ Rows<ROWS> rows;
    __shared__ float row_max[ROWS];
    __shared__ float row_sum[ROWS];
    __shared__ int32_t last_block;
    const int stage = kTile * (a.head_dim + kPad);
    bf16 *v_s = reinterpret_cast<bf16 *>(shared);
    bf16 *p_h = v_s + kStages * stage;                    // [16 MT][kProbabilityStride]
    bf16 *q_h = p_h + 16 * MT * kProbabilityStride;       // recompute only
    bf16 *k_s = q_h + 16 * MT * q_tile_stride(a.head_dim);
    bf16 *staged = q_h;  // ROPE (STORED: no q_h, no k_s)
    static_assert(!ROPE || STORED, "the fused form keeps the scores");
    const int32_t kv_head = blockIdx.y;

    // Before the wait: this grid's predecessor is attention_scores_kernel of the same call, which
    // lets it start only after its own griddepcontrol.wait, i.e. once the grid before it (the
    // latest that may have written q, the caches or the positions) has completed. So those may
    // be read now (the fused form's new values too; kernel 1 writes only new keys to the caches);
    // the scores, stats and counters of kernel 1 only after the wait.
    const Range range = locate(a, rows, false);
    if (int32_t(blockIdx.z) >= range.active) return;  // an empty split: neither a partial nor a count
    const int32_t tiles = (range.end - range.begin + kTile - 1) / kTile;
    if (!STORED) load_q(a, rows, range.rows, q_h);
    // The probability rows past the block's stay zero (their products are never used).
    for (int i = threadIdx.x; i < (16 * MT - range.rows) * kProbabilityStride; i += kThreads) {
        p_h[range.rows * kProbabilityStride + i] = __float2bfloat16_rn(0.0f);
    }
    if (tiles > 0) {
        const int32_t count = min(kTile, range.end - range.begin);
        load_tile(v_s, a.v_cache + rows.cache, a, kv_head, range.begin, count);
        if (!STORED) load_tile(k_s, a.k_cache + rows.cache, a, kv_head, range.begin, count);
    }
    cp_async_commit();
    if (ROPE) stage_new_rows<false>(a, rows, range, kv_head, staged);
    pdl_wait();
    pdl_trigger();

    {
        // A warp per row: lane l reads the pairs of splits l, l + 32, ... (all loads in flight at
        // once), the max by a butterfly, the sum in lane order then a fixed butterfly. Every block
        // of the row computes the same bits (same splits, same order).
        // All of a warp's rows are loaded before any is reduced: one memory latency, not one per row.
        static_assert(AR4J_LLAMA_MAX_SPLITS <= 4 * 32, "four pairs per lane");
        constexpr int kWarpRows = (ROWS + kThreads / 32 - 1) / (kThreads / 32);
        const int lane = threadIdx.x % 32;
        float2 pairs[kWarpRows][4];
#pragma unroll
        for (int w = 0; w < kWarpRows; ++w) {
            const int r = threadIdx.x / 32 + (kThreads / 32) * w;
            const float2 *stats = reinterpret_cast<const float2 *>(a.stats) + int64_t(rows.id[r < range.rows ? r : 0]) * a.splits;
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int32_t s = lane + 32 * i;
                pairs[w][i] = r < range.rows && s < range.active ? __ldcg(stats + s) : make_float2(-INFINITY, 0.0f);
            }
        }
#pragma unroll 1
        for (int w = 0; w < kWarpRows; ++w) {  // not unrolled: one copy of the reduction's code
            const int r = threadIdx.x / 32 + (kThreads / 32) * w;
            if (r >= range.rows) break;  // uniform in the warp
            const float2 (&ml)[4] = pairs[w];
            float mx = fmaxf(fmaxf(ml[0].x, ml[1].x), fmaxf(ml[2].x, ml[3].x));
#pragma unroll
            for (int offset = 16; offset > 0; offset >>= 1) mx = fmaxf(mx, __shfl_xor_sync(kFullMask, mx, offset));
            float sum = 0.0f;
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                if (ml[i].y > 0.0f) sum = __fadd_rn(sum, __fmul_rn(ml[i].y, expf(ml[i].x - mx)));
            }
#pragma unroll
            for (int offset = 16; offset > 0; offset >>= 1) sum = __fadd_rn(sum, __shfl_xor_sync(kFullMask, sum, offset));
            if (lane == 0) {
                row_max[r] = mx;
                row_sum[r] = sum;
            }
        }
    }
    // Warp w accumulates the n-tiles w, w + kWarps, ... (8 columns each) of every m-tile, in the
    // MMA's accumulator layout: o[mt][c][0..1] row 16 mt + g, columns 8 n + 2t, + 1; o[mt][c][2..3]
    // row 16 mt + g + 8 (n = w + kWarps c, g = lane / 4, t = lane % 4).
    const int lane = threadIdx.x % 32;
    const int warp = threadIdx.x / 32;
    const int g = lane / 4, t = lane % 4;
    const int column_tiles = a.head_dim / 8;
    const int v_stride = a.head_dim + kPad;
    float o[MT][kMaxWarpColumnTiles][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int c = 0; c < kMaxWarpColumnTiles; ++c) o[mt][c][0] = o[mt][c][1] = o[mt][c][2] = o[mt][c][3] = 0.0f;

    for (int32_t tile = 0; tile < tiles; ++tile) {
        const int32_t first = range.begin + tile * kTile;
        const int32_t count = min(kTile, range.end - first);
        if (tile + 1 < tiles) {
            const int32_t next = min(kTile, range.end - first - kTile);
            load_tile(v_s + ((tile + 1) % kStages) * stage, a.v_cache + rows.cache, a, kv_head, first + kTile, next);
            if (!STORED) {
                load_tile(k_s + ((tile + 1) % kStages) * stage, a.k_cache + rows.cache, a, kv_head, first + kTile, next);
            }
        }
        cp_async_commit();
        cp_async_wait<1>();
        __syncthreads();
        if (ROPE && patch_tile(a, rows, kv_head, staged, v_s + (tile % kStages) * stage, first, count, a.v_store)) {
            __syncthreads();
        }
        if (STORED) {
            // Thread t takes key t % kTile of rows t / kTile, + kThreads / kTile, ...: every stored
            // score of the tile is loaded before any is used (one memory latency per tile).
            constexpr int kPer = (ROWS * kTile + kThreads - 1) / kThreads;
            const int key = threadIdx.x % kTile;
            const int32_t j = first + key;
            uint16_t bits[kPer];
#pragma unroll
            for (int u = 0; u < kPer; ++u) {
                const int r = threadIdx.x / kTile + u * (kThreads / kTile);
                const bool valid = r < range.rows && key < count && j <= rows.pos[r];
                bits[u] = valid ? __ldcg(a.scores + int64_t(rows.id[r]) * a.max_positions + j) : uint16_t(0);
            }
#pragma unroll
            for (int u = 0; u < kPer; ++u) {
                const int r = threadIdx.x / kTile + u * (kThreads / kTile);
                if (r < range.rows) {
                    const bool valid = key < count && j <= rows.pos[r];
                    const float p = valid ? to_probability(__uint_as_float(uint32_t(bits[u]) << 16), row_max[r], row_sum[r]) : 0.0f;
                    p_h[r * kProbabilityStride + key] = __float2bfloat16_rn(p);  // exact: p is a bf16 value
                }
            }
        } else {
            float d[MT][4];
            tile_scores<MT>(q_h, k_s + (tile % kStages) * stage, a.head_dim, d);
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    const int r = score_row(mt, g, i);
                    const int key = score_key(warp, t, i);
                    const int32_t j = first + key;
                    if (r < range.rows) {
                        const float p = key < count && j <= rows.pos[r]
                                            ? to_probability(to_score(d[mt][i], a.scale), row_max[r], row_sum[r])
                                            : 0.0f;
                        p_h[r * kProbabilityStride + key] = __float2bfloat16_rn(p);
                    }
                }
            }
        }
        __syncthreads();
        // o += P V: the tile's 64 keys in 4 k-steps of 16 (bf16 products, fp32 sums by the MMA).
        const bf16 *v_tile = v_s + (tile % kStages) * stage;
#pragma unroll
        for (int ks = 0; ks < kTile / 16; ++ks) {
            uint32_t pa[MT][4];
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) {
                const bf16 *p0 = p_h + (16 * mt + g) * kProbabilityStride + 16 * ks + 2 * t;
                pa[mt][0] = *reinterpret_cast<const uint32_t *>(p0);
                pa[mt][1] = *reinterpret_cast<const uint32_t *>(p0 + 8 * kProbabilityStride);
                pa[mt][2] = *reinterpret_cast<const uint32_t *>(p0 + 8);
                pa[mt][3] = *reinterpret_cast<const uint32_t *>(p0 + 8 * kProbabilityStride + 8);
            }
#pragma unroll
            for (int c = 0; c < kMaxWarpColumnTiles; ++c) {
                const int n = warp + kWarps * c;
                if (n < column_tiles) {  // uniform in the warp
                    uint32_t b0, b1;
                    ldmatrix_x2_trans(b0, b1, v_tile + (16 * ks + lane % 16) * v_stride + 8 * n);
#pragma unroll
                    for (int mt = 0; mt < MT; ++mt) mma_bf16(o[mt][c], pa[mt], b0, b1);
                }
            }
        }
        __syncthreads();  // the tiles are free for the copy two tiles on
    }

    // This thread's outputs: rows 16 mt + g (+ 8), columns 8 n + 2t, + 1 of its warp's n-tiles.
    const bool direct = range.active == 1;  // the only split with keys: out directly (what the merge of one partial writes)
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int c = 0; c < kMaxWarpColumnTiles; ++c) {
            const int n = warp + kWarps * c;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int r = 16 * mt + g + 8 * h;
                if (n < column_tiles && r < range.rows) {
                    const int col = 8 * n + 2 * t;
                    float x0 = o[mt][c][2 * h], x1 = o[mt][c][2 * h + 1];
                    if (direct) {
                        if (rows.pos[r] < 0) x0 = x1 = NAN;
                        *reinterpret_cast<__nv_bfloat162 *>(a.out + int64_t(rows.token[r]) * a.out_stride +
                                                            int64_t(rows.head[r]) * a.head_dim + col) =
                            __floats2bfloat162_rn(x0, x1);
                    } else {
                        float *dst = a.partial + (int64_t(rows.id[r]) * a.splits + blockIdx.z) * a.head_dim + col;
                        *reinterpret_cast<float2 *>(dst) = make_float2(x0, x1);
                    }
                }
            }
        }
    }
    if (direct) return;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        const int32_t done = atomicAdd(a.counters + blockIdx.x * a.n_kv_heads + kv_head, 1);
        last_block = done == range.active - 1;
    }
    __syncthreads();
    if (!last_block) return;
    __threadfence();
    // The chunk's last block: out = bf16(sum of the splits' partials, in split order).
    const int columns = a.head_dim / 4;
    for (int i = threadIdx.x; i < range.rows * columns; i += kThreads) {
        const int r = i / columns;
        const int c4 = i - r * columns;
        const float4 *src = reinterpret_cast<const float4 *>(a.partial + int64_t(rows.id[r]) * a.splits * a.head_dim) + c4;
        float4 sum = __ldcg(src);
#pragma unroll 16
        for (int32_t s = 1; s < range.active; ++s) {
            const float4 x = __ldcg(src + int64_t(s) * columns);
            sum.x = __fadd_rn(sum.x, x.x);
            sum.y = __fadd_rn(sum.y, x.y);
            sum.z = __fadd_rn(sum.z, x.z);
            sum.w = __fadd_rn(sum.w, x.w);
        }
        float x[4] = {sum.x, sum.y, sum.z, sum.w};
        if (rows.pos[r] < 0) x[0] = x[1] = x[2] = x[3] = NAN;
        store4(a.out + int64_t(rows.token[r]) * a.out_stride + int64_t(rows.head[r]) * a.head_dim + c4 * 4, x);
    }
}

}  // namespace
}  // namespace ar4j_llama
