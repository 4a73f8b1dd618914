// Causal grouped-query attention over a KV cache, in bounded memory, with the rounding points of
// transformers' eager_attention_forward in bf16 (see kernels.h).
//
// Three kernels, grid.x = n * n_heads (one (token, head) each), grid.y = num_splits (a key
// range each, cut from the token's context length at run time so a graph replays for any
// length):
//   1. stats:   per split, the max and the sum of exp(s - max) of its scores (online softmax);
//   2. values:  per split, the global max and sum from all splits' stats, then the scores again
//               and sum_j bf16(p_j) * v_j over its keys;
//   3. combine: out = bf16(sum over splits), in split order.
// With one split, the values kernel alone does both passes and writes out.
// Within a block, four warps take every fourth key; a warp computes one dot product at a time
// (each lane a few element pairs, then a butterfly sum, so every lane holds the same bits).
#include "common.cuh"

namespace ar4j_llama {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
// Keys a warp has in flight at once: their rows are loaded before the first is used (the key
// order of every sum stays j = begin + warp, + kWarps, ...). Two for head_dim > 128 (registers).
template <int PAIRS>
constexpr int unroll() { return PAIRS >= 4 ? 2 : 4; }
constexpr unsigned int kFullMask = 0xffffffffu;

struct AttentionArgs {
    const bf16 *q;
    int64_t q_stride;
    const bf16 *k_cache;
    const bf16 *v_cache;
    int32_t n_heads;
    int32_t group;  // n_heads / n_kv_heads
    int32_t n_kv_heads;
    int32_t head_dim;
    int32_t max_positions;
    const int32_t *positions;
    int32_t start_pos;
    float scale;
    bf16 *out;
    int64_t out_stride;
    int32_t splits;
    float *stats;    // [n * n_heads][splits][2]: max, sum
    float *partial;  // [n * n_heads][splits][head_dim]
    int32_t *device_status;
};

// The (token, head) of this block and its key range [begin, end); false for a bad position.
struct Work {
    int64_t t;
    int32_t head;
    int32_t begin;
    int32_t end;
};

__device__ __forceinline__ bool locate(const AttentionArgs &a, Work &w) {
    w.t = blockIdx.x / a.n_heads;
    w.head = blockIdx.x % a.n_heads;
    const int32_t pos = a.positions != nullptr ? a.positions[w.t] : a.start_pos + int32_t(w.t);
    if (pos < 0 || pos >= a.max_positions) return false;
    const int32_t length = pos + 1;
    const int64_t chunk = (int64_t(length) + a.splits - 1) / a.splits;
    const int64_t begin = int64_t(blockIdx.y) * chunk;
    w.begin = begin < length ? int32_t(begin) : length;
    w.end = begin + chunk < length ? int32_t(begin + chunk) : length;
    return true;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v = __fadd_rn(v, __shfl_xor_sync(kFullMask, v, offset));
    return v;
}

// Lane `lane` holds element pairs lane + 32 * i (i < PAIRS) of a head_dim row.
template <int PAIRS>
__device__ __forceinline__ void load_row(const bf16 *row, int32_t head_dim, int lane, float (&x)[2 * PAIRS]) {
#pragma unroll
    for (int i = 0; i < PAIRS; ++i) {
        const int e = 2 * (lane + 32 * i);
        if (e < head_dim) {
            const float2 f = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(row + e));
            x[2 * i] = f.x;
            x[2 * i + 1] = f.y;
        } else {
            x[2 * i] = 0.0f;
            x[2 * i + 1] = 0.0f;
        }
    }
}

// s_j = bf16(bf16(q . k_j) * scale), the same bits in both passes (explicit roundings, no contraction).
template <int PAIRS>
__device__ __forceinline__ float score(const AttentionArgs &a, const float (&q)[2 * PAIRS], int32_t kv_head,
                                       int32_t j, int lane) {
    const bf16 *row = a.k_cache + (int64_t(j) * a.n_kv_heads + kv_head) * a.head_dim;
    float k[2 * PAIRS];
    load_row<PAIRS>(row, a.head_dim, lane, k);
    float acc = 0.0f;
#pragma unroll
    for (int e = 0; e < 2 * PAIRS; ++e) acc = __fmaf_rn(q[e], k[e], acc);
    const float dot = warp_sum(acc);
    return round_bf16(__fmul_rn(round_bf16(dot), a.scale));
}

