// What an L2 prefetch of a product's weight buys when kernels that read little memory run before
// the product (`ar4j_llama_kernels_test --bench-prefetch`): per "layer" a stand-in for RoPE +
// attention or a norm (a kernel that only waits a given time), then the rows kernel on that
// layer's own weight (the weights together >= 1 GiB, so each comes from HBM unless prefetched),
// with or without ar4j_llama_prefetch_l2 of the weight's first P bytes: in line before the stand-in
// ("serial": the stand-in waits for it), or on a second stream forked before the stand-in and
// joined at the end of the graph ("side": as the engine issues it). One CUDA graph, PDL, median
// of 15 replays; microseconds per layer.
#pragma once

#include <algorithm>
#include <vector>

#include "graph_timing.h"

namespace test {

// Waits `cycles` SM clock cycles, touching no memory; PDL as the engine's small kernels (wait, then
// let the next start).
__global__ void idle_kernel(long long cycles) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
    const long long start = clock64();
    while (clock64() - start < cycles) {
    }
}

inline int launch_idle(long long cycles, cudaStream_t stream) {
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(16);
    config.blockDim = dim3(128);
    config.stream = stream;
    cudaLaunchAttribute attribute[1];
    attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute[0].val.programmaticStreamSerializationAllowed = 1;
    config.attrs = attribute;
    config.numAttrs = 1;
    return int(cudaLaunchKernelEx(&config, idle_kernel, cycles));
}

inline void bench_prefetch() {
    struct Shape { const char *name; int32_t n, k; };
    const Shape shapes[] = {{"o_proj", 4096, 4096}, {"qkv", 6144, 4096}, {"down", 4096, 14336}};
    int device = 0, clock_khz = 0, l2 = 0;
    TEST_CUDA(cudaGetDevice(&device));
    TEST_CUDA(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device));
    TEST_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
    printf("# prefetch: us per layer of [prefetch of W's first P MiB] + a kernel idle for G us + linear_rows(W), 1 row;"
           " each layer its own W (>= 1 GiB in all); L2 %d MiB\n", l2 >> 20);
    printf("# %-8s %6s %7s %8s %7s %10s %10s\n", "shape", "MiB", "idle_us", "P_MiB", "where", "us/layer", "saved_us");
    cudaStream_t stream, side;
    TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    TEST_CUDA(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    cudaEvent_t fork, join;
    TEST_CUDA(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    TEST_CUDA(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
    DeviceBuffer x(size_t(8) * 14336 * 2), y(size_t(8) * 28672 * 2);
    TEST_CUDA(cudaMemset(x.get(), 0x3c, x.bytes()));
    for (const Shape &s : shapes) {
        const size_t bytes = size_t(s.n) * s.k * 2;
        const int copies = int(std::max<size_t>(32, ((size_t(1) << 30) + bytes - 1) / bytes));
        DeviceBuffer w(bytes * copies);
        TEST_CUDA(cudaMemset(w.get(), 0x3c, w.bytes()));
        auto weight = [&](int i) { return static_cast<const char *>(w.get()) + bytes * size_t(i % copies); };
        for (double idle_us : {0.0, 10.0}) {
            const long long cycles = (long long)(idle_us * clock_khz / 1000.0);
            double base = 0;
            size_t last = SIZE_MAX;
            for (size_t prefetch_mib : {size_t(0), size_t(8), size_t(32)}) {
                const size_t p = std::min(bytes, prefetch_mib << 20);
                if (p == last) continue;  // the whole weight already
                last = p;
                for (int on_side = 0; on_side < (p > 0 ? 2 : 1); ++on_side) {
                    const double us = graph_median_us(stream, copies, [&](int i) {
                        int rc = 0;
                        if (p > 0 && on_side) {
                            rc = int(cudaEventRecord(fork, stream));
                            if (rc == 0) rc = int(cudaStreamWaitEvent(side, fork, 0));
                            if (rc == 0) rc = ar4j_llama_prefetch_l2(weight(i), p, 0, side);
                        } else if (p > 0) {
                            rc = ar4j_llama_prefetch_l2(weight(i), p, 1, stream);
                        }
                        if (rc == 0 && cycles > 0) rc = launch_idle(cycles, stream);
                        if (rc == 0) rc = ar4j_llama_linear_rows(weight(i), x.get(), s.k, y.get(), s.n, 1, s.n, s.k, 1, stream);
                        if (rc == 0 && p > 0 && on_side && i == copies - 1) {
                            rc = int(cudaEventRecord(join, side));
                            if (rc == 0) rc = int(cudaStreamWaitEvent(stream, join, 0));
                        }
                        return rc;
                    });
                    if (p == 0) base = us;
                    printf("  %-8s %6zu %7.1f %8.1f %7s %10.2f %10.2f\n", s.name, bytes >> 20, idle_us, double(p) / (1 << 20),
                           p == 0 ? "-" : on_side ? "side" : "serial", us, base - us);
                }
            }
        }
    }
    TEST_CUDA(cudaEventDestroy(fork));
    TEST_CUDA(cudaEventDestroy(join));
    TEST_CUDA(cudaStreamDestroy(side));
    TEST_CUDA(cudaStreamDestroy(stream));
}

}  // namespace test
