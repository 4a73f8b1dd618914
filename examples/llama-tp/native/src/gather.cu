// Row copies: the vocabulary-parallel embedding gather and the KV-cache append.
#include "common.cuh"

namespace ar4j_llama {
namespace {

constexpr int kCopyThreads = 256;

// Copies count units of T from src to dst by the block's threads (count units of 2 or 16 bytes).
template <typename T>
__device__ __forceinline__ void copy_row(T *dst, const T *src, int64_t count) {
    for (int64_t i = threadIdx.x; i < count; i += blockDim.x) dst[i] = src[i];
}

template <typename T>
__device__ __forceinline__ void zero_row(T *dst, int64_t count) {
    T zero;
    memset(&zero, 0, sizeof(T));
    for (int64_t i = threadIdx.x; i < count; i += blockDim.x) dst[i] = zero;
}

// One block per token. T: uint4 (8 bf16) when rows are 16-byte aligned, else uint16_t.
template <typename T>
__global__ void embedding_kernel(const int32_t *ids, const T *table, int32_t vocab_start,
                                 int32_t vocab_end, int32_t vocab, int64_t row_units, T *out,
                                 int32_t *device_status) {
    pdl_enter();
    const int64_t t = blockIdx.x;
    const int32_t id = ids[t];
    T *dst = out + t * row_units;
    if (id < 0 || id >= vocab) {
        if (threadIdx.x == 0) report(device_status, AR4J_LLAMA_ERROR_TOKEN_ID);
        zero_row(dst, row_units);
    } else if (id >= vocab_start && id < vocab_end) {
        copy_row(dst, table + int64_t(id - vocab_start) * row_units, row_units);
    } else {
        zero_row(dst, row_units);
    }
}

// grid (n, 2): blockIdx.y 0 copies the keys, 1 the values of token blockIdx.x.
template <typename T>
__global__ void kv_append_kernel(const T *k, int64_t k_stride, const T *v, int64_t v_stride,
                                 int64_t row_units, T *k_cache, T *v_cache, int32_t max_positions,
                                 const int32_t *positions, int32_t start_pos,
                                 int32_t *device_status) {
    pdl_enter();
    const int64_t t = blockIdx.x;
    const int32_t pos = positions != nullptr ? positions[t] : start_pos + int32_t(t);
    if (pos < 0 || pos >= max_positions) {
        if (threadIdx.x == 0 && blockIdx.y == 0) report(device_status, AR4J_LLAMA_ERROR_POSITION);
        return;
    }
    if (blockIdx.y == 0) {
        copy_row(k_cache + int64_t(pos) * row_units, k + t * k_stride, row_units);
    } else {
        copy_row(v_cache + int64_t(pos) * row_units, v + t * v_stride, row_units);
    }
}

}  // namespace
}  // namespace ar4j_llama

using namespace ar4j_llama;

AR4J_LLAMA_API int ar4j_llama_embedding(const int32_t *ids, int32_t n, const void *table,
                                        int32_t vocab_start, int32_t vocab_end, int32_t vocab,
                                        int32_t hidden, void *out, int32_t *device_status,
                                        int32_t pdl, void *stream) {
    if (ids == nullptr || table == nullptr || out == nullptr) return AR4J_LLAMA_ERROR_NULL_POINTER;
    if (n < 1 || hidden < 1 || hidden > AR4J_LLAMA_MAX_HIDDEN) return AR4J_LLAMA_ERROR_SIZE;
    if (vocab_start < 0 || vocab_start >= vocab_end || vocab_end > vocab) return AR4J_LLAMA_ERROR_VOCAB_RANGE;
    if (!aligned(ids, 4) || !aligned(table, 2) || !aligned(out, 2)) return AR4J_LLAMA_ERROR_MISALIGNED;
    if (hidden % 8 == 0 && aligned(table, 16) && aligned(out, 16)) {
        return launch(embedding_kernel<uint4>, dim3(n), dim3(kCopyThreads), 0, stream, pdl != 0, ids,
                      static_cast<const uint4 *>(table), vocab_start, vocab_end, vocab,
                      int64_t(hidden / 8), static_cast<uint4 *>(out), device_status);
    }
    return launch(embedding_kernel<uint16_t>, dim3(n), dim3(kCopyThreads), 0, stream, pdl != 0, ids,
                  static_cast<const uint16_t *>(table), vocab_start, vocab_end, vocab, int64_t(hidden),
                  static_cast<uint16_t *>(out), device_status);
}

AR4J_LLAMA_API int ar4j_llama_kv_append(const void *k, int64_t k_row_stride, const void *v,
                                        int64_t v_row_stride, int32_t n, int32_t n_kv_heads,
                                        int32_t head_dim, void *k_cache, void *v_cache,
                                        int32_t max_positions, const int32_t *positions,
                                        int32_t start_pos, int32_t *device_status, int32_t pdl,
                                        void *stream) {
    if (k == nullptr || v == nullptr || k_cache == nullptr || v_cache == nullptr) {
        return AR4J_LLAMA_ERROR_NULL_POINTER;
    }
    if (n < 1 || n_kv_heads < 1 || max_positions < 1) return AR4J_LLAMA_ERROR_SIZE;
    if (!valid_head_dim(head_dim)) return AR4J_LLAMA_ERROR_HEAD_DIM;
    const int64_t row = int64_t(n_kv_heads) * head_dim;
    if (k_row_stride < row || v_row_stride < row) return AR4J_LLAMA_ERROR_STRIDE;
    if (!valid_start(positions, start_pos, n, max_positions)) return AR4J_LLAMA_ERROR_POSITION;
    if (!aligned(k, 2) || !aligned(v, 2) || !aligned(k_cache, 2) || !aligned(v_cache, 2) ||
        (positions != nullptr && !aligned(positions, 4))) {
        return AR4J_LLAMA_ERROR_MISALIGNED;
    }
    const bool vec = row % 8 == 0 && k_row_stride % 8 == 0 && v_row_stride % 8 == 0 && aligned(k, 16) &&
                     aligned(v, 16) && aligned(k_cache, 16) && aligned(v_cache, 16);
    if (vec) {
        return launch(kv_append_kernel<uint4>, dim3(n, 2), dim3(kCopyThreads), 0, stream, pdl != 0,
                      static_cast<const uint4 *>(k), k_row_stride / 8, static_cast<const uint4 *>(v),
                      v_row_stride / 8, row / 8, static_cast<uint4 *>(k_cache),
                      static_cast<uint4 *>(v_cache), max_positions, positions, start_pos, device_status);
    }
    return launch(kv_append_kernel<uint16_t>, dim3(n, 2), dim3(kCopyThreads), 0, stream, pdl != 0,
                  static_cast<const uint16_t *>(k), k_row_stride, static_cast<const uint16_t *>(v),
                  v_row_stride, row, static_cast<uint16_t *>(k_cache), static_cast<uint16_t *>(v_cache),
                  max_positions, positions, start_pos, device_status);
}
