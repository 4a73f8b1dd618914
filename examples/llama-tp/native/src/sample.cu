// Sampling: one index per row of bf16 logits from softmax(logits / T) restricted to the top-k
// values and then to the top-p nucleus, drawn with a counter-based hash so that a captured graph
// draws fresh numbers at each replay. The probabilities are integers (32-bit fixed point of each
// logit's weight), so every sum is exact and the draw depends only on (logits, T, k, p, seed,
// counter, row): the same on every rank and at every replay.
//
// One block per row. A bf16 logit has 65536 values and its weight depends on its value only, so
// the selections are a radix select on a 16-bit order-preserving key: a histogram of the keys'
// high bytes (count and weight per bin), then of the low bytes inside the one bin that matters.
// Passes over the row: max, high-byte histogram, then one low-byte histogram each for top-k,
// top-p and the draw, and one pass to find the drawn value's j-th occurrence in index order.
#include "common.cuh"

namespace ar4j_llama {
namespace {

constexpr int kSampleThreads = 1024;
constexpr int kWarps = kSampleThreads / 32;

struct SampleState {
    unsigned long long counter;  // the step counter: the draws' stream, advanced once per launch
    unsigned int done;           // blocks of this launch that finished (the last one advances)
    unsigned int pad;
};
static_assert(sizeof(SampleState) == AR4J_LLAMA_SAMPLE_STATE_BYTES, "sample state layout");

// splitmix64's finalizer of z + 0x9E3779B97F4A7C15 (as ar4j_llama_fill_random_bf16).
__device__ __forceinline__ uint64_t mix64(uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

__device__ __forceinline__ bool finite_bf16(uint16_t h) { return (h & 0x7F80u) != 0x7F80u; }

// An order-preserving 16-bit key of a finite bf16 (-0 as +0); keys of finite values are >= 0x0080.
__device__ __forceinline__ uint32_t key_of(uint16_t h) {
    if (h == 0x8000u) h = 0;
    return (h & 0x8000u) ? (~uint32_t(h) & 0xFFFFu) : (uint32_t(h) | 0x8000u);
}
__device__ __forceinline__ float value_of(uint32_t key) {
    const uint16_t h = (key & 0x8000u) ? uint16_t(key & 0x7FFFu) : uint16_t(~key & 0xFFFFu);
    return __uint_as_float(uint32_t(h) << 16);
}
// floor(2^32 * expf((x - max) / T)): 2^32 for the maximum, 0 for a value 22 T below it.
__device__ __forceinline__ uint64_t weight_of(uint32_t key, float max, float temperature) {
    const float e = expf((value_of(key) - max) / temperature);
    return __float2ull_rz(e * 4294967296.0f);
}

struct Shared {
    unsigned int count1[256];        // finite logits per high byte of the key
    unsigned long long weight1[256]; // their weight per high byte
    unsigned int count2[256];        // per low byte, within one high byte
    float warp_max[kWarps];
    unsigned int warp_count[kWarps];
    float max;
    unsigned long long counter;
    uint32_t select;  // the key chosen by the last scan
    uint64_t rest;    // what the last scan leaves below it (see the kernel)
    unsigned int occurrence;
    int found;
};

// count2[lo] = logits of this row whose key is (high << 8) | lo.
__device__ void low_histogram(Shared &s, const uint16_t *row, int32_t n, uint32_t high) {
    for (int i = threadIdx.x; i < 256; i += blockDim.x) s.count2[i] = 0;
    __syncthreads();
    for (int32_t i = threadIdx.x; i < n; i += blockDim.x) {
        const uint16_t h = row[i];
        if (!finite_bf16(h)) continue;
        const uint32_t key = key_of(h);
        if ((key >> 8) == high) atomicAdd(&s.count2[key & 0xFFu], 1u);
    }
    __syncthreads();
}

__global__ void __launch_bounds__(kSampleThreads)
sample_kernel(const uint16_t *logits, int64_t row_stride, int32_t n, float temperature, int32_t top_k,
              float top_p, uint64_t seed, SampleState *state, int32_t index_offset, int32_t *out_index,
              int32_t *device_status) {
    __shared__ Shared s;
    pdl_enter();
    const int tid = threadIdx.x;
    const int lane = tid & 31, warp = tid >> 5;
    const uint16_t *row = logits + int64_t(blockIdx.x) * row_stride;
    if (tid == 0) s.counter = *reinterpret_cast<volatile unsigned long long *>(&state->counter);

    // 1. The largest finite logit.
    float m = -INFINITY;
    for (int32_t i = tid; i < n; i += blockDim.x) {
        const uint16_t h = row[i];
        if (finite_bf16(h)) m = fmaxf(m, __uint_as_float(uint32_t(h) << 16));
    }
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, o));
    if (lane == 0) s.warp_max[warp] = m;
    for (int i = tid; i < 256; i += blockDim.x) { s.count1[i] = 0; s.weight1[i] = 0; }
    __syncthreads();
    if (tid == 0) {
        float b = -INFINITY;
        for (int w = 0; w < kWarps; ++w) b = fmaxf(b, s.warp_max[w]);
        s.max = b;
    }
    __syncthreads();
    const float max = s.max;

