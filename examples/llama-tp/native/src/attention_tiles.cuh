// The decode attention's data layout and per-tile steps, shared by its two kernels (attention.cu):
// the block's query rows and key range, cp.async tiles of K or V in shared memory, the q . k dots
// of a tile on tensor cores, and the bf16 rounding points of scores and probabilities.
#pragma once

#include "mma.cuh"
#include "rope.cuh"

namespace ar4j_llama {
namespace {

constexpr int kThreads = 256;  // 8 warps: in kernel 1 warp w computes keys 8w .. 8w + 7 of each tile
constexpr int kRows = 32;      // query rows per block, at most (decode's few rows get a smaller block: see ROWS)
constexpr int kTile = 64;      // keys per shared-memory tile
constexpr int kStages = 2;     // tiles in flight per block (cp.async double buffering)
constexpr int kPad = 8;        // bf16 padding per tile row: 16-byte reads of 8 consecutive rows hit distinct banks
constexpr int kWarps = kThreads / 32;
static_assert(kWarps * 8 == kTile, "kernel 1: a warp's 8 keys of a tile (one MMA n-tile)");
// The 16-row MMA m-tiles of a block of ROWS query rows (4, 8, 16: one; kRows: two). The kernels are
// compiled per ROWS, so a decode step's block runs no code for rows it does not have.
template <int ROWS>
constexpr int m_tiles() { return (ROWS + 15) / 16; }
// Shared-memory rows of bf16 q (kernel 1, and kernel 2 when it computes the scores again): the
// m-tiles' rows, each head_dim + kPad wide (32-bit fragment loads of 8 rows in distinct banks);
// the rows past the block's are zero.
__host__ __device__ __forceinline__ int32_t q_tile_stride(int32_t head_dim) { return head_dim + kPad; }
// Kernel 2's probabilities, bf16 (each is a bf16 value), [m-tile rows][kTile + kPad].
constexpr int kProbabilityStride = kTile + kPad;
constexpr int kStoredTokens = AR4J_LLAMA_MAX_ATTENTION_STORED_TOKENS;
static_assert(AR4J_LLAMA_MAX_ROPE_ATTENTION_ROWS == kRows, "the fused form's rows: one block's");
constexpr unsigned int kFullMask = 0xffffffffu;
static_assert(kRows % 16 == 0 && kRows <= 32, "tile geometry: at most two m-tiles");

struct AttentionArgs {
    const bf16 *q;
    int64_t q_stride;
    const bf16 *k_cache;
    const bf16 *v_cache;
    int32_t n;
    int32_t tokens_per_seq;   // n / sequences: a sequence's run of consecutive tokens
    int32_t chunks_per_seq;   // ceil(tokens_per_seq * group / ROWS): blockIdx.x = seq * chunks_per_seq + chunk
    int64_t cache_stride;     // elements between consecutive sequences' K (and V) caches
    int32_t n_heads;
    int32_t n_kv_heads;
    int32_t group;       // n_heads / n_kv_heads
    int32_t head_dim;    // a multiple of 8
    int32_t block_rows;  // min(ROWS, tokens_per_seq * group): the shared-memory rows
    int32_t max_positions;
    const int32_t *positions;
    int32_t start_pos;
    float scale;
    bf16 *out;
    int64_t out_stride;
    int32_t splits;
    int32_t *counters;   // [sequences * chunks_per_seq][n_kv_heads]
    float *stats;        // [n * n_heads][splits][2]: max, sum of exp(s - max)
    float *partial;      // [n * n_heads][splits][head_dim] (splits > 1)
    uint16_t *scores;    // [n * n_heads][max_positions] bf16 bits (tokens_per_seq <= kStoredTokens)
    int32_t *device_status;
    // The fused rotary embedding and KV append (ar4j_llama_rope_attention_batched; k_new null
    // otherwise): q holds the queries before RoPE, k_new / v_new the new tokens' keys (before RoPE)
    // and values, which the kernels write into the caches (k_store / v_store: k_cache / v_cache).
    const bf16 *k_new;
    int64_t k_new_stride;
    const bf16 *v_new;
    int64_t v_new_stride;
    const float *inv_freq;
    float attention_scaling;
    bf16 *k_store;
    bf16 *v_store;
};

// The block's query rows (shared memory) and its key range.
template <int ROWS>
struct Rows {
    int32_t pos[ROWS];    // the row's token position, -1 when outside [0, max_positions)
    int32_t id[ROWS];     // t * n_heads + h: the row of out, stats, partial and scores
    int32_t token[ROWS];
    int32_t head[ROWS];
    int32_t range[3];
    // The block's sequence's offset in k_cache and v_cache (elements). Read from here at each tile
    // load (one shared load) rather than held in two registers across the tile loops, which made
    // the 16-row scores kernel (a verify's) spill more (ptxas -v, sm_90).
    int64_t cache;
};

struct Range {
    int32_t rows;
    int32_t begin;
    int32_t end;
    int32_t active;  // the splits with keys at this length (at least 1): the rest have empty ranges
};

__device__ __forceinline__ float bf16_low(uint32_t w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float bf16_high(uint32_t w) { return __uint_as_float(w & 0xffff0000u); }

// Fills the block's rows and range; every thread calls it (two barriers). Reads positions only.
// The block's rows are one chunk of one sequence's rows (blockIdx.x = seq * chunks_per_seq +
// chunk), never two sequences': the key range is cut from the chunk's own context length and
// every key is read from that sequence's cache. With one sequence this is the chunking of all
// n * group rows.
template <int ROWS>
__device__ Range locate(const AttentionArgs &a, Rows<ROWS> &rows, bool report_errors) {
    const int32_t seq = int32_t(blockIdx.x) / a.chunks_per_seq;
    // Rows counted within the sequence, in int32 (at most n * n_heads, which the host checked fits):
    // a 64-bit division by group here cost registers the tile loops then lacked.
    const int32_t first = (int32_t(blockIdx.x) - seq * a.chunks_per_seq) * ROWS;
    const int32_t total = a.tokens_per_seq * a.group;
    const int32_t count = total - first < ROWS ? total - first : ROWS;
    if (int32_t(threadIdx.x) < count) {
        const int32_t row = first + int32_t(threadIdx.x);
        const int32_t t = seq * a.tokens_per_seq + row / a.group;
        const int32_t g = row % a.group;
        const int32_t h = int32_t(blockIdx.y) * a.group + g;
        const int32_t pos = a.positions != nullptr ? __ldcg(a.positions + t) : a.start_pos + t;
        const bool valid = pos >= 0 && pos < a.max_positions;
        if (!valid && report_errors && g == 0 && blockIdx.y == 0 && blockIdx.z == 0) {
            report(a.device_status, AR4J_LLAMA_ERROR_POSITION);
        }
        rows.pos[threadIdx.x] = valid ? pos : -1;
        rows.id[threadIdx.x] = t * a.n_heads + h;
        rows.token[threadIdx.x] = t;
        rows.head[threadIdx.x] = h;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        int32_t last = -1;
        for (int r = 0; r < count; ++r) last = rows.pos[r] > last ? rows.pos[r] : last;
        const int64_t length = int64_t(last) + 1;
        // Whole tiles of keys per split (a tile with one key costs a full one): at a short length
        // the first splits take the keys and the rest have none (the merges read only the first
        // `active`).
        const int64_t keys_per_split = (length + a.splits - 1) / a.splits;
        const int64_t chunk = (keys_per_split + kTile - 1) / kTile * kTile;
        const int64_t active = (length + chunk - 1) / chunk;
        const int64_t begin = int64_t(blockIdx.z) * chunk < length ? int64_t(blockIdx.z) * chunk : length;
        const int64_t end = begin + chunk < length ? begin + chunk : length;
        rows.range[0] = int32_t(begin);
        rows.range[1] = int32_t(end);
        rows.range[2] = int32_t(active > 1 ? active : 1);
        rows.cache = int64_t(seq) * a.cache_stride;
    }
    __syncthreads();
    return Range{count, rows.range[0], rows.range[1], rows.range[2]};
}

// Zeroes q_h's rows count .. 16 * m_tiles<ROWS>() - 1 (the m-tiles' rows past the block's).
template <int ROWS>
__device__ __forceinline__ void zero_q_rows(const AttentionArgs &a, int32_t count, bf16 *q_h) {
    const int stride = q_tile_stride(a.head_dim);
    const int total = (16 * m_tiles<ROWS>() - count) * stride;
    for (int i = threadIdx.x; i < total; i += kThreads) q_h[count * stride + i] = __float2bfloat16_rn(0.0f);
}

// q_h[r][e] = q of row r (bf16), 16-byte loads through L2 (q is the preceding grid's output).
template <int ROWS>
__device__ __forceinline__ void load_q(const AttentionArgs &a, const Rows<ROWS> &rows, int32_t count, bf16 *q_h) {
    const int units = a.head_dim / 8;
    const int stride = q_tile_stride(a.head_dim);
    for (int i = threadIdx.x; i < count * units; i += kThreads) {
        const int r = i / units;
        const int u = i - r * units;
        const uint4 raw = __ldcg(reinterpret_cast<const uint4 *>(a.q + int64_t(rows.token[r]) * a.q_stride +
                                                                 int64_t(rows.head[r]) * a.head_dim) + u);
        *reinterpret_cast<uint4 *>(q_h + r * stride + u * 8) = raw;
    }
    zero_q_rows<ROWS>(a, count, q_h);
}

__device__ __forceinline__ float load_bf16_cg(const bf16 *p) {
    return __uint_as_float(uint32_t(__ldcg(reinterpret_cast<const unsigned short *>(p))) << 16);
}

// The fused form's q_h: each row's query rotated for its position, the bf16 values
// ar4j_llama_rope_kv_append would leave in q (a row at no valid position: its query as it is).
template <int ROWS>
__device__ __forceinline__ void load_q_rotated(const AttentionArgs &a, const Rows<ROWS> &rows, int32_t count,
                                               bf16 *q_h) {
    const int half = a.head_dim / 2;
    const int stride = q_tile_stride(a.head_dim);
    for (int i = threadIdx.x; i < count * half; i += kThreads) {
        const int r = i / half;
        const int e = i - r * half;
        const bf16 *src = a.q + int64_t(rows.token[r]) * a.q_stride + int64_t(rows.head[r]) * a.head_dim;
        float2 x = make_float2(load_bf16_cg(src + e), load_bf16_cg(src + e + half));
        if (rows.pos[r] >= 0) x = rotated(x.x, x.y, rope_cos_sin(a.inv_freq, a.attention_scaling, rows.pos[r], e));
        q_h[r * stride + e] = __float2bfloat16_rn(x.x);  // exact: x holds bf16 values
        q_h[r * stride + e + half] = __float2bfloat16_rn(x.y);
    }
    zero_q_rows<ROWS>(a, count, q_h);
}

// The fused form: the block's sequence's new tokens (slot u: the token of rows u * group, one
// chunk holding all of them) whose positions fall in the block's key range; their rows of the
// block's KV head staged in shared memory, head_dim bf16 a slot: the rotated keys (KEYS, kernel
// 1) or the values (kernel 2). Reads only the new tokens' keys and values (the QKV product's
// output, complete before either kernel reads it).
template <bool KEYS, int ROWS>
__device__ __forceinline__ void stage_new_rows(const AttentionArgs &a, const Rows<ROWS> &rows, const Range &range,
                                               int32_t kv_head, bf16 *staged) {
    const int half = a.head_dim / 2;
    for (int i = threadIdx.x; i < a.tokens_per_seq * half; i += kThreads) {
        const int u = i / half;
        const int e = i - u * half;
        const int32_t pos = rows.pos[u * a.group];
        if (pos < range.begin || pos >= range.end) continue;  // another split's key (or no valid position)
        const int64_t t = rows.token[u * a.group];
        float2 x;
        if (KEYS) {
            const bf16 *src = a.k_new + t * a.k_new_stride + int64_t(kv_head) * a.head_dim;
            x = rotated(load_bf16_cg(src + e), load_bf16_cg(src + e + half),
                        rope_cos_sin(a.inv_freq, a.attention_scaling, pos, e));
        } else {
            const bf16 *src = a.v_new + t * a.v_new_stride + int64_t(kv_head) * a.head_dim;
            x = make_float2(load_bf16_cg(src + e), load_bf16_cg(src + e + half));
        }
        staged[u * a.head_dim + e] = __float2bfloat16_rn(x.x);
        staged[u * a.head_dim + e + half] = __float2bfloat16_rn(x.y);
    }
}

// The fused form, once a tile of keys first .. first + count - 1 has landed in shared memory: the
// staged rows at positions in the tile replace what the copy brought (the cache rows they are
// about to become) and are written to the sequence's cache (`store`: k_store or v_store), the
// only write of those rows. Returns whether any row did (the same in every thread: the caller
// then waits at a barrier before reading the tile).
template <int ROWS>
__device__ __forceinline__ bool patch_tile(const AttentionArgs &a, const Rows<ROWS> &rows, int32_t kv_head,
                                           const bf16 *staged, bf16 *tile, int32_t first, int32_t count,
                                           bf16 *store) {
    bool any = false;
    for (int u = 0; u < a.tokens_per_seq; ++u) {
        const int32_t pos = rows.pos[u * a.group];
        any |= pos >= first && pos < first + count;
    }
    if (!any) return false;
    const int units = a.head_dim / 8;
    for (int i = threadIdx.x; i < a.tokens_per_seq * units; i += kThreads) {
        const int u = i / units;
        const int c = i - u * units;
        const int32_t pos = rows.pos[u * a.group];
        if (pos < first || pos >= first + count) continue;
        const uint4 x = *reinterpret_cast<const uint4 *>(staged + u * a.head_dim + c * 8);
        *reinterpret_cast<uint4 *>(tile + (pos - first) * (a.head_dim + kPad) + c * 8) = x;
        *reinterpret_cast<uint4 *>(store + rows.cache + (int64_t(pos) * a.n_kv_heads + kv_head) * a.head_dim + c * 8) = x;
    }
    return true;
}

// Starts the copy of `count` cache rows (keys first .. first + count - 1 of kv_head) into a tile;
// the tile's rows past them are zero-filled without a read (the MMAs read whole tiles: a zero
// value row times a zero probability adds 0, where stale shared memory could hold a NaN).
__device__ __forceinline__ void load_tile(bf16 *tile, const bf16 *cache, const AttentionArgs &a, int32_t kv_head,
                                          int32_t first, int32_t count) {
    const int units = a.head_dim / 8;
    const int stride = a.head_dim + kPad;
    for (int i = threadIdx.x; i < kTile * units; i += kThreads) {
        const int key = i / units;
        const int u = i - key * units;
        const bool in = key < count;
        cp_async16_or_zero(tile + key * stride + u * 8,
                           cache + (int64_t(in ? first + key : first) * a.n_kv_heads + kv_head) * a.head_dim + u * 8,
                           in);
    }
}

// Where tile_scores puts accumulator element i of m-tile mt for lane (g, t) of warp w: its row
// among the block's rows and its key in the tile (the layout described below).
__device__ __forceinline__ int score_row(int mt, int g, int i) { return 16 * mt + g + 8 * (i / 2); }
__device__ __forceinline__ int score_key(int warp, int t, int i) { return warp * 8 + 2 * t + i % 2; }

// The scores' dots of one tile on tensor cores: warp w takes keys 8w .. 8w + 7 (an n-tile) of
// every m-tile of q_h. With g = lane / 4, t = lane % 4: d[mt][0], d[mt][1] = q(row 16 mt + g) .
// k(keys 8w + 2t, 8w + 2t + 1); d[mt][2], d[mt][3] the same for row 16 mt + g + 8. bf16 products
// summed in fp32 by the MMA, 16 elements a step, the steps in element order; a head_dim of 8 mod 16
// adds its last 8 elements by fma in element order. A fixed sequence of operations: the same
// inputs give the same bits in both kernels.
template <int MT>
__device__ __forceinline__ void tile_scores(const bf16 *q_h, const bf16 *tile, int32_t head_dim, float (&d)[MT][4]) {
    const int lane = threadIdx.x % 32;
    const int g = lane / 4, t = lane % 4;
    const int stride = head_dim + kPad;  // q_tile_stride and the tiles' row stride
    const bf16 *k_row = tile + (threadIdx.x / 32 * 8 + g) * stride + 2 * t;
    const bf16 *q_row = q_h + g * stride + 2 * t;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) d[mt][0] = d[mt][1] = d[mt][2] = d[mt][3] = 0.0f;
    const int full = head_dim & ~15;
#pragma unroll 4
    for (int e = 0; e < full; e += 16) {
        const uint32_t b0 = *reinterpret_cast<const uint32_t *>(k_row + e);
        const uint32_t b1 = *reinterpret_cast<const uint32_t *>(k_row + e + 8);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
            const bf16 *q0 = q_row + 16 * mt * stride + e;
            const uint32_t a[4] = {*reinterpret_cast<const uint32_t *>(q0),
                                   *reinterpret_cast<const uint32_t *>(q0 + 8 * stride),
                                   *reinterpret_cast<const uint32_t *>(q0 + 8),
                                   *reinterpret_cast<const uint32_t *>(q0 + 8 * stride + 8)};
            mma_bf16(d[mt], a, b0, b1);
        }
    }
    if (full < head_dim) {  // the last 8 elements
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const bf16 *q = q_h + (16 * mt + g + 8 * (i / 2)) * stride;
                const bf16 *k = tile + (threadIdx.x / 32 * 8 + 2 * t + i % 2) * stride;
                float x = d[mt][i];
                for (int e = full; e < head_dim; ++e) x = __fmaf_rn(__bfloat162float(q[e]), __bfloat162float(k[e]), x);
                d[mt][i] = x;
            }
        }
    }
}

// s = bf16(bf16(dot) * scale): explicit roundings, the same bits in both kernels.
__device__ __forceinline__ float to_score(float dot, float scale) { return round_bf16(__fmul_rn(round_bf16(dot), scale)); }

// p = bf16(exp(s - max) / sum).
__device__ __forceinline__ float to_probability(float s, float max, float sum) {
    return round_bf16(__fdiv_rn(expf(s - max), sum));
}

}  // namespace
}  // namespace ar4j_llama
