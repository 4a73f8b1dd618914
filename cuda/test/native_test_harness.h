// The harness of ar4j_native_test (native_test.cu): checks and their tally, printing, dtype
// encoding and random integer inputs, the state the rank threads share (buffers, signals,
// options), a fresh group for the containment tests, and the test groups' declarations (one
// file each: native_correctness.cu, native_containment.cu, native_timing.cu).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ar4j/custom_all_reduce.h"

namespace native_test {

inline std::mutex g_print;
inline std::atomic<int> g_passed{0};
inline std::atomic<int> g_failed{0};
inline std::atomic<int> g_skipped{0};

#define CHECK_CUDA(call)                                                                          \
    do {                                                                                          \
        cudaError_t e_ = (call);                                                                  \
        if (e_ != cudaSuccess) {                                                                  \
            std::fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, #call,        \
                         cudaGetErrorName(e_), cudaGetErrorString(e_));                           \
            std::fflush(stdout);                                                                  \
            std::_Exit(2);  /* other threads keep running: no exit handlers */                \
        }                                                                                         \
    } while (0)

#define CHECK_AR(call)                                                                            \
    do {                                                                                          \
        int s_ = (call);                                                                          \
        if (s_ != AR4J_SUCCESS) {                                                                 \
            std::fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, #call,        \
                         ar4j_status_name(s_), ar4j_status_message(s_));                          \
            std::fflush(stdout);                                                                  \
            std::_Exit(2);  /* other threads keep running: no exit handlers */                \
        }                                                                                         \
    } while (0)

inline void record(bool ok, const std::string &what) {
    if (ok) {
        g_passed++;
    } else {
        g_failed++;
        std::lock_guard<std::mutex> lock(g_print);
        std::printf("FAIL %s\n", what.c_str());
    }
}

inline void skip(const std::string &what) {
    g_skipped++;
    std::lock_guard<std::mutex> lock(g_print);
    std::printf("SKIP %s\n", what.c_str());
}

inline const char *dtype_name(int d) {
    return d == AR4J_DTYPE_FLOAT32 ? "fp32" : d == AR4J_DTYPE_FLOAT16 ? "fp16" : "bf16";
}
inline const char *algo_name(int a) {
    return a == AR4J_ALGO_ONE_STAGE ? "1stage" : a == AR4J_ALGO_TWO_STAGE ? "2stage" : "push";
}
inline size_t esize(int d) { return d == AR4J_DTYPE_FLOAT32 ? 4 : 2; }

// Encodes an exactly representable float into the dtype's bits.
inline void encode(int dtype, const std::vector<float> &v, std::vector<uint8_t> &out) {
    out.resize(v.size() * esize(dtype));
    for (size_t i = 0; i < v.size(); ++i) {
        if (dtype == AR4J_DTYPE_FLOAT32) {
            std::memcpy(&out[i * 4], &v[i], 4);
        } else if (dtype == AR4J_DTYPE_FLOAT16) {
            __half h = __float2half_rn(v[i]);
            std::memcpy(&out[i * 2], &h, 2);
        } else {
            __nv_bfloat16 h = __float2bfloat16_rn(v[i]);
            std::memcpy(&out[i * 2], &h, 2);
        }
    }
}

// Integer-valued inputs in [-16, 16]: every partial sum of up to 8 ranks is exact in bf16.
inline void make_input(uint64_t seed, int rank, size_t count, std::vector<float> &v) {
    std::mt19937_64 rng(seed * 1000003ull + static_cast<uint64_t>(rank) * 7919ull + count);
    std::uniform_int_distribution<int> dist(-16, 16);
    v.resize(count);
    for (auto &x : v) x = static_cast<float>(dist(rng));
}

struct Shared {
    int ws = 0;
    size_t max_bytes = 0;
    std::vector<void *> signals;      // per rank
    std::vector<void *> inputs;       // per rank, registered
    std::vector<void *> outputs;      // per rank
    std::vector<void *> graph_inputs; // per rank, never registered up front
    std::vector<void *> timeout_signals;
    std::vector<std::vector<void *>> pending;  // per rank, graph inputs recorded in capture
    std::vector<void *> extra;        // per rank, scratch a test registers and unregisters itself
    std::vector<double> timing;       // rank 0's results
    uint64_t seed = 0;
    bool quick = false;
    bool timing_enabled = true;
    bool timing_only = false;
    bool exits_only = false;          // --exits-only: only the kernel exit-path tests (native_exits.cu)
    bool pdl_timing = true;
    uint32_t variants = 0;            // --variants MASK: ar4j_set_variants on every context the test makes
    bool variant_matrix = false;      // --variant-matrix: group 8 (native_variants.cu)
    bool variant_matrix_only = false; // --variant-matrix-only: group 8 alone
    bool variant_timing = true;       // --no-variant-timing: group 8 without its timing
    int blocks = 0;   // 0: the library's default launch configuration
    int threads = 0;
    int gpus = 0;     // ranks are spread over the GPUs: rank r drives GPU r % gpus
    int device_of(int rank) const { return rank % gpus; }
};

inline double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// ---- failure containment (ABI 0.3) ------------------------------------------------------