    if (max == -INFINITY) {  // no finite logit: nothing to draw from
        if (tid == 0) {
            out_index[blockIdx.x] = index_offset;
            report(device_status, AR4J_LLAMA_ERROR_LOGITS);
        }
    } else {
        // 2. Count (for top-k only) and weight per high byte of the key; a weight of 0 adds nothing, so the
        //    shared atomics (contended: most logits share a few high bytes) are skipped for it.
        for (int32_t i = tid; i < n; i += blockDim.x) {
            const uint16_t h = row[i];
            if (!finite_bf16(h)) continue;
            const uint32_t key = key_of(h);
            if (top_k > 0) atomicAdd(&s.count1[key >> 8], 1u);
            const uint64_t w = weight_of(key, max, temperature);
            if (w != 0) atomicAdd(&s.weight1[key >> 8], (unsigned long long)w);
        }
        __syncthreads();

        // 3. Top-k: the k-th largest key kk (every logit equal to it is kept) and the kept weight.
        __shared__ uint32_t kk;
        __shared__ uint64_t kept;
        __shared__ uint32_t high_k;
        if (tid == 0) {
            uint64_t total = 0, acc = 0;
            uint32_t count = 0;
            for (int b = 0; b < 256; ++b) { total += s.weight1[b]; count += s.count1[b]; }
            high_k = 256;  // no cut
            if (top_k > 0 && uint32_t(top_k) < count) {
                uint32_t c = 0;
                for (int b = 255; b >= 0; --b) {
                    if (c + s.count1[b] >= uint32_t(top_k)) { high_k = b; s.occurrence = c; s.rest = acc; break; }
                    c += s.count1[b];
                    acc += s.weight1[b];
                }
            }
            kk = 0;
            kept = total;
        }
        __syncthreads();
        if (high_k < 256) {
            low_histogram(s, row, n, high_k);
            if (tid == 0) {
                uint32_t c = s.occurrence;
                uint64_t acc = s.rest;
                for (int lo = 255; lo >= 0; --lo) {
                    if (s.count2[lo] == 0) continue;
                    c += s.count2[lo];
                    acc += uint64_t(s.count2[lo]) * weight_of((high_k << 8) | uint32_t(lo), max, temperature);
                    if (c >= uint32_t(top_k)) { kk = (high_k << 8) | uint32_t(lo); break; }
                }
                kept = acc;
            }
            __syncthreads();
        }

        // 4. Top-p: the largest key kp >= kk whose keys >= kp weigh at least ceil(p * kept).
        __shared__ uint32_t kp;
        __shared__ uint64_t nucleus;
        if (top_p >= 1.0f) {
            if (tid == 0) { kp = kk; nucleus = kept; }
            __syncthreads();
        } else {
            __shared__ uint32_t high_p;
            __shared__ uint64_t target;
            if (tid == 0) {
                const double want = ceil(double(top_p) * double(kept));
                target = want < 1.0 ? 1 : uint64_t(want);
                uint64_t acc = 0;
                high_p = kk >> 8;
                for (int b = 255; b > int(kk >> 8); --b) {
                    if (acc + s.weight1[b] >= target) { high_p = b; break; }
                    acc += s.weight1[b];
                }
                s.rest = acc;
            }
            __syncthreads();
            low_histogram(s, row, n, high_p);
            if (tid == 0) {
                const uint32_t floor_lo = high_p == (kk >> 8) ? (kk & 0xFFu) : 0;
                uint64_t acc = s.rest;
                kp = (high_p << 8) | floor_lo;
                for (int lo = 255; lo >= int(floor_lo); --lo) {
                    if (s.count2[lo] == 0) continue;
                    acc += uint64_t(s.count2[lo]) * weight_of((high_p << 8) | uint32_t(lo), max, temperature);
                    if (acc >= target) { kp = (high_p << 8) | uint32_t(lo); break; }
                }
                nucleus = acc;
            }
            __syncthreads();
        }

        // 5. The draw: r uniform in [0, nucleus), the key whose weight interval holds it, then
        //    that key's j-th occurrence in index order, j = (r - weight above) / weight of the key.
        __shared__ uint32_t high_d;
        __shared__ uint64_t r;
        if (tid == 0) {
            const uint64_t z = mix64(mix64(mix64(seed) ^ uint64_t(s.counter)) ^ uint64_t(blockIdx.x));
            r = __umul64hi(z, nucleus);
            uint64_t acc = 0;
            high_d = kp >> 8;
            for (int b = 255; b > int(kp >> 8); --b) {
                if (acc + s.weight1[b] > r) { high_d = b; break; }
                acc += s.weight1[b];
            }
            s.rest = acc;
        }
        __syncthreads();
        low_histogram(s, row, n, high_d);
        if (tid == 0) {
            const uint32_t floor_lo = high_d == (kp >> 8) ? (kp & 0xFFu) : 0;
            uint64_t acc = s.rest;
            s.select = (high_d << 8) | floor_lo;
            s.occurrence = 0;
            for (int lo = 255; lo >= int(floor_lo); --lo) {
                if (s.count2[lo] == 0) continue;
                const uint32_t key = (high_d << 8) | uint32_t(lo);
                const uint64_t w = weight_of(key, max, temperature);
                const uint64_t span = uint64_t(s.count2[lo]) * w;
                if (acc + span > r) {
                    s.select = key;
                    s.occurrence = uint32_t((r - acc) / w);
                    break;
                }
                acc += span;
            }
            s.found = 0;
        }
        __syncthreads();
        const uint32_t want_key = s.select;
        unsigned int before = 0;  // occurrences of want_key in the chunks already read
        for (int32_t base = 0; base < n; base += blockDim.x) {
            const int32_t i = base + tid;
            const bool hit = i < n && finite_bf16(row[i]) && key_of(row[i]) == want_key;
            const unsigned int ballot = __ballot_sync(0xFFFFFFFFu, hit);
            if (lane == 0) s.warp_count[warp] = __popc(ballot);
            __syncthreads();
            unsigned int prefix = before, chunk = 0;
            for (int w = 0; w < kWarps; ++w) {
                if (w < warp) prefix += s.warp_count[w];
                chunk += s.warp_count[w];
            }
            prefix += __popc(ballot & ((1u << lane) - 1u));
            if (hit && prefix == s.occurrence) {
                out_index[blockIdx.x] = index_offset + i;
                s.found = 1;
            }
            before += chunk;
            __syncthreads();
            if (s.found) break;
        }
    }

