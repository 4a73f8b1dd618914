// Rotary position embedding on q and k in place, rounded as transformers' bf16 path rounds, and
// the same fused with the KV-cache append (rotated k written to the cache, v copied).
#include "rope.cuh"

namespace ar4j_llama {
namespace {

// Rotates the pair (i, i + head_dim / 2) of src into dst (which may equal src) for position pos.
__device__ __forceinline__ void rotate_pair(const bf16 *src, bf16 *dst, int32_t head_dim, const float *inv_freq,
                                            float attention_scaling, int32_t pos, int32_t i) {
    rotate_with(src, dst, head_dim / 2, i, rope_cos_sin(inv_freq, attention_scaling, pos, i));
}

// grid (n, n_heads + n_kv_heads), block head_dim / 2: thread i rotates the pair (i, i + half).
__global__ void rope_kernel(bf16 *q, int64_t q_stride, bf16 *k, int64_t k_stride, int32_t n_heads,
                            int32_t head_dim, const float *inv_freq, float attention_scaling,
                            const int32_t *positions, int32_t start_pos, int32_t max_positions,
                            int32_t *device_status) {
    pdl_enter();
    const int64_t t = blockIdx.x;
    const int32_t pos = positions != nullptr ? positions[t] : start_pos + int32_t(t);
    if (pos < 0 || pos >= max_positions) {
        if (threadIdx.x == 0 && blockIdx.y == 0) report(device_status, AR4J_LLAMA_ERROR_POSITION);
        return;
    }
    const int32_t head = blockIdx.y;
    bf16 *x = head < n_heads ? q + t * q_stride + int64_t(head) * head_dim
                             : k + t * k_stride + int64_t(head - n_heads) * head_dim;
    rotate_pair(x, x, head_dim, inv_freq, attention_scaling, pos, threadIdx.x);
}

// grid (n, n_heads + 2 n_kv_heads), block head_dim / 2. blockIdx.y < n_heads: q head rotated in
// place; then the k heads rotated into k_cache[pos]; then the v heads copied into v_cache[pos],
// both caches those of token t's sequence, t / tokens_per_seq (cache_stride elements apart).
__global__ void rope_kv_append_kernel(bf16 *q, int64_t q_stride, const bf16 *k, int64_t k_stride, const bf16 *v,
                                      int64_t v_stride, int32_t n_heads, int32_t n_kv_heads, int32_t head_dim,
                                      const float *inv_freq, float attention_scaling, bf16 *k_cache, bf16 *v_cache,
                                      int32_t tokens_per_seq, int64_t cache_stride, const int32_t *positions,
                                      int32_t start_pos, int32_t max_positions, int32_t *device_status) {
    pdl_enter();
    const int64_t t = blockIdx.x;
    const int32_t pos = positions != nullptr ? positions[t] : start_pos + int32_t(t);
    if (pos < 0 || pos >= max_positions) {
        if (threadIdx.x == 0 && blockIdx.y == 0) report(device_status, AR4J_LLAMA_ERROR_POSITION);
        return;
    }
    const int32_t head = blockIdx.y;
    const int64_t seq = int32_t(t) / tokens_per_seq;  // t < n, an int32: no 64-bit division
    k_cache += seq * cache_stride;
    v_cache += seq * cache_stride;
    const int64_t cache_row = int64_t(pos) * n_kv_heads;
    if (head < n_heads) {
        bf16 *x = q + t * q_stride + int64_t(head) * head_dim;
        rotate_pair(x, x, head_dim, inv_freq, attention_scaling, pos, threadIdx.x);
    } else if (head < n_heads + n_kv_heads) {
        const int32_t kv = head - n_heads;
        rotate_pair(k + t * k_stride + int64_t(kv) * head_dim, k_cache + (cache_row + kv) * head_dim, head_dim,
                    inv_freq, attention_scaling, pos, threadIdx.x);
    } else {
        const int32_t kv = head - n_heads - n_kv_heads;
        const bf16 *src = v + t * v_stride + int64_t(kv) * head_dim;
        bf16 *dst = v_cache + (cache_row + kv) * head_dim;
        const int32_t half = head_dim / 2;
        dst[threadIdx.x] = src[threadIdx.x];
        dst[threadIdx.x + half] = src[threadIdx.x + half];
    }
}

// The same as rope_kv_append_kernel for many tokens (a prefill chunk): grid (n), one block of
// kRopeThreads per token, which loops over every head's pairs. The per-token grid makes one block of
// real work instead of n_heads + 2 n_kv_heads blocks of head_dim / 2 threads, and each pair's cos and
// sin are computed once per token (in shared memory), not once per head; the values written are the
// same expressions of the same inputs, so the same bits.
constexpr int kRopeThreads = 256;

__global__ void __launch_bounds__(kRopeThreads)
rope_kv_append_rows_kernel(bf16 *q, int64_t q_stride, const bf16 *k, int64_t k_stride, const bf16 *v,
                           int64_t v_stride, int32_t n_heads, int32_t n_kv_heads, int32_t head_dim,
                           const float *inv_freq, float attention_scaling, bf16 *k_cache, bf16 *v_cache,
                           int32_t tokens_per_seq, int64_t cache_stride, const int32_t *positions,
                           int32_t start_pos, int32_t max_positions, int32_t *device_status) {
    __shared__ float cs[AR4J_LLAMA_MAX_HEAD_DIM];  // cos of pair i at [i], sin at [half + i]
    pdl_enter();
    const int64_t t = blockIdx.x;
    const int32_t pos = positions != nullptr ? positions[t] : start_pos + int32_t(t);
    if (pos < 0 || pos >= max_positions) {
        if (threadIdx.x == 0) report(device_status, AR4J_LLAMA_ERROR_POSITION);
        return;
    }
    const int32_t half = head_dim / 2;
    for (int32_t i = threadIdx.x; i < half; i += kRopeThreads) {
        const float2 c = rope_cos_sin(inv_freq, attention_scaling, pos, i);
        cs[i] = c.x;
        cs[half + i] = c.y;
    }
    __syncthreads();
    const int64_t seq = int32_t(t) / tokens_per_seq;
    k_cache += seq * cache_stride;
    v_cache += seq * cache_stride;
    const int64_t cache_row = int64_t(pos) * n_kv_heads;
    const int32_t pairs = (n_heads + 2 * n_kv_heads) * half;
    for (int32_t idx = threadIdx.x; idx < pairs; idx += kRopeThreads) {
        const int32_t head = idx / half, i = idx - head * half;
        const bf16 *src;
        bf16 *dst;
        if (head < n_heads + n_kv_heads) {
            if (head < n_heads) {
                src = dst = q + t * q_stride + int64_t(head) * head_dim;
            } else {
                const int32_t kv = head - n_heads;
                src = k + t * k_stride + int64_t(kv) * head_dim;
                dst = k_cache + (cache_row + kv) * head_dim;
            }
            rotate_with(src, dst, half, i, make_float2(cs[i], cs[half + i]));
        } else {
            const int32_t kv = head - n_heads - n_kv_heads;
            src = v + t * v_stride + int64_t(kv) * head_dim;
            dst = v_cache + (cache_row + kv) * head_dim;
            dst[i] = src[i];
            dst[i + half] = src[i + half];
        }
    }
}

// Tokens from which a call takes the per-token kernel: below, the (token, head) grid's blocks are
// few and all run at once, and a single token's block would do its heads one after another.
constexpr int32_t kRopeRowsFrom = 32;

}  // namespace
}  // namespace ar4j_llama