// A fresh group on sh.timeout_signals (zeroed), one context per rank with the given deadline,
// sh.inputs registered, launch geometry `blocks` x `threads` (0: the test's default), kernel
// variants `variants` (-1: sh.variants, the --variants option). Every rank's context exists (and
// is configured) when this returns.
inline ar4j_context *fresh_group(Shared &sh, int rank, std::barrier<> &sync, uint64_t deadline_ns, int blocks = 0,
                                 int threads = 0, int64_t variants = -1) {
    if (rank == 0) {
        for (int r = 0; r < sh.ws; ++r) {
            CHECK_CUDA(cudaSetDevice(sh.device_of(r)));
            CHECK_CUDA(cudaMemset(sh.timeout_signals[r], 0, ar4j_signal_size(sh.max_bytes)));
            CHECK_CUDA(cudaDeviceSynchronize());
        }
        CHECK_CUDA(cudaSetDevice(sh.device_of(rank)));
    }
    sync.arrive_and_wait();
    ar4j_context *ctx = nullptr;
    CHECK_AR(ar4j_context_create(&ctx, sh.timeout_signals.data(), rank, sh.ws, sh.max_bytes, 8, deadline_ns));
    CHECK_AR(ar4j_register_buffer(ctx, sh.inputs.data(), sh.max_bytes));
    if (blocks == 0) blocks = sh.blocks;
    if (threads == 0) threads = sh.threads > 0 ? sh.threads : 512;
    if (blocks > 0) CHECK_AR(ar4j_set_launch_config(ctx, blocks, threads));
    const uint32_t v = variants < 0 ? sh.variants : static_cast<uint32_t>(variants);
    if (v != 0) CHECK_AR(ar4j_set_variants(ctx, v));
    sync.arrive_and_wait();  // every context exists (push buffers filled) before anyone launches
    return ctx;
}

inline uint16_t nan_half(int dtype) { return dtype == AR4J_DTYPE_FLOAT16 ? 0x7e00 : 0x7fc0; }

// Number of elements of `bytes` at dev that are not the kernels' NaN for dtype.
inline size_t count_not_nan(const void *dev, size_t bytes, int dtype) {
    std::vector<uint8_t> h(bytes);
    CHECK_CUDA(cudaMemcpy(h.data(), dev, bytes, cudaMemcpyDeviceToHost));
    size_t bad = 0;
    if (dtype == AR4J_DTYPE_FLOAT32) {
        for (size_t i = 0; i + 4 <= bytes; i += 4) {
            uint32_t w;
            std::memcpy(&w, &h[i], 4);
            bad += w != 0x7fc00000u;
        }
    } else {
        for (size_t i = 0; i + 2 <= bytes; i += 2) {
            uint16_t w;
            std::memcpy(&w, &h[i], 2);
            bad += w != nan_half(dtype);
        }
    }
    return bad;
}

inline std::string describe(const ar4j_failure_info &f) {
    char b[256];
    std::snprintf(b, sizeof b, "poisoned=%d origin=%d reason=%d peer=%d block=%d own-timeout=%d (peer %d)", f.poisoned,
                  f.origin_rank, f.reason, f.peer, f.block, f.timeout.timed_out, f.timeout.peer);
    return b;
}

inline void say(const std::string &line) {
    std::lock_guard<std::mutex> lock(g_print);
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
}

inline double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// ---- the test groups ------------------------------------------------------------------------

// native_correctness.cu: 1. correctness, 2. graph capture, 3. validation, 3b. PDL.
void run_correctness(Shared &sh, int rank, ar4j_context *ctx, cudaStream_t stream, bool quick, const char *tag);
void run_push_sentinels(Shared &sh, int rank, ar4j_context *ctx, cudaStream_t stream);
void run_graph(Shared &sh, int rank, ar4j_context *ctx, cudaStream_t stream, std::barrier<> &sync);
void run_validation(Shared &sh, int rank, ar4j_context *ctx, cudaStream_t stream);
void run_pdl_chain(Shared &sh, int rank, ar4j_context *ctx, cudaStream_t stream, std::barrier<> &sync);

// native_containment.cu: 4. timeout, 6. failure containment.
void run_timeout(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync, int algo);
void run_wrap(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync);
void run_geometry(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync);
void run_host_poison(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync);
void run_poison_graph(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync);
void run_concurrent(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync, int algo);

// native_exits.cu: 7. exit paths: a peer's input overwritten after it gave up, a final barrier
// that gives up, poison passed on by the kernels, ar4j_poison past a failing copy, the signal size
// and geometry word limits; native_slots.cu: a failed launch that records nothing, unregistering
// against live graphs, a replay before registration.
void run_overwritten_input(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync, int algo, bool fused);
void run_final_barrier_gives_up(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync);
void run_poison_passed_on(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync);
void run_poison_failing_copy(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync);
void run_failed_launch_records_nothing(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync);
void run_unregister(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync);
void run_replay_before_registration(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync);
void run_limits(Shared &sh, int rank, std::barrier<> &sync);

// native_variants.cu: 8. the kernel variants (ar4j_set_variants): the API and the agreement check,
// the correctness matrix, graph and PDL chain per variant, and the timing of each against the default.
void run_variant_api(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync);
void run_variant_matrix(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync);
void run_variant_timing(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync);

// native_timing.cu: 5. timing, PDL off against on, and the call overhead (--call-overhead).
void run_pdl_timing(Shared &sh, int rank, ar4j_context *ctx, cudaStream_t stream, std::barrier<> &sync);
void run_timing(Shared &sh, int rank, ar4j_context *ctx, cudaStream_t stream, std::barrier<> &sync);
int run_call_overhead();

}  // namespace native_test
