// The harness of ar4j_fused_test (fused_test.cu): checks and their tally, printing, dtype
// conversion on the host, random data, device allocation. Header-only, one translation unit.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ar4j/custom_all_reduce.h"
#include "ar4j/residual_rmsnorm.h"

namespace fused_test {

inline std::mutex g_print;
inline std::atomic<int> g_passed{0}, g_failed{0};

#define CHECK_CUDA(call)                                                                              \
    do {                                                                                              \
        cudaError_t e_ = (call);                                                                      \
        if (e_ != cudaSuccess) {                                                                      \
            std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, cudaGetErrorName(e_)); \
            std::fflush(stdout);                                                                      \
            std::_Exit(2);                                                                            \
        }                                                                                             \
    } while (0)

#define CHECK_AR(call)                                                                                \
    do {                                                                                              \
        int s_ = (call);                                                                              \
        if (s_ != AR4J_SUCCESS) {                                                                     \
            std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, ar4j_status_name(s_)); \
            std::fflush(stdout);                                                                      \
            std::_Exit(2);                                                                            \
        }                                                                                             \
    } while (0)

inline void record(bool ok, const std::string &what) {
    if (ok) {
        g_passed++;
    } else {
        g_failed++;
        std::lock_guard<std::mutex> lock(g_print);
        std::printf("FAIL %s\n", what.c_str());
        std::fflush(stdout);
    }
}

inline void say(const std::string &s) {
    std::lock_guard<std::mutex> lock(g_print);
    std::printf("%s\n", s.c_str());
    std::fflush(stdout);
}

inline const char *dtype_name(int d) { return d == AR4J_DTYPE_FLOAT32 ? "fp32" : d == AR4J_DTYPE_FLOAT16 ? "fp16" : "bf16"; }
inline size_t esize(int d) { return d == AR4J_DTYPE_FLOAT32 ? 4 : 2; }

inline float to_float(int d, const uint8_t *p) {
    if (d == AR4J_DTYPE_FLOAT32) { float f; std::memcpy(&f, p, 4); return f; }
    if (d == AR4J_DTYPE_FLOAT16) { __half h; std::memcpy(&h, p, 2); return __half2float(h); }
    __nv_bfloat16 h; std::memcpy(&h, p, 2); return __bfloat162float(h);
}
inline void from_float(int d, float v, uint8_t *p) {
    if (d == AR4J_DTYPE_FLOAT32) { std::memcpy(p, &v, 4); return; }
    if (d == AR4J_DTYPE_FLOAT16) { __half h = __float2half_rn(v); std::memcpy(p, &h, 2); return; }
    __nv_bfloat16 h = __float2bfloat16_rn(v); std::memcpy(p, &h, 2);
}
inline float round_to(int d, float v) { uint8_t b[4]; from_float(d, v, b); return to_float(d, b); }

inline void fill_random(int d, uint64_t seed, size_t n, float lo, float hi, std::vector<uint8_t> &out) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    out.resize(n * esize(d));
    for (size_t i = 0; i < n; ++i) from_float(d, dist(rng), &out[i * esize(d)]);
}

inline size_t count_not_nan(int d, const std::vector<uint8_t> &v) {
    size_t n = 0;
    for (size_t i = 0; i < v.size() / esize(d); ++i) n += std::isnan(to_float(d, &v[i * esize(d)])) ? 0 : 1;
    return n;
}

inline void *dalloc(size_t n) {
    void *p = nullptr;
    CHECK_CUDA(cudaMalloc(&p, n));
    return p;
}

inline double tolerance(int d) { return d == AR4J_DTYPE_FLOAT32 ? 1e-5 : d == AR4J_DTYPE_FLOAT16 ? 2e-3 : 1.6e-2; }

inline size_t count_differing(int d, const std::vector<uint8_t> &a, const std::vector<uint8_t> &b) {
    size_t n = 0;
    for (size_t i = 0; i < a.size() / esize(d); ++i) n += std::memcmp(&a[i * esize(d)], &b[i * esize(d)], esize(d)) != 0;
    return n;
}

inline std::vector<uint8_t> to_host(const void *p, size_t bytes) {
    std::vector<uint8_t> v(bytes);
    CHECK_CUDA(cudaMemcpy(v.data(), p, bytes, cudaMemcpyDeviceToHost));
    return v;
}

// The unfused reference against the host, for one case: tmp (the device all-reduce) must be the
// rank-order fp32 sum of every rank's input (regenerated from their seeds: input_seed + rank,
// values in [-1, 1)), ref_ro exactly round(tmp + res), ref_o within tolerance of a double norm.
// Returns the number of elements off; *worst gets the largest relative error of ref_o.
inline size_t reference_off_host(int d, int ws, uint64_t input_seed, size_t rows, size_t hidden, float eps,
                                 const std::vector<uint8_t> &tmp, const std::vector<uint8_t> &res,
                                 const std::vector<uint8_t> &w, const std::vector<uint8_t> &ref_o,
                                 const std::vector<uint8_t> &ref_ro, double *worst) {
    const size_t n = rows * hidden, es = esize(d);
    size_t bad = 0;
    *worst = 0;
    for (size_t r = 0; r < rows; ++r) {
        double sq = 0;
        std::vector<float> rr(hidden);
        for (size_t i = 0; i < hidden; ++i) {
            const size_t k = r * hidden + i;
            rr[i] = round_to(d, to_float(d, &tmp[k * es]) + to_float(d, &res[k * es]));
            sq += (double)rr[i] * rr[i];
            if (round_to(d, rr[i]) != to_float(d, &ref_ro[k * es])) bad++;
        }
        const double inv = 1.0 / std::sqrt(sq / hidden + eps);
        for (size_t i = 0; i < hidden; ++i) {
            const size_t k = r * hidden + i;
            const double want = rr[i] * inv * to_float(d, &w[i * es]);
            const double err = std::fabs(to_float(d, &ref_o[k * es]) - want) / std::max(1.0, std::fabs(want));
            if (!(err <= tolerance(d))) bad++;
            if (err > *worst || std::isnan(err)) *worst = std::isnan(err) ? 1e30 : err;
        }
    }
    std::vector<float> sum(n, 0.f);
    for (int r = 0; r < ws; ++r) {
        std::vector<uint8_t> pin;
        fill_random(d, input_seed + r, n, -1.f, 1.f, pin);
        for (size_t i = 0; i < n; ++i) sum[i] = r == 0 ? to_float(d, &pin[i * es]) : sum[i] + to_float(d, &pin[i * es]);
    }
    for (size_t i = 0; i < n; ++i) {
        if (!(round_to(d, sum[i]) == to_float(d, &tmp[i * es]))) bad++;
    }
    return bad;
}

}  // namespace fused_test
