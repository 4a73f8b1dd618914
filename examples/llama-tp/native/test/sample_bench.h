// Timing of ar4j_llama_sample on one row of a llama3 vocabulary (128256 bf16 logits, as a decode step samples):
// `ar4j_llama_kernels_test --bench-sample`. Logits like a real LM head's (most near 0, a few large), and the
// same logits with a flat spread, for greedy-like and wide settings; CUDA events around 200 launches after 20
// warm-ups, microseconds per launch. Compare with `ar4j_llama_argmax` on the same row (the greedy path).
#pragma once

#include "test_support.h"

namespace test {

inline void bench_sample() {
    const int32_t n = 128256;
    std::vector<uint16_t> peaked(static_cast<size_t>(n)), flat = random_bf16(static_cast<size_t>(n), -4.0f, 4.0f);
    for (int32_t j = 0; j < n; ++j) {
        const float x = std::normal_distribution<float>(0.0f, 2.5f)(rng());
        peaked[size_t(j)] = to_bf16(j % 4099 == 0 ? 18.0f + x : x);  // ~31 logits far above the rest
    }
    DeviceBuffer logits(size_t(n) * 2), out(4), value(4), state(16), status(4);
    TEST_CUDA(cudaMemset(state.get(), 0, 16));
    TEST_CUDA(cudaMemset(status.get(), 0, 4));
    cudaEvent_t start, stop;
    TEST_CUDA(cudaEventCreate(&start));
    TEST_CUDA(cudaEventCreate(&stop));
    auto time = [&](auto launch) -> double {
        int rc = 0;
        for (int i = 0; i < 20; ++i) rc |= launch();
        TEST_CUDA(cudaEventRecord(start));
        for (int i = 0; i < 200; ++i) rc |= launch();
        TEST_CUDA(cudaEventRecord(stop));
        sync();
        float ms = 0;
        TEST_CUDA(cudaEventElapsedTime(&ms, start, stop));
        return rc == 0 ? ms * 1000.0 / 200 : -1.0;
    };
    printf("# sample: one row of %d bf16 logits; us per launch (200 after 20 warm-ups)\n", n);
    printf("# %-8s %-6s %5s %6s %5s %9s\n", "logits", "kernel", "T", "top-k", "top-p", "us");
    struct Setting { float t; int32_t k; float p; };
    const Setting settings[] = {{1.0f, 0, 1.0f}, {0.7f, 50, 1.0f}, {0.7f, 0, 0.9f}, {1.0f, 50, 0.9f}, {2.0f, 0, 0.95f}};
    for (int which = 0; which < 2; ++which) {
        logits.upload(which == 0 ? peaked : flat);
        const char *name = which == 0 ? "peaked" : "flat";
        const double argmax_us = time([&] {
            return ar4j_llama_argmax(AR4J_LLAMA_DTYPE_BFLOAT16, logits.get(), n, 1, n, 0, out.as<int32_t>(),
                                     value.as<float>(), 1, nullptr);
        });
        printf("  %-8s %-6s %5s %6s %5s %9.2f\n", name, "argmax", "-", "-", "-", argmax_us);
        for (const Setting &s : settings) {
            const double us = time([&] {
                return ar4j_llama_sample(logits.get(), n, 1, n, s.t, s.k, s.p, 7, state.get(), 0, out.as<int32_t>(),
                                         status.as<int32_t>(), 1, nullptr);
            });
            printf("  %-8s %-6s %5.2f %6d %5.2f %9.2f\n", name, "sample", s.t, s.k, s.p, us);
        }
    }
    TEST_CUDA(cudaEventDestroy(start));
    TEST_CUDA(cudaEventDestroy(stop));
}

}  // namespace test
