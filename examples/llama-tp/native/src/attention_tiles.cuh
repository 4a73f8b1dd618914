// The decode attention's data layout and per-tile steps, shared by its two kernels (attention.cu):
// the block's query rows and key range, cp.async tiles of K or V in shared memory, the q . k dots
// of a tile, and the bf16 rounding points of scores and probabilities.
#pragma once

#include "rope.cuh"

namespace ar4j_llama {
namespace {

constexpr int kThreads = 256;  // 4 key groups of 64 keys: a thread holds a quarter of the block's rows
constexpr int kRows = 32;      // query rows per block, at most (decode's few rows get a smaller block: see ROWS)
constexpr int kTile = 64;      // keys per shared-memory tile
constexpr int kStages = 2;     // tiles in flight per block (cp.async double buffering)
constexpr int kPad = 8;        // bf16 padding per tile row: 16-byte reads of 8 consecutive rows hit distinct banks
constexpr int kKeyGroups = kThreads / kTile;                // kernel 1: threads per key
// Kernel 1's query rows per thread in a block of ROWS rows. The kernels are compiled for ROWS = 4,
// 8, 16 and kRows: a decode step's block (one token's group of query heads) then runs code with no
// row it skips. Skipped, fully unrolled row bodies are jumps across code that each miss the
// instruction cache: with ROWS = kRows such misses made most of a decode block's ~10 us.
template <int ROWS>
constexpr int score_rows() { return ROWS / kKeyGroups; }
constexpr int kStoredTokens = AR4J_LLAMA_MAX_ATTENTION_STORED_TOKENS;
static_assert(AR4J_LLAMA_MAX_ROPE_ATTENTION_ROWS == kRows, "the fused form's rows: one block's");
constexpr unsigned int kFullMask = 0xffffffffu;
static_assert(kThreads % kTile == 0 && kRows % kKeyGroups == 0 && 4 % kKeyGroups == 0, "tile geometry");

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

// q_s[r][e] = fp32(q of row r), 16-byte loads through L2 (q is the preceding grid's output).
template <int ROWS>
__device__ __forceinline__ void load_q(const AttentionArgs &a, const Rows<ROWS> &rows, int32_t count, float *q_s) {
    const int units = a.head_dim / 8;
    for (int i = threadIdx.x; i < count * units; i += kThreads) {
        const int r = i / units;
        const int u = i - r * units;
        const uint4 raw = __ldcg(reinterpret_cast<const uint4 *>(a.q + int64_t(rows.token[r]) * a.q_stride +
                                                                 int64_t(rows.head[r]) * a.head_dim) + u);
        float4 *dst = reinterpret_cast<float4 *>(q_s + r * a.head_dim + u * 8);
        dst[0] = make_float4(bf16_low(raw.x), bf16_high(raw.x), bf16_low(raw.y), bf16_high(raw.y));
        dst[1] = make_float4(bf16_low(raw.z), bf16_high(raw.z), bf16_low(raw.w), bf16_high(raw.w));
    }
}

__device__ __forceinline__ float load_bf16_cg(const bf16 *p) {
    return __uint_as_float(uint32_t(__ldcg(reinterpret_cast<const unsigned short *>(p))) << 16);
}

// The fused form's q_s: each row's query rotated for its position, the fp32 of the bf16 values
// ar4j_llama_rope_kv_append would leave in q (a row at no valid position: its query as it is).
template <int ROWS>
__device__ __forceinline__ void load_q_rotated(const AttentionArgs &a, const Rows<ROWS> &rows, int32_t count,
                                               float *q_s) {
    const int half = a.head_dim / 2;
    for (int i = threadIdx.x; i < count * half; i += kThreads) {
        const int r = i / half;
        const int e = i - r * half;
        const bf16 *src = a.q + int64_t(rows.token[r]) * a.q_stride + int64_t(rows.head[r]) * a.head_dim;
        float2 x = make_float2(load_bf16_cg(src + e), load_bf16_cg(src + e + half));
        if (rows.pos[r] >= 0) x = rotated(x.x, x.y, rope_cos_sin(a.inv_freq, a.attention_scaling, rows.pos[r], e));
        q_s[r * a.head_dim + e] = x.x;
        q_s[r * a.head_dim + e + half] = x.y;
    }
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

// Starts the copy of `count` cache rows (keys first .. first + count - 1 of kv_head) into a tile.
__device__ __forceinline__ void load_tile(bf16 *tile, const bf16 *cache, const AttentionArgs &a, int32_t kv_head,
                                          int32_t first, int32_t count) {
    const int units = a.head_dim / 8;
    const int stride = a.head_dim + kPad;
    for (int i = threadIdx.x; i < count * units; i += kThreads) {
        const int key = i / units;
        const int u = i - key * units;
        cp_async16(tile + key * stride + u * 8,
                   cache + (int64_t(first + key) * a.n_kv_heads + kv_head) * a.head_dim + u * 8);
    }
}

// acc[i] = q(row kg + kKeyGroups * i) . k(key threadIdx.x % kTile of the tile), fp32 fma in
// element order (rows >= count left 0). kg = threadIdx.x / kTile.
template <int SR>
__device__ __forceinline__ void tile_dots(const float *q_s, const bf16 *tile, int32_t head_dim, int32_t count,
                                          float (&acc)[SR]) {
    const int key = threadIdx.x % kTile;
    const int kg = threadIdx.x / kTile;
    const bf16 *k_row = tile + key * (head_dim + kPad);
#pragma unroll
    for (int i = 0; i < SR; ++i) acc[i] = 0.0f;
    for (int e = 0; e < head_dim; e += 8) {
        const uint4 raw = *reinterpret_cast<const uint4 *>(k_row + e);
        const float k[8] = {bf16_low(raw.x), bf16_high(raw.x), bf16_low(raw.y), bf16_high(raw.y),
                            bf16_low(raw.z), bf16_high(raw.z), bf16_low(raw.w), bf16_high(raw.w)};
#pragma unroll
        for (int i = 0; i < SR; ++i) {
            const int r = kg + kKeyGroups * i;
            if (r < count) {
                const float4 q0 = *reinterpret_cast<const float4 *>(q_s + r * head_dim + e);
                const float4 q1 = *reinterpret_cast<const float4 *>(q_s + r * head_dim + e + 4);
                float x = acc[i];
                x = __fmaf_rn(q0.x, k[0], x);
                x = __fmaf_rn(q0.y, k[1], x);
                x = __fmaf_rn(q0.z, k[2], x);
                x = __fmaf_rn(q0.w, k[3], x);
                x = __fmaf_rn(q1.x, k[4], x);
                x = __fmaf_rn(q1.y, k[5], x);
                x = __fmaf_rn(q1.z, k[6], x);
                x = __fmaf_rn(q1.w, k[7], x);
                acc[i] = x;
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
