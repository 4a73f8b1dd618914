// Causal grouped-query attention over a KV cache, in bounded memory, with the rounding points of
// transformers' eager_attention_forward in bf16 (see kernels.h).
//
// FlashDecoding-style split-KV in two kernels over one grid (chunks, n_kv_heads, splits):
// a block serves one KV head, one key range (split) and up to ROWS query rows: the (token,
// query head) pairs of that KV head's group within one sequence, numbered t * group + g
// (t counted within the sequence) and cut into chunks of ROWS, each sequence's separately
// (ROWS = 4, 8, 16 or kRows = 32, the least that holds a sequence's rows, else kRows: decode of
// llama3-8b is one chunk of 4 rows per sequence; a verify of 4 tokens one of 16; a long prefill
// many chunks of 32). A batch of sequences (n / sequences consecutive tokens each, each with its
// own cache) is so the grid of one sequence repeated: chunk c of sequence s is block
// s * chunks_per_seq + c, and a block never mixes two sequences' rows, caches or lengths.
// The split's range is cut from the chunk's real context length L = max pos(t) + 1, read from
// device memory, so a captured graph serves every length with ~L / splits keys per block.
//   1. scores: the K rows of the range, in tiles of kTile keys copied to shared memory with
//      16-byte cp.async (double-buffered), each row read once for all the block's query rows,
//      the dots of a tile on tensor cores (mma.sync m16n8k16: bf16 q and k, fp32 sums);
//      s = bf16(bf16(q.k) * scale) for every (row, key) it may attend to, stored in the
//      workspace as bf16 (exact: they are bf16 values) when a sequence has at most
//      kStoredTokens tokens, and each row's (max, sum of exp(s - max)) over the range (online
//      softmax, merged in a fixed order).
//   2. values: the global max and sum of each row from all splits' pairs (split order), then
//      p = bf16(exp(s - max) / sum) per key (the stored s; above kStoredTokens tokens, s
//      computed again from K) and sum_j p_j v_j over the range from V tiles in shared memory
//      (each V row read once), on tensor cores (p and v are bf16 values: exact products, fp32 sums). A split with no keys at the length (the splits past `active`)
//      returns at once in both kernels. One active split writes out directly; with several, each
//      writes its fp32 partial sums, and the last of them to finish (a counter per (chunk, KV
//      head), zeroed by kernel 1 of the same call) adds the partials in split order and writes
//      bf16 out.
// Every sum has a fixed order (the MMA's over 16 elements or keys, its steps in order; a split's
// keys in key order per thread, then a fixed butterfly and the warps in order; the splits in split
// order): same inputs and splits, same bits.
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
                const int r = 16 * mt + g + 8 * (i / 2);
                const int32_t j = first + warp * 8 + 2 * t + i % 2;
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
                    const int r = 16 * mt + g + 8 * (i / 2);
                    const int key = warp * 8 + 2 * t + i % 2;
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

template <int ROWS, bool STORED, bool ROPE>
int launch_attention(const AttentionArgs &a, dim3 grid, bool pdl, void *stream) {
    constexpr int MT = m_tiles<ROWS>();
    const size_t scores_bytes = scores_shared_bytes(MT, a.head_dim) + staged_bytes(a);
    const size_t values_bytes = values_shared_bytes(MT, a.head_dim, STORED) + staged_bytes(a);
    int error = allow_shared(attention_scores_kernel<ROWS, STORED, ROPE>, scores_bytes);
    if (error == 0) error = allow_shared(attention_values_kernel<ROWS, STORED, ROPE>, values_bytes);
    if (error != 0) return error;
    error = launch(attention_scores_kernel<ROWS, STORED, ROPE>, grid, dim3(kThreads), scores_bytes, stream, pdl, a);
    if (error != 0) return error;
    return launch(attention_values_kernel<ROWS, STORED, ROPE>, grid, dim3(kThreads), values_bytes, stream, pdl, a);
}

