// The benches' timing: one CUDA graph of many launches, CUDA events around 15 replays after 2
// warm-ups, the median replay divided by the launches.
#pragma once

#include <algorithm>
#include <functional>
#include <vector>

#include "test_support.h"

namespace test {

// Median time of one launch (us) of `enqueue(i)` for i in [0, launches), captured in one graph.
// enqueue returns its launch's status; if any is not 0, it is printed and the result is -1.
inline double graph_median_us(cudaStream_t stream, int launches, const std::function<int(int)> &enqueue) {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    int rc = 0;
    TEST_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < launches; ++i) {
        const int r = enqueue(i);
        if (rc == 0) rc = r;
    }
    TEST_CUDA(cudaStreamEndCapture(stream, &graph));
    if (rc != 0) {
        printf("  launch failed: %s (%d)\n", ar4j_llama_error_string(rc), rc);
        cudaGraphDestroy(graph);
        return -1.0;
    }
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
    TEST_CUDA(cudaEventDestroy(a));
    TEST_CUDA(cudaEventDestroy(b));
    TEST_CUDA(cudaGraphExecDestroy(exec));
    TEST_CUDA(cudaGraphDestroy(graph));
    return ms[ms.size() / 2] * 1000.0 / launches;
}

}  // namespace test