using namespace ar4j_llama;

AR4J_LLAMA_API int ar4j_llama_rope(void *q, int64_t q_row_stride, void *k, int64_t k_row_stride,
                                   int32_t n, int32_t n_heads, int32_t n_kv_heads, int32_t head_dim,
                                   const float *inv_freq, float attention_scaling,
                                   const int32_t *positions, int32_t start_pos, int32_t max_positions,
                                   int32_t *device_status, int32_t pdl, void *stream) {
    if (q == nullptr || inv_freq == nullptr || (n_kv_heads > 0 && k == nullptr)) {
        return AR4J_LLAMA_ERROR_NULL_POINTER;
    }
    if (n < 1 || n_heads < 1 || n_kv_heads < 0 || max_positions < 1 ||
        int64_t(n_heads) + n_kv_heads > 65535) {
        return AR4J_LLAMA_ERROR_SIZE;
    }
    if (!valid_head_dim(head_dim)) return AR4J_LLAMA_ERROR_HEAD_DIM;
    if (q_row_stride < int64_t(n_heads) * head_dim ||
        (n_kv_heads > 0 && k_row_stride < int64_t(n_kv_heads) * head_dim)) {
        return AR4J_LLAMA_ERROR_STRIDE;
    }
    if (!std::isfinite(attention_scaling)) return AR4J_LLAMA_ERROR_INVALID_ARGUMENT;
    if (!valid_start(positions, start_pos, n, max_positions)) return AR4J_LLAMA_ERROR_POSITION;
    if (!aligned(q, 2) || (k != nullptr && !aligned(k, 2)) || !aligned(inv_freq, 4) ||
        (positions != nullptr && !aligned(positions, 4))) {
        return AR4J_LLAMA_ERROR_MISALIGNED;
    }
    return launch(rope_kernel, dim3(n, n_heads + n_kv_heads), dim3(head_dim / 2), 0, stream, pdl != 0,
                  static_cast<bf16 *>(q), q_row_stride, static_cast<bf16 *>(k), k_row_stride, n_heads,
                  head_dim, inv_freq, attention_scaling, positions, start_pos, max_positions,
                  device_status);
}