    // 6. The last block of the launch advances the counter (its only writer) and rearms.
    __syncthreads();
    if (tid == 0) {
        __threadfence();
        const unsigned int finished = atomicAdd(&state->done, 1u);
        if (finished == gridDim.x - 1) {
            state->counter = s.counter + 1;
            state->done = 0;
            __threadfence();
        }
    }
}

}  // namespace
}  // namespace ar4j_llama

using namespace ar4j_llama;

AR4J_LLAMA_API int ar4j_llama_sample(const void *logits, int64_t row_stride, int32_t rows, int32_t n,
                                     float temperature, int32_t top_k, float top_p, uint64_t seed, void *state,
                                     int32_t index_offset, int32_t *out_index, int32_t *device_status,
                                     int32_t pdl, void *stream) {
    if (logits == nullptr || state == nullptr || out_index == nullptr) return AR4J_LLAMA_ERROR_NULL_POINTER;
    if (rows < 1 || n < 1 || n > (1 << 30)) return AR4J_LLAMA_ERROR_SIZE;
    if (row_stride < n) return AR4J_LLAMA_ERROR_STRIDE;
    if (!aligned(logits, 2) || !aligned(state, 8) || !aligned(out_index, 4)) return AR4J_LLAMA_ERROR_MISALIGNED;
    if (!(temperature > 0.0f) || !std::isfinite(temperature) || top_k < 0 || !(top_p > 0.0f) || !(top_p <= 1.0f) ||
        index_offset < 0 || int64_t(index_offset) + n > int64_t(INT32_MAX)) {
        return AR4J_LLAMA_ERROR_INVALID_ARGUMENT;
    }
    return launch(sample_kernel, dim3(rows), dim3(kSampleThreads), 0, stream, pdl != 0,
                  static_cast<const uint16_t *>(logits), row_stride, n, temperature, top_k, top_p, seed,
                  static_cast<SampleState *>(state), index_offset, out_index, device_status);
}