// The first pass over the block's keys: the max of their scores and the sum of exp(s - max),
// returned to every thread of the block (all threads must call it).
template <int PAIRS>
__device__ __forceinline__ void split_stats(const AttentionArgs &a, const Work &w, const float (&q)[2 * PAIRS],
                                            int32_t kv_head, float &block_max, float &block_sum) {
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    float m = -INFINITY;
    float l = 0.0f;
    constexpr int kUnroll = unroll<PAIRS>();
    for (int64_t j0 = w.begin + warp; j0 < w.end; j0 += kWarps * kUnroll) {
        float s[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            // Past the end, a valid row is read (the last) and its score not used.
            const int64_t j = j0 + u * kWarps;
            s[u] = score<PAIRS>(a, q, kv_head, int32_t(j < w.end ? j : w.end - 1), lane);
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            if (j0 + u * kWarps >= w.end) break;
            if (s[u] > m) {
                l = __fadd_rn(__fmul_rn(l, expf(m - s[u])), 1.0f);
                m = s[u];
            } else {
                l = __fadd_rn(l, expf(s[u] - m));
            }
        }
    }
    __shared__ float warp_max[kWarps];
    __shared__ float warp_sum_exp[kWarps];
    if (lane == 0) {
        warp_max[warp] = m;
        warp_sum_exp[warp] = l;
    }
    __syncthreads();
    // Every thread combines the warps in the same order: the same bits everywhere.
    block_max = -INFINITY;
    for (int i = 0; i < kWarps; ++i) block_max = fmaxf(block_max, warp_max[i]);
    block_sum = 0.0f;
    for (int i = 0; i < kWarps; ++i) {
        if (warp_sum_exp[i] > 0.0f) {
            block_sum = __fadd_rn(block_sum, __fmul_rn(warp_sum_exp[i], expf(warp_max[i] - block_max)));
        }
    }
}

template <int PAIRS>
__global__ void __launch_bounds__(kThreads) attention_stats_kernel(AttentionArgs a) {
    pdl_enter();
    Work w;
    if (!locate(a, w)) {
        if (threadIdx.x == 0 && w.head == 0 && blockIdx.y == 0) report(a.device_status, AR4J_LLAMA_ERROR_POSITION);
        return;
    }
    const int lane = threadIdx.x % 32;
    float q[2 * PAIRS];
    load_row<PAIRS>(a.q + w.t * a.q_stride + int64_t(w.head) * a.head_dim, a.head_dim, lane, q);
    float block_max, block_sum;
    split_stats<PAIRS>(a, w, q, w.head / a.group, block_max, block_sum);
    if (threadIdx.x == 0) {
        float *stats = a.stats + (int64_t(blockIdx.x) * a.splits + blockIdx.y) * 2;
        stats[0] = block_max;
        stats[1] = block_sum;
    }
}

template <int PAIRS>
__global__ void __launch_bounds__(kThreads) attention_values_kernel(AttentionArgs a) {
    pdl_enter();
    extern __shared__ float warp_acc[];  // [kWarps][head_dim]
    Work w;
    if (!locate(a, w)) {
        if (a.splits == 1) {
            if (threadIdx.x == 0 && w.head == 0) report(a.device_status, AR4J_LLAMA_ERROR_POSITION);
            bf16 *dst = a.out + w.t * a.out_stride + int64_t(w.head) * a.head_dim;
            for (int e = threadIdx.x; e < a.head_dim; e += kThreads) dst[e] = __float2bfloat16_rn(NAN);
        }
        return;
    }
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const int32_t kv_head = w.head / a.group;
    float q[2 * PAIRS];
    load_row<PAIRS>(a.q + w.t * a.q_stride + int64_t(w.head) * a.head_dim, a.head_dim, lane, q);
    // The softmax's max and denominator: with one split, this block's own first pass; else all
    // splits' stats combined in split order (every block the same). Both give the same bits
    // for one split (max(-inf, m) = m, 0 + l * exp(0) = l).
    float global_max, denominator;
    if (a.splits == 1) {
        split_stats<PAIRS>(a, w, q, kv_head, global_max, denominator);
    } else {
        const float *stats = a.stats + int64_t(blockIdx.x) * a.splits * 2;
        global_max = -INFINITY;
        for (int s = 0; s < a.splits; ++s) global_max = fmaxf(global_max, stats[2 * s]);
        denominator = 0.0f;
        for (int s = 0; s < a.splits; ++s) {
            if (stats[2 * s + 1] > 0.0f) {
                denominator = __fadd_rn(denominator, __fmul_rn(stats[2 * s + 1], expf(stats[2 * s] - global_max)));
            }
        }
    }
    float acc[2 * PAIRS];
#pragma unroll
    for (int e = 0; e < 2 * PAIRS; ++e) acc[e] = 0.0f;
    constexpr int kUnroll = unroll<PAIRS>();
    for (int64_t j0 = w.begin + warp; j0 < w.end; j0 += kWarps * kUnroll) {
        float s[kUnroll];
        float v[kUnroll][2 * PAIRS];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            const int64_t j = j0 + u * kWarps < w.end ? j0 + u * kWarps : w.end - 1;  // as in the first pass
            s[u] = score<PAIRS>(a, q, kv_head, int32_t(j), lane);
            load_row<PAIRS>(a.v_cache + (j * a.n_kv_heads + kv_head) * a.head_dim, a.head_dim, lane, v[u]);
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            if (j0 + u * kWarps >= w.end) break;
            const float p = round_bf16(__fdiv_rn(expf(s[u] - global_max), denominator));
#pragma unroll
            for (int e = 0; e < 2 * PAIRS; ++e) acc[e] = __fmaf_rn(p, v[u][e], acc[e]);
        }
    }