AR4J_LLAMA_API int ar4j_llama_rope_kv_append_batched(void *q, int64_t q_row_stride, const void *k,
                                                     int64_t k_row_stride, const void *v, int64_t v_row_stride,
                                                     int32_t n, int32_t sequences, int32_t n_heads,
                                                     int32_t n_kv_heads, int32_t head_dim, const float *inv_freq,
                                                     float attention_scaling, void *k_cache, void *v_cache,
                                                     int64_t cache_sequence_stride, int32_t max_positions,
                                                     const int32_t *positions, int32_t start_pos,
                                                     int32_t *device_status, int32_t pdl, void *stream) {
    if (q == nullptr || k == nullptr || v == nullptr || inv_freq == nullptr || k_cache == nullptr ||
        v_cache == nullptr) {
        return AR4J_LLAMA_ERROR_NULL_POINTER;
    }
    if (n < 1 || n_heads < 1 || n_kv_heads < 1 || max_positions < 1 ||
        int64_t(n_heads) + 2 * int64_t(n_kv_heads) > 65535 || sequences < 1 || n % sequences != 0) {
        return AR4J_LLAMA_ERROR_SIZE;
    }
    // start_pos + t counts across the whole call: it cannot name positions within each sequence.
    if (sequences > 1 && positions == nullptr) return AR4J_LLAMA_ERROR_NULL_POINTER;
    if (!valid_head_dim(head_dim)) return AR4J_LLAMA_ERROR_HEAD_DIM;
    const int64_t kv_row = int64_t(n_kv_heads) * head_dim;
    // Each sequence's cache holds max_positions rows: a smaller stride would let sequences overlap.
    if (q_row_stride < int64_t(n_heads) * head_dim || k_row_stride < kv_row || v_row_stride < kv_row ||
        cache_sequence_stride < int64_t(max_positions) * kv_row) {
        return AR4J_LLAMA_ERROR_STRIDE;
    }
    if (!std::isfinite(attention_scaling)) return AR4J_LLAMA_ERROR_INVALID_ARGUMENT;
    if (!valid_start(positions, start_pos, n, max_positions)) return AR4J_LLAMA_ERROR_POSITION;
    if (!aligned(q, 2) || !aligned(k, 2) || !aligned(v, 2) || !aligned(k_cache, 2) || !aligned(v_cache, 2) ||
        !aligned(inv_freq, 4) || (positions != nullptr && !aligned(positions, 4))) {
        return AR4J_LLAMA_ERROR_MISALIGNED;
    }
    if (n >= kRopeRowsFrom) {
        return launch(rope_kv_append_rows_kernel, dim3(n), dim3(kRopeThreads), 0, stream, pdl != 0,
                      static_cast<bf16 *>(q), q_row_stride, static_cast<const bf16 *>(k), k_row_stride,
                      static_cast<const bf16 *>(v), v_row_stride, n_heads, n_kv_heads, head_dim, inv_freq,
                      attention_scaling, static_cast<bf16 *>(k_cache), static_cast<bf16 *>(v_cache),
                      n / sequences, cache_sequence_stride, positions, start_pos, max_positions, device_status);
    }
    return launch(rope_kv_append_kernel, dim3(n, n_heads + 2 * n_kv_heads), dim3(head_dim / 2), 0, stream, pdl != 0,
                  static_cast<bf16 *>(q), q_row_stride, static_cast<const bf16 *>(k), k_row_stride,
                  static_cast<const bf16 *>(v), v_row_stride, n_heads, n_kv_heads, head_dim, inv_freq,
                  attention_scaling, static_cast<bf16 *>(k_cache), static_cast<bf16 *>(v_cache), n / sequences,
                  cache_sequence_stride, positions, start_pos, max_positions, device_status);
}

AR4J_LLAMA_API int ar4j_llama_rope_kv_append(void *q, int64_t q_row_stride, const void *k, int64_t k_row_stride,
                                             const void *v, int64_t v_row_stride, int32_t n, int32_t n_heads,
                                             int32_t n_kv_heads, int32_t head_dim, const float *inv_freq,
                                             float attention_scaling, void *k_cache, void *v_cache,
                                             int32_t max_positions, const int32_t *positions, int32_t start_pos,
                                             int32_t *device_status, int32_t pdl, void *stream) {
    // One sequence: its cache is the whole of k_cache / v_cache, and the stride is never applied
    // (sequence 0); the cache's own size passes the batched function's stride check.
    const int64_t cache_region = int64_t(max_positions) * n_kv_heads * head_dim;
    return ar4j_llama_rope_kv_append_batched(q, q_row_stride, k, k_row_stride, v, v_row_stride, n, 1, n_heads,
                                             n_kv_heads, head_dim, inv_freq, attention_scaling, k_cache, v_cache,
                                             cache_region, max_positions, positions, start_pos, device_status, pdl,
                                             stream);
}
