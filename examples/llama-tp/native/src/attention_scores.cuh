// Kernel 1 of the decode / verify / chunk attention (attention.cu: the design, the launches): the
// scores of a block's key range on tensor cores and each row's softmax pair. Included by
// attention.cu alone, after attention_tiles.cuh.
#pragma once

#include "attention_tiles.cuh"

namespace ar4j_llama {
namespace {

size_t tile_bytes(int32_t head_dim) { return size_t(kTile) * (head_dim + kPad) * sizeof(bf16); }

// Kernel 1's (and the recomputing kernel 2's) q_h, the m-tiles' rows, then the K tiles.
size_t scores_shared_bytes(int32_t m_tile_count, int32_t head_dim) {
    return size_t(16 * m_tile_count) * q_tile_stride(head_dim) * sizeof(bf16) + kStages * tile_bytes(head_dim);
}

// The fused form's staged rows of the new tokens (after either kernel's other shared memory).
size_t staged_bytes(const AttentionArgs &a) {
    return a.k_new != nullptr ? size_t(a.tokens_per_seq) * a.head_dim * sizeof(bf16) : 0;
}

// Kernel 1: each (row, key) score of the block's range once; the range's softmax pair per row.
// Zeroes the merge counters of this call (after the wait: the previous call's values kernel is done).
// ROPE (the fused form): the queries rotated as they are loaded; the new tokens' rotated keys
// patched into the tiles of their positions and written to the key cache.
template <int ROWS, bool STORE, bool ROPE>
__global__ void __launch_bounds__(kThreads) attention_scores_kernel(AttentionArgs a) {
    constexpr int MT = m_tiles<ROWS>();
    extern __shared__ __align__(16) unsigned char shared[];
    __shared__ Rows<ROWS> rows;
    __shared__ float warp_max[ROWS][kWarps];
    __shared__ float warp_sum[ROWS][kWarps];
    pdl_enter();
    if (blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0) {
        const int32_t counters = int32_t(gridDim.x) * a.n_kv_heads;
        for (int32_t i = threadIdx.x; i < counters; i += kThreads) a.counters[i] = 0;
    }
    const Range range = locate(a, rows, true);
    if (int32_t(blockIdx.z) >= range.active) return;  // no keys at this length: the merges skip the split
    bf16 *q_h = reinterpret_cast<bf16 *>(shared);
    bf16 *k_s = q_h + 16 * MT * q_tile_stride(a.head_dim);
    const int stage = kTile * (a.head_dim + kPad);
    const int32_t kv_head = blockIdx.y;
    const int32_t tiles = (range.end - range.begin + kTile - 1) / kTile;
    bf16 *staged = k_s + kStages * stage;  // ROPE
    if (tiles > 0) load_tile(k_s, a.k_cache + rows.cache, a, kv_head, range.begin, min(kTile, range.end - range.begin));
    cp_async_commit();
    if (ROPE) {
        load_q_rotated(a, rows, range.rows, q_h);
        stage_new_rows<true>(a, rows, range, kv_head, staged);
    } else {
        load_q(a, rows, range.rows, q_h);
    }

    // This thread's rows and keys in each tile (the MMA's accumulator layout, tile_scores).
    const int lane = threadIdx.x % 32;
    const int warp = threadIdx.x / 32;
    const int g = lane / 4, t = lane % 4;
    float m[MT][2], l[MT][2];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
        m[mt][0] = m[mt][1] = -INFINITY;
        l[mt][0] = l[mt][1] = 0.0f;
    }
    for (int32_t tile = 0; tile < tiles; ++tile) {
        const int32_t first = range.begin + tile * kTile;
        if (tile + 1 < tiles) {
            load_tile(k_s + ((tile + 1) % kStages) * stage, a.k_cache + rows.cache, a, kv_head, first + kTile,
                      min(kTile, range.end - first - kTile));
        }
        cp_async_commit();
        cp_async_wait<1>();
        __syncthreads();
        if (ROPE && patch_tile(a, rows, kv_head, staged, k_s + (tile % kStages) * stage, first,
                               min(kTile, range.end - first), a.k_store)) {
            __syncthreads();
        }
        float d[MT][4];
        tile_scores<MT>(q_h, k_s + (tile % kStages) * stage, a.head_dim, d);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int r = score_row(mt, g, i);
                const int32_t j = first + score_key(warp, t, i);
                if (r < range.rows && j < range.end && j <= rows.pos[r]) {
                    const float s = to_score(d[mt][i], a.scale);
                    if (STORE) a.scores[int64_t(rows.id[r]) * a.max_positions + j] = __bfloat16_as_ushort(__float2bfloat16_rn(s));
                    softmax_add(m[mt][i / 2], l[mt][i / 2], s);
                }
            }
        }
        __syncthreads();  // the tile is free for the copy two tiles on
    }
    // Each row's pairs: the four lanes of a quad (same g) by a butterfly, the max then the sums
    // scaled to it (max and + commute: every lane of the quad ends with the same bits); then the
    // warps' pairs in warp order.
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float mi = m[mt][h];
            mi = fmaxf(mi, __shfl_xor_sync(kFullMask, mi, 1));
            mi = fmaxf(mi, __shfl_xor_sync(kFullMask, mi, 2));
            float li = l[mt][h] > 0.0f ? __fmul_rn(l[mt][h], expf(m[mt][h] - mi)) : 0.0f;  // (-inf, 0) adds 0
            li = __fadd_rn(li, __shfl_xor_sync(kFullMask, li, 1));
            li = __fadd_rn(li, __shfl_xor_sync(kFullMask, li, 2));
            const int r = 16 * mt + g + 8 * h;
            if (t == 0 && r < range.rows) {
                warp_max[r][warp] = mi;
                warp_sum[r][warp] = li;
            }
        }
    }
    __syncthreads();
    if (int32_t(threadIdx.x) < range.rows) {
        const int r = threadIdx.x;
        float mr = warp_max[r][0], lr = warp_sum[r][0];
#pragma unroll
        for (int w = 1; w < kWarps; ++w) softmax_merge(mr, lr, warp_max[r][w], warp_sum[r][w]);
        float *stats = a.stats + (int64_t(rows.id[r]) * a.splits + blockIdx.z) * 2;
        stats[0] = mr;
        stats[1] = lr;
    }
}

}  // namespace
}  // namespace ar4j_llama