template <int ROWS>
int dispatch_rows(const AttentionArgs &a, dim3 grid, bool stored, bool pdl, void *stream) {
    if (!stored) {
        // Only a call of more than kStoredTokens tokens per sequence recomputes scores: its blocks
        // have kRows rows (block_rows_for).
        if constexpr (ROWS == kRows) return launch_attention<ROWS, false, false>(a, grid, pdl, stream);
        return AR4J_LLAMA_ERROR_INVALID_ARGUMENT;
    }
    if (a.k_new != nullptr) return launch_attention<ROWS, true, true>(a, grid, pdl, stream);
    return launch_attention<ROWS, true, false>(a, grid, pdl, stream);
}

// The block's rows: the least of 4, 8, 16 and kRows that holds all rows of one sequence
// (tokens_per_seq * group), else kRows; kRows when the scores are not stored (more than
// kStoredTokens tokens per sequence: a prefill's rows).
int32_t block_rows_for(int64_t rows_per_seq, bool stored) {
    if (!stored) return kRows;
    return rows_per_seq <= 4 ? 4 : rows_per_seq <= 8 ? 8 : rows_per_seq <= 16 ? 16 : kRows;
}

// How n tokens of `sequences` sequences are cut into blocks' rows. Callers have checked n >= 1,
// 1 <= sequences, n % sequences == 0 and group >= 1.
struct Chunking {
    int32_t tokens_per_seq;
    int64_t rows_per_seq;    // tokens_per_seq * group
    bool stored;             // the scores kept in the workspace (tokens_per_seq <= kStoredTokens)
    int32_t rows_per_block;  // ROWS
    int64_t chunks_per_seq;
    int64_t chunks;          // sequences * chunks_per_seq: grid.x
};

Chunking chunking(int32_t n, int32_t sequences, int32_t group) {
    Chunking c;
    c.tokens_per_seq = n / sequences;
    c.rows_per_seq = int64_t(c.tokens_per_seq) * group;
    // Per sequence, not per call: a batch of decodes keeps the K-read-once path of one decode. The
    // stored scores, n * n_heads * max_positions bf16, are then at most 4 * group / head_dim of one
    // layer's caches of the batch (1/8 for llama3-8b's verify of 8 tokens per sequence).
    c.stored = c.tokens_per_seq <= kStoredTokens;
    c.rows_per_block = block_rows_for(c.rows_per_seq, c.stored);
    c.chunks_per_seq = (c.rows_per_seq + c.rows_per_block - 1) / c.rows_per_block;
    c.chunks = int64_t(sequences) * c.chunks_per_seq;
    return c;
}

// The workspace: counters, stats, partial sums (splits > 1), scores (stored); each part 256-byte
// aligned.
struct Workspace {
    size_t counters, stats, partial, scores, total;
};

size_t align256(size_t x) { return (x + 255) / 256 * 256; }

Workspace workspace_layout(int32_t n, int32_t sequences, int32_t n_heads, int32_t n_kv_heads, int32_t head_dim,
                           int32_t max_positions, int32_t splits) {
    const size_t rows = size_t(n) * size_t(n_heads);
    const Chunking c = chunking(n, sequences, n_heads / n_kv_heads);
    Workspace w;
    w.counters = 0;
    w.stats = align256(size_t(c.chunks) * size_t(n_kv_heads) * sizeof(int32_t));
    w.partial = w.stats + align256(rows * size_t(splits) * 2 * sizeof(float));
    w.scores = w.partial + (splits > 1 ? align256(rows * size_t(splits) * size_t(head_dim) * sizeof(float)) : 0);
    w.total = w.scores + (c.stored ? rows * size_t(max_positions) * sizeof(uint16_t) : 0);
    return w;
}

bool valid_attention_head_dim(int32_t head_dim) {
    return head_dim >= 8 && head_dim <= AR4J_LLAMA_MAX_HEAD_DIM && head_dim % 8 == 0;
}

// Whether n tokens split into `sequences` equal runs.
bool valid_sequences(int32_t n, int32_t sequences) { return sequences >= 1 && n >= 1 && n % sequences == 0; }

}  // namespace
}  // namespace ar4j_llama

using namespace ar4j_llama;