#pragma unroll
    for (int i = 0; i < PAIRS; ++i) {
        const int e = 2 * (lane + 32 * i);
        if (e < a.head_dim) {
            warp_acc[warp * a.head_dim + e] = acc[2 * i];
            warp_acc[warp * a.head_dim + e + 1] = acc[2 * i + 1];
        }
    }
    __syncthreads();
    for (int e = threadIdx.x; e < a.head_dim; e += kThreads) {
        float sum = warp_acc[e];
        for (int i = 1; i < kWarps; ++i) sum = __fadd_rn(sum, warp_acc[i * a.head_dim + e]);
        if (a.splits == 1) {
            a.out[w.t * a.out_stride + int64_t(w.head) * a.head_dim + e] = __float2bfloat16_rn(sum);
        } else {
            a.partial[(int64_t(blockIdx.x) * a.splits + blockIdx.y) * a.head_dim + e] = sum;
        }
    }
}

__global__ void __launch_bounds__(kThreads) attention_combine_kernel(AttentionArgs a) {
    pdl_enter();
    const int64_t t = blockIdx.x / a.n_heads;
    const int32_t head = blockIdx.x % a.n_heads;
    const int32_t pos = a.positions != nullptr ? a.positions[t] : a.start_pos + int32_t(t);
    const bool valid = pos >= 0 && pos < a.max_positions;
    const float *partial = a.partial + int64_t(blockIdx.x) * a.splits * a.head_dim;
    bf16 *dst = a.out + t * a.out_stride + int64_t(head) * a.head_dim;
    for (int e = threadIdx.x; e < a.head_dim; e += kThreads) {
        float sum = NAN;
        if (valid) {
            sum = partial[e];
            for (int s = 1; s < a.splits; ++s) sum = __fadd_rn(sum, partial[int64_t(s) * a.head_dim + e]);
        }
        dst[e] = __float2bfloat16_rn(sum);
    }
}

// One split: one kernel (both passes in each block). Several: stats, values, combine.
template <int PAIRS>
int launch_attention(const AttentionArgs &a, int32_t n, bool pdl, void *stream) {
    const dim3 grid(unsigned(int64_t(n) * a.n_heads), unsigned(a.splits));
    const size_t shared = size_t(kWarps) * a.head_dim * sizeof(float);
    if (a.splits == 1) return launch(attention_values_kernel<PAIRS>, grid, dim3(kThreads), shared, stream, pdl, a);
    int error = launch(attention_stats_kernel<PAIRS>, grid, dim3(kThreads), 0, stream, pdl, a);
    if (error != 0) return error;
    error = launch(attention_values_kernel<PAIRS>, grid, dim3(kThreads), shared, stream, pdl, a);
    if (error != 0) return error;
    return launch(attention_combine_kernel, dim3(grid.x), dim3(kThreads), 0, stream, pdl, a);
}

}  // namespace
}  // namespace ar4j_llama

using namespace ar4j_llama;

AR4J_LLAMA_API int32_t ar4j_llama_attention_splits(int32_t n, int32_t n_heads, int32_t max_context,
                                                   int32_t sm_count) {
    if (n <= 0 || n_heads <= 0 || max_context <= 0 || sm_count <= 0) return 1;
    const int64_t blocks = int64_t(n) * n_heads;
    int64_t splits = (2 * int64_t(sm_count) + blocks - 1) / blocks;  // about two blocks per SM
    const int64_t by_length = max_context / 64 > 0 ? max_context / 64 : 1;
    if (splits > by_length) splits = by_length;
    if (splits > AR4J_LLAMA_MAX_SPLITS) splits = AR4J_LLAMA_MAX_SPLITS;
    return splits < 1 ? 1 : int32_t(splits);
}

