// Timing of ar4j_llama_linear_rows on the llama3-8b shapes (TP 1): bytes of W streamed per second,
// in a CUDA graph of 20 launches, median of 15 replays (`ar4j_llama_kernels_test --bench-linear`).
#pragma once

#include <algorithm>
#include <vector>

#include "test_support.h"

namespace test {

inline void bench_linear_rows() {
    struct Shape { const char *name; int32_t n, k; };
    const Shape shapes[] = {{"qkv", 6144, 4096}, {"o_proj", 4096, 4096}, {"gate_up", 28672, 4096},
                            {"down", 4096, 14336}, {"lm_head", 128256, 4096}};
    printf("# linear_rows: W bytes / time (GB/s), CUDA graph of 20 launches, median of 15 replays\n");
    printf("# %-8s %7s %6s %5s %10s %8s\n", "shape", "n", "k", "rows", "us/launch", "GB/s");
    cudaStream_t stream;
    TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    for (const Shape &s : shapes) {
        DeviceBuffer w(size_t(s.n) * s.k * 2), x(size_t(8) * s.k * 2), y(size_t(8) * s.n * 2);
        TEST_CUDA(cudaMemset(w.get(), 0x3c, w.bytes()));
        TEST_CUDA(cudaMemset(x.get(), 0x3c, x.bytes()));
        for (int32_t rows : {1, 3}) {
            cudaGraph_t graph;
            cudaGraphExec_t exec;
            TEST_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
            for (int i = 0; i < 20; ++i) {
                ar4j_llama_linear_rows(w.get(), x.get(), s.k, y.get(), s.n, rows, s.n, s.k, 1, stream);
            }
            TEST_CUDA(cudaStreamEndCapture(stream, &graph));
            TEST_CUDA(cudaGraphInstantiate(&exec, graph, 0));
            cudaEvent_t a, b;
            TEST_CUDA(cudaEventCreate(&a));
            TEST_CUDA(cudaEventCreate(&b));
            std::vector<float> ms;
            for (int rep = 0; rep < 17; ++rep) {
                TEST_CUDA(cudaEventRecord(a, stream));
                TEST_CUDA(cudaGraphLaunch(exec, stream));
                TEST_CUDA(cudaEventRecord(b, stream));
                TEST_CUDA(cudaEventSynchronize(b));
                float t = 0;
                TEST_CUDA(cudaEventElapsedTime(&t, a, b));
                if (rep >= 2) ms.push_back(t);
            }
            std::sort(ms.begin(), ms.end());
            const double us = ms[ms.size() / 2] * 1000.0 / 20;
            printf("  %-8s %7d %6d %5d %10.2f %8.0f\n", s.name, s.n, s.k, rows, us, double(w.bytes()) / (us * 1e3));
            TEST_CUDA(cudaEventDestroy(a));
            TEST_CUDA(cudaEventDestroy(b));
            TEST_CUDA(cudaGraphExecDestroy(exec));
            TEST_CUDA(cudaGraphDestroy(graph));
        }
    }
    TEST_CUDA(cudaStreamDestroy(stream));
}

}  // namespace test