AR4J_LLAMA_API int32_t ar4j_llama_attention_batched_splits(int32_t n, int32_t sequences, int32_t n_heads,
                                                           int32_t n_kv_heads, int32_t max_context,
                                                           int32_t sm_count) {
    if (n <= 0 || n_heads <= 0 || n_kv_heads <= 0 || n_heads % n_kv_heads != 0 || max_context <= 0 ||
        sm_count <= 0 || !valid_sequences(n, sequences)) {
        return 1;
    }
    // Blocks per split: one per (chunk of one sequence's query rows, KV head), the chunks of the
    // kernels' own cut. About four blocks per SM, and at most one split per tile of keys at the
    // longest context, its last partial tile counted, so that no split gets a second tile for one
    // key (at a shorter length the kernels use only the splits that get a tile's worth of keys).
    // With one sequence the chunks are ceil(n * group / kRows): the ladder's smaller blocks only
    // serve calls that fit one chunk anyway.
    const int64_t blocks = chunking(n, sequences, n_heads / n_kv_heads).chunks * n_kv_heads;
    int64_t splits = (4 * int64_t(sm_count) + blocks - 1) / blocks;
    const int64_t by_length = (int64_t(max_context) + kTile - 1) / kTile;
    if (splits > by_length) splits = by_length;
    if (splits > AR4J_LLAMA_MAX_SPLITS) splits = AR4J_LLAMA_MAX_SPLITS;
    return splits < 1 ? 1 : int32_t(splits);
}

AR4J_LLAMA_API int32_t ar4j_llama_attention_splits(int32_t n, int32_t n_heads, int32_t n_kv_heads,
                                                   int32_t max_context, int32_t sm_count) {
    return ar4j_llama_attention_batched_splits(n, 1, n_heads, n_kv_heads, max_context, sm_count);
}

AR4J_LLAMA_API size_t ar4j_llama_attention_batched_workspace_bytes(int32_t n, int32_t sequences, int32_t n_heads,
                                                                   int32_t n_kv_heads, int32_t head_dim,
                                                                   int32_t max_positions, int32_t num_splits) {
    if (n < 1 || n_heads < 1 || n_kv_heads < 1 || n_heads % n_kv_heads != 0 ||
        int64_t(n) * n_heads > int64_t(INT32_MAX) || !valid_attention_head_dim(head_dim) || max_positions < 1 ||
        num_splits < 1 || num_splits > AR4J_LLAMA_MAX_SPLITS || !valid_sequences(n, sequences)) {
        return 0;
    }
    return workspace_layout(n, sequences, n_heads, n_kv_heads, head_dim, max_positions, num_splits).total;
}

AR4J_LLAMA_API size_t ar4j_llama_attention_workspace_bytes(int32_t n, int32_t n_heads, int32_t n_kv_heads,
                                                           int32_t head_dim, int32_t max_positions,
                                                           int32_t num_splits) {
    return ar4j_llama_attention_batched_workspace_bytes(n, 1, n_heads, n_kv_heads, head_dim, max_positions, num_splits);
}