AR4J_LLAMA_API size_t ar4j_llama_attention_workspace_bytes(int32_t n, int32_t n_heads, int32_t head_dim,
                                                           int32_t num_splits) {
    if (n < 1 || n_heads < 1 || !valid_head_dim(head_dim) || num_splits < 1 ||
        num_splits > AR4J_LLAMA_MAX_SPLITS) {
        return 0;
    }
    return size_t(n) * size_t(n_heads) * size_t(num_splits) * (size_t(head_dim) + 2) * sizeof(float);
}

AR4J_LLAMA_API int ar4j_llama_attention(const void *q, int64_t q_row_stride, const void *k_cache,
                                        const void *v_cache, int32_t n, int32_t n_heads,
                                        int32_t n_kv_heads, int32_t head_dim, int32_t max_positions,
                                        const int32_t *positions, int32_t start_pos, float scale,
                                        void *out, int64_t out_row_stride, int32_t num_splits,
                                        void *workspace, size_t workspace_bytes,
                                        int32_t *device_status, int32_t pdl, void *stream) {
    if (q == nullptr || k_cache == nullptr || v_cache == nullptr || out == nullptr ||
        (workspace == nullptr && num_splits != 1)) {
        return AR4J_LLAMA_ERROR_NULL_POINTER;
    }
    if (n < 1 || n_heads < 1 || n_kv_heads < 1 || max_positions < 1 ||
        int64_t(n) * n_heads > int64_t(INT32_MAX)) {
        return AR4J_LLAMA_ERROR_SIZE;
    }
    if (n_heads % n_kv_heads != 0) return AR4J_LLAMA_ERROR_GQA;
    if (!valid_head_dim(head_dim)) return AR4J_LLAMA_ERROR_HEAD_DIM;
    if (num_splits < 1 || num_splits > AR4J_LLAMA_MAX_SPLITS) return AR4J_LLAMA_ERROR_SPLITS;
    const int64_t row = int64_t(n_heads) * head_dim;
    if (q_row_stride < row || out_row_stride < row) return AR4J_LLAMA_ERROR_STRIDE;
    if (!(scale > 0.0f) || !std::isfinite(scale)) return AR4J_LLAMA_ERROR_INVALID_ARGUMENT;
    if (!valid_start(positions, start_pos, n, max_positions)) return AR4J_LLAMA_ERROR_POSITION;
    // Element pairs are loaded as one 4-byte bf16x2.
    if (!aligned(q, 4) || !aligned(k_cache, 4) || !aligned(v_cache, 4) || !aligned(out, 2) ||
        !aligned(workspace, 4) || q_row_stride % 2 != 0 || (positions != nullptr && !aligned(positions, 4))) {
        return AR4J_LLAMA_ERROR_MISALIGNED;
    }
    if (num_splits != 1 && workspace_bytes < ar4j_llama_attention_workspace_bytes(n, n_heads, head_dim, num_splits)) {
        return AR4J_LLAMA_ERROR_WORKSPACE;
    }
    AttentionArgs a;
    a.q = static_cast<const bf16 *>(q);
    a.q_stride = q_row_stride;
    a.k_cache = static_cast<const bf16 *>(k_cache);
    a.v_cache = static_cast<const bf16 *>(v_cache);
    a.n_heads = n_heads;
    a.group = n_heads / n_kv_heads;
    a.n_kv_heads = n_kv_heads;
    a.head_dim = head_dim;
    a.max_positions = max_positions;
    a.positions = positions;
    a.start_pos = start_pos;
    a.scale = scale;
    a.out = static_cast<bf16 *>(out);
    a.out_stride = out_row_stride;
    a.splits = num_splits;
    a.stats = static_cast<float *>(workspace);
    a.partial = workspace != nullptr ? a.stats + int64_t(n) * n_heads * num_splits * 2 : nullptr;
    a.device_status = device_status;
    const bool use_pdl = pdl != 0;
    if (head_dim <= 64) return launch_attention<1>(a, n, use_pdl, stream);
    if (head_dim <= 128) return launch_attention<2>(a, n, use_pdl, stream);
    return launch_attention<4>(a, n, use_pdl, stream);
}
