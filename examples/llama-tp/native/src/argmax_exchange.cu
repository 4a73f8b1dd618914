// Greedy decoding across vocabulary shards without all-reducing the logits (kernels.h): each
// rank writes its shard's (value, index) into its own slot of a small fp32 exchange buffer and
// zeros into the others; a SUM all-reduce of that buffer between the two kernels is exact (each
// slot has one non-zero addend) and gives every rank every rank's pair; the pick then chooses as
// torch.argmax over the whole vocabulary would. At llama3-8b's vocabulary that replaces an
// all-reduce of 2 * 128256 bytes per row (and the argmax pass over it) with one of 8 * ranks.
#include "common.cuh"

namespace ar4j_llama {
namespace {

constexpr int kThreads = 128;

__global__ void __launch_bounds__(kThreads) argmax_pack_kernel(const int32_t *index, const float *value,
                                                               int32_t rows, int32_t ranks, int32_t rank,
                                                               float *exchange) {
    pdl_enter();
    const int32_t slots = rows * ranks;
    for (int32_t i = int32_t(blockIdx.x) * kThreads + threadIdx.x; i < slots; i += int32_t(gridDim.x) * kThreads) {
        const int32_t r = i / ranks;
        const bool mine = i - r * ranks == rank;
        // An index below 2^24 (checked on the host through the vocabulary size) is exact in fp32.
        exchange[2 * int64_t(i)] = mine ? value[r] : 0.0f;
        exchange[2 * int64_t(i) + 1] = mine ? float(index[r]) : 0.0f;
    }
}

// Whether an exchanged id field holds what a rank packed: a whole number in [0, 2^24). A failed
// all-reduce leaves NaN there (ar4j's contract), which no conversion may turn into a token.
__device__ __forceinline__ bool exchanged_id(float x) {
    return x >= 0.0f && x < float(AR4J_LLAMA_MAX_EXCHANGED_VOCAB) && x == truncf(x);
}

__global__ void __launch_bounds__(kThreads) argmax_pick_kernel(const float *exchange, int32_t rows, int32_t ranks,
                                                               int32_t *out_index, float *out_value,
                                                               int32_t *device_status) {
    pdl_enter();
    for (int32_t r = int32_t(blockIdx.x) * kThreads + threadIdx.x; r < rows; r += int32_t(gridDim.x) * kThreads) {
        const float *pairs = exchange + 2 * int64_t(r) * ranks;
        float best = 0.0f;
        int32_t best_index = -1;
        for (int32_t q = 0; q < ranks; ++q) {
            const float v = pairs[2 * q];
            if (!exchanged_id(pairs[2 * q + 1])) {
                best_index = -1;
                best = NAN;
                report(device_status, AR4J_LLAMA_ERROR_TOKEN_ID);
                break;
            }
            const int32_t id = int32_t(pairs[2 * q + 1]);
            if (q == 0 || argmax_wins(v, id, best, best_index)) {
                best = v;
                best_index = id;
            }
        }
        out_index[r] = best_index;
        if (out_value != nullptr) out_value[r] = best;
    }
}

bool valid_exchange(int32_t rows, int32_t ranks) {
    return rows >= 1 && ranks >= 1 && int64_t(rows) * ranks <= (int64_t(1) << 28);
}

}  // namespace
}  // namespace ar4j_llama

using namespace ar4j_llama;

AR4J_LLAMA_API size_t ar4j_llama_argmax_exchange_floats(int32_t rows, int32_t ranks) {
    if (!valid_exchange(rows, ranks)) return 0;
    return size_t((int64_t(rows) * ranks * 2 + 3) / 4 * 4);
}

AR4J_LLAMA_API int ar4j_llama_argmax_pack(const int32_t *index, const float *value, int32_t rows, int32_t ranks,
                                          int32_t rank, int32_t vocab, float *exchange, int32_t pdl,
                                          void *stream) {
    if (index == nullptr || value == nullptr || exchange == nullptr) return AR4J_LLAMA_ERROR_NULL_POINTER;
    if (!valid_exchange(rows, ranks) || vocab < 1 || vocab > AR4J_LLAMA_MAX_EXCHANGED_VOCAB) {
        return AR4J_LLAMA_ERROR_SIZE;
    }
    if (rank < 0 || rank >= ranks) return AR4J_LLAMA_ERROR_INVALID_ARGUMENT;
    if (!aligned(index, 4) || !aligned(value, 4) || !aligned(exchange, 4)) return AR4J_LLAMA_ERROR_MISALIGNED;
    const unsigned int blocks = stride_blocks(int64_t(rows) * ranks, kThreads);
    return launch(argmax_pack_kernel, dim3(blocks), dim3(kThreads), 0, stream, pdl != 0, index, value, rows, ranks,
                  rank, exchange);
}

AR4J_LLAMA_API int ar4j_llama_argmax_pick(const float *exchange, int32_t rows, int32_t ranks, int32_t *out_index,
                                          float *out_value, int32_t *device_status, int32_t pdl, void *stream) {
    if (exchange == nullptr || out_index == nullptr) return AR4J_LLAMA_ERROR_NULL_POINTER;
    if (!valid_exchange(rows, ranks)) return AR4J_LLAMA_ERROR_SIZE;
    if (!aligned(exchange, 4) || !aligned(out_index, 4) || (out_value != nullptr && !aligned(out_value, 4))) {
        return AR4J_LLAMA_ERROR_MISALIGNED;
    }
    const unsigned int blocks = stride_blocks(rows, kThreads);
    return launch(argmax_pick_kernel, dim3(blocks), dim3(kThreads), 0, stream, pdl != 0, exchange, rows, ranks,
                  out_index, out_value, device_status);
}