namespace ar4j_llama {
namespace {

// ar4j_llama_attention_batched's checks, in its order, and its arguments for the kernels; 0 or
// the status to return.
int prepare_attention(AttentionArgs &a, Chunking &c, const void *q, int64_t q_row_stride, const void *k_cache,
                      const void *v_cache, int64_t cache_sequence_stride, int32_t n, int32_t sequences,
                      int32_t n_heads, int32_t n_kv_heads, int32_t head_dim, int32_t max_positions,
                      const int32_t *positions, int32_t start_pos, float scale, void *out, int64_t out_row_stride,
                      int32_t num_splits, void *workspace, size_t workspace_bytes, int32_t *device_status) {
    if (q == nullptr || k_cache == nullptr || v_cache == nullptr || out == nullptr || workspace == nullptr) {
        return AR4J_LLAMA_ERROR_NULL_POINTER;
    }
    if (n < 1 || n_heads < 1 || n_kv_heads < 1 || max_positions < 1 ||
        int64_t(n) * n_heads > int64_t(INT32_MAX) || !valid_sequences(n, sequences)) {
        return AR4J_LLAMA_ERROR_SIZE;
    }
    // start_pos + t counts across the whole call: it cannot name positions within each sequence.
    if (sequences > 1 && positions == nullptr) return AR4J_LLAMA_ERROR_NULL_POINTER;
    if (n_heads % n_kv_heads != 0) return AR4J_LLAMA_ERROR_GQA;
    if (!valid_attention_head_dim(head_dim)) return AR4J_LLAMA_ERROR_HEAD_DIM;
    if (num_splits < 1 || num_splits > AR4J_LLAMA_MAX_SPLITS) return AR4J_LLAMA_ERROR_SPLITS;
    const int64_t row = int64_t(n_heads) * head_dim;
    // Each sequence's cache holds max_positions rows: a smaller stride would let sequences overlap.
    const int64_t cache_region = int64_t(max_positions) * n_kv_heads * head_dim;
    if (q_row_stride < row || out_row_stride < row || cache_sequence_stride < cache_region) {
        return AR4J_LLAMA_ERROR_STRIDE;
    }
    if (!(scale > 0.0f) || !std::isfinite(scale)) return AR4J_LLAMA_ERROR_INVALID_ARGUMENT;
    if (!valid_start(positions, start_pos, n, max_positions)) return AR4J_LLAMA_ERROR_POSITION;
    // q and the caches are read in 16-byte units (8 bf16), every sequence's cache too; out written
    // in bf16 pairs.
    if (!aligned(q, 16) || !aligned(k_cache, 16) || !aligned(v_cache, 16) || q_row_stride % 8 != 0 ||
        cache_sequence_stride % 8 != 0 || !aligned(out, 4) || out_row_stride % 2 != 0 || !aligned(workspace, 16) ||
        (positions != nullptr && !aligned(positions, 4))) {
        return AR4J_LLAMA_ERROR_MISALIGNED;
    }
    const Workspace layout = workspace_layout(n, sequences, n_heads, n_kv_heads, head_dim, max_positions, num_splits);
    if (workspace_bytes < layout.total) return AR4J_LLAMA_ERROR_WORKSPACE;
    a = AttentionArgs{};
    a.q = static_cast<const bf16 *>(q);
    a.q_stride = q_row_stride;
    a.k_cache = static_cast<const bf16 *>(k_cache);
    a.v_cache = static_cast<const bf16 *>(v_cache);
    a.n = n;
    a.n_heads = n_heads;
    a.n_kv_heads = n_kv_heads;
    a.group = n_heads / n_kv_heads;
    a.head_dim = head_dim;
    c = chunking(n, sequences, a.group);
    a.tokens_per_seq = c.tokens_per_seq;
    a.chunks_per_seq = int32_t(c.chunks_per_seq);
    a.cache_stride = cache_sequence_stride;
    a.block_rows = int32_t(c.rows_per_seq < c.rows_per_block ? c.rows_per_seq : c.rows_per_block);
    a.max_positions = max_positions;
    a.positions = positions;
    a.start_pos = start_pos;
    a.scale = scale;
    a.out = static_cast<bf16 *>(out);
    a.out_stride = out_row_stride;
    a.splits = num_splits;
    char *base = static_cast<char *>(workspace);
    a.counters = reinterpret_cast<int32_t *>(base + layout.counters);
    a.stats = reinterpret_cast<float *>(base + layout.stats);
    a.partial = num_splits > 1 ? reinterpret_cast<float *>(base + layout.partial) : nullptr;
    a.scores = c.stored ? reinterpret_cast<uint16_t *>(base + layout.scores) : nullptr;
    a.device_status = device_status;
    return 0;
}

int dispatch_attention(const AttentionArgs &a, const Chunking &c, int32_t pdl, void *stream) {
    const dim3 grid{unsigned(c.chunks), unsigned(a.n_kv_heads), unsigned(a.splits)};
    const bool use_pdl = pdl != 0;
    if (c.rows_per_block == 4) return dispatch_rows<4>(a, grid, c.stored, use_pdl, stream);
    if (c.rows_per_block == 8) return dispatch_rows<8>(a, grid, c.stored, use_pdl, stream);
    if (c.rows_per_block == 16) return dispatch_rows<16>(a, grid, c.stored, use_pdl, stream);
    return dispatch_rows<kRows>(a, grid, c.stored, use_pdl, stream);
}

}  // namespace
}  // namespace ar4j_llama

