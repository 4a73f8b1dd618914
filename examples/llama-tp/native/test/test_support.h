// What kernels_test.cu's checks share: bf16 on the host, device buffers, random data, the tally.
#pragma once

#include <cuda_runtime.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmath>
#include <random>
#include <vector>

#include "ar4j_llama/kernels.h"

namespace test {

// ---- bf16 on the host (round to nearest even, NaN kept quiet) ----
inline uint16_t to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return uint16_t(u >> 16);
}
inline float from_bf16(uint16_t h) {
    uint32_t u = uint32_t(h) << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
inline float rb(float x) { return from_bf16(to_bf16(x)); }  // rounded to bf16 and back

// torch.argmax of row[0 .. cols): the first NaN, else the first of the largest values.
inline int reference_argmax(const float *row, int cols) {
    int best = 0;
    for (int c = 1; c < cols; ++c) {
        if (std::isnan(row[best])) break;
        if (std::isnan(row[c]) || row[c] > row[best]) best = c;
    }
    return best;
}
inline uint32_t bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
// One bf16 unit in the last place at the magnitude of x.
inline float bf16_ulp(float x) {
    int e;
    std::frexp(x == 0.0f ? 1e-30f : x, &e);
    return std::ldexp(1.0f, e - 8);
}

// ---- the tally ----
struct Tally {
    int passed = 0;
    int failed = 0;
};
inline Tally &tally() {
    static Tally t;
    return t;
}
// Records one check and prints it with its detail.
inline bool check(bool ok, const char *name, const char *detail_format, ...) __attribute__((format(printf, 3, 4)));
inline bool check(bool ok, const char *name, const char *detail_format, ...) {
    char detail[512];
    va_list args;
    va_start(args, detail_format);
    vsnprintf(detail, sizeof detail, detail_format, args);
    va_end(args);
    if (ok) {
        tally().passed++;
        printf("  ok    %s %s\n", name, detail);
    } else {
        tally().failed++;
        printf("  FAIL  %s %s\n", name, detail);
    }
    return ok;
}

// Aborts the program on a CUDA runtime failure of the test's own (not of the library under test).
#define TEST_CUDA(call)                                                                        \
    do {                                                                                       \
        cudaError_t e_ = (call);                                                               \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(2);                                                                           \
        }                                                                                      \
    } while (0)

// ---- device memory, one owner each ----
class DeviceBuffer {
public:
    explicit DeviceBuffer(size_t bytes) : bytes_(bytes) { TEST_CUDA(cudaMalloc(&ptr_, bytes ? bytes : 1)); }
    ~DeviceBuffer() { cudaFree(ptr_); }
    DeviceBuffer(const DeviceBuffer &) = delete;
    DeviceBuffer &operator=(const DeviceBuffer &) = delete;
    void *get() const { return ptr_; }
    template <typename T>
    T *as() const { return static_cast<T *>(ptr_); }
    size_t bytes() const { return bytes_; }
    // All bytes 0xFF: NaN for bf16 and fp32, -1 for int32.
    void poison() { TEST_CUDA(cudaMemset(ptr_, 0xFF, bytes_)); }
    template <typename T>
    void upload(const std::vector<T> &host) {
        TEST_CUDA(cudaMemcpy(ptr_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
    }
    template <typename T>
    std::vector<T> download(size_t count) const {
        std::vector<T> host(count);
        TEST_CUDA(cudaMemcpy(host.data(), ptr_, count * sizeof(T), cudaMemcpyDeviceToHost));
        return host;
    }

private:
    void *ptr_ = nullptr;
    size_t bytes_;
};

// ---- random data ----
inline std::mt19937_64 &rng() {
    static std::mt19937_64 engine;
    return engine;
}
inline float uniform(float lo, float hi) { return std::uniform_real_distribution<float>(lo, hi)(rng()); }
inline int32_t uniform_int(int32_t lo, int32_t hi) { return std::uniform_int_distribution<int32_t>(lo, hi)(rng()); }
inline std::vector<uint16_t> random_bf16(size_t count, float lo, float hi) {
    std::vector<uint16_t> v(count);
    for (auto &x : v) x = to_bf16(uniform(lo, hi));
    return v;
}

inline int32_t device_status_word(const DeviceBuffer &status) { return status.download<int32_t>(1)[0]; }
inline void sync() { TEST_CUDA(cudaDeviceSynchronize()); }

}  // namespace test