AR4J_LLAMA_API int ar4j_llama_attention_batched(const void *q, int64_t q_row_stride, const void *k_cache,
                                                const void *v_cache, int64_t cache_sequence_stride, int32_t n,
                                                int32_t sequences, int32_t n_heads, int32_t n_kv_heads,
                                                int32_t head_dim, int32_t max_positions, const int32_t *positions,
                                                int32_t start_pos, float scale, void *out, int64_t out_row_stride,
                                                int32_t num_splits, void *workspace, size_t workspace_bytes,
                                                int32_t *device_status, int32_t pdl, void *stream) {
    AttentionArgs a;
    Chunking c;
    const int error = prepare_attention(a, c, q, q_row_stride, k_cache, v_cache, cache_sequence_stride, n, sequences,
                                        n_heads, n_kv_heads, head_dim, max_positions, positions, start_pos, scale, out,
                                        out_row_stride, num_splits, workspace, workspace_bytes, device_status);
    return error != 0 ? error : dispatch_attention(a, c, pdl, stream);
}

AR4J_LLAMA_API int ar4j_llama_rope_attention_batched(const void *q, int64_t q_row_stride, const void *k,
                                                     int64_t k_row_stride, const void *v, int64_t v_row_stride,
                                                     const float *inv_freq, float attention_scaling, void *k_cache,
                                                     void *v_cache, int64_t cache_sequence_stride, int32_t n,
                                                     int32_t sequences, int32_t n_heads, int32_t n_kv_heads,
                                                     int32_t head_dim, int32_t max_positions, const int32_t *positions,
                                                     int32_t start_pos, float scale, void *out, int64_t out_row_stride,
                                                     int32_t num_splits, void *workspace, size_t workspace_bytes,
                                                     int32_t *device_status, int32_t pdl, void *stream) {
    if (k == nullptr || v == nullptr || inv_freq == nullptr) return AR4J_LLAMA_ERROR_NULL_POINTER;
    AttentionArgs a;
    Chunking c;
    const int error = prepare_attention(a, c, q, q_row_stride, k_cache, v_cache, cache_sequence_stride, n, sequences,
                                        n_heads, n_kv_heads, head_dim, max_positions, positions, start_pos, scale, out,
                                        out_row_stride, num_splits, workspace, workspace_bytes, device_status);
    if (error != 0) return error;
    // One block's rows hold all of a sequence's tokens (their new keys are then each in exactly one
    // block's range) and the scores are kept.
    if (!c.stored || c.chunks_per_seq != 1) return AR4J_LLAMA_ERROR_SIZE;
    const int64_t kv_row = int64_t(n_kv_heads) * head_dim;
    if (k_row_stride < kv_row || v_row_stride < kv_row) return AR4J_LLAMA_ERROR_STRIDE;
    if (!std::isfinite(attention_scaling)) return AR4J_LLAMA_ERROR_INVALID_ARGUMENT;
    if (!aligned(k, 2) || !aligned(v, 2) || !aligned(inv_freq, 4)) return AR4J_LLAMA_ERROR_MISALIGNED;
    a.k_new = static_cast<const bf16 *>(k);
    a.k_new_stride = k_row_stride;
    a.v_new = static_cast<const bf16 *>(v);
    a.v_new_stride = v_row_stride;
    a.inv_freq = inv_freq;
    a.attention_scaling = attention_scaling;
    a.k_store = static_cast<bf16 *>(k_cache);
    a.v_store = static_cast<bf16 *>(v_cache);
    return dispatch_attention(a, c, pdl, stream);
}

AR4J_LLAMA_API int ar4j_llama_attention(const void *q, int64_t q_row_stride, const void *k_cache,
                                        const void *v_cache, int32_t n, int32_t n_heads,
                                        int32_t n_kv_heads, int32_t head_dim, int32_t max_positions,
                                        const int32_t *positions, int32_t start_pos, float scale,
                                        void *out, int64_t out_row_stride, int32_t num_splits,
                                        void *workspace, size_t workspace_bytes,
                                        int32_t *device_status, int32_t pdl, void *stream) {
    // One sequence: its cache is the whole of k_cache / v_cache, and the stride is never applied
    // (sequence 0); the cache's own size passes the batched function's stride check.
    const int64_t cache_region = int64_t(max_positions) * n_kv_heads * head_dim;
    return ar4j_llama_attention_batched(q, q_row_stride, k_cache, v_cache, cache_region, n, 1, n_heads, n_kv_heads,
                                        head_dim, max_positions, positions, start_pos, scale, out, out_row_stride,
                                        num_splits, workspace, workspace_bytes, device_status, pdl, stream);
}
