// Timing of the rows product's two kernels (registers, bulk-copy ring) and its fused forms on the llama3-8b shapes and their TP shards:
// bytes of W streamed per second, each launch reading a different weight buffer (the buffers
// together >= 1 GiB, so W comes from HBM, not from the 50 MB L2), in one CUDA graph with PDL,
// median of 15 replays (`ar4j_llama_kernels_test --bench-linear`).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "graph_timing.h"

namespace test {

// The floor the rows kernel is measured against: a read-only stream of the same bytes (16-byte
// non-coherent loads, 8 in flight per thread, a grid of 4 blocks of 256 per SM), its XOR kept so
// the loads are not optimised away.
__global__ void __launch_bounds__(256) read_stream_kernel(const uint4 *p, size_t chunks, uint32_t *sink) {
    uint32_t x = 0;
    const size_t stride = size_t(gridDim.x) * blockDim.x;
    size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    for (; i + 7 * stride < chunks; i += 8 * stride) {
        uint4 v[8];
#pragma unroll
        for (int u = 0; u < 8; ++u) v[u] = __ldg(p + i + u * stride);
#pragma unroll
        for (int u = 0; u < 8; ++u) x ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
    for (; i < chunks; i += stride) {
        const uint4 v = __ldg(p + i);
        x ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (x == 0x9e3779b9u) sink[0] = x;  // practically never: keeps the loads
}

inline void bench_read_floor(cudaStream_t stream) {
    int device = 0, sms = 0;
    TEST_CUDA(cudaGetDevice(&device));
    TEST_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    DeviceBuffer sink(64);
    for (size_t bytes : {size_t(50331648), size_t(234881024), size_t(1) << 30}) {
        const int copies = int(std::max<size_t>(1, ((size_t(1) << 31) + bytes - 1) / bytes));
        DeviceBuffer w(bytes * copies);
        TEST_CUDA(cudaMemset(w.get(), 0x3c, w.bytes()));
        const double us = graph_median_us(stream, std::max(copies, 8), [&](int i) {
            read_stream_kernel<<<4 * sms, 256, 0, stream>>>(
                reinterpret_cast<const uint4 *>(static_cast<const char *>(w.get()) + bytes * size_t(i % copies)),
                bytes / 16, sink.as<uint32_t>());
            return int(cudaGetLastError());
        });
        printf("  %-10s %7s %6s %5s %7s %10.2f %8.0f   (read-only stream of %zu MiB: the floor)\n", "stream", "-", "-",
               "-", "-", us, double(bytes) / (us * 1e3), bytes >> 20);
    }
}

// quick: llama3-8b's TP 1 shapes at one row and the library's own split count only.
inline void bench_linear_rows(bool quick) {
    struct Shape { const char *name; int32_t n, k; };
    const Shape shapes[] = {
        {"qkv", 6144, 4096}, {"o_proj", 4096, 4096}, {"gate_up", 28672, 4096}, {"down", 4096, 14336},
        {"lm_head", 128256, 4096},
        {"qkv/2", 3072, 4096}, {"o/2", 4096, 2048}, {"gate_up/2", 14336, 4096}, {"down/2", 4096, 7168},
        {"qkv/4", 1536, 4096}, {"o/4", 4096, 1024}, {"gate_up/4", 7168, 4096}, {"down/4", 4096, 3584},
        {"qkv/8", 768, 4096}, {"o/8", 4096, 512}, {"gate_up/8", 3584, 4096}, {"down/8", 4096, 1792},
        {"lm_head/8", 16032, 4096}};
    const size_t kRotation = size_t(1) << 30;  // distinct weight bytes per graph: >= 1 GiB
    printf("# linear_rows: W bytes / time (GB/s); each launch a different W (>= 1 GiB in all), one graph, PDL;"
           " median of 15 replays\n");
    printf("# %-10s %7s %6s %5s %7s %10s %8s %s\n", "shape", "n", "k", "rows", "splits", "us/launch", "GB/s", "kernel");
    cudaStream_t stream;
    TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    DeviceBuffer x(size_t(8) * 14336 * 2), y(size_t(8) * 128256 * 2);
    TEST_CUDA(cudaMemset(x.get(), 0x3c, x.bytes()));
    bench_read_floor(stream);
    int device = 0, major = 0;
    TEST_CUDA(cudaGetDevice(&device));
    TEST_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    std::vector<int32_t> kernels = {AR4J_LLAMA_LINEAR_ROWS_REGISTERS};
    if (major >= 9) kernels.push_back(AR4J_LLAMA_LINEAR_ROWS_RING);
    for (const Shape &s : shapes) {
        if (quick && strchr(s.name, '/') != nullptr) continue;
        const size_t bytes = size_t(s.n) * s.k * 2;
        const int copies = int(std::max<size_t>(1, (kRotation + bytes - 1) / bytes));
        const int launches = std::max(copies, 8);
        DeviceBuffer w(bytes * copies);
        TEST_CUDA(cudaMemset(w.get(), 0x3c, w.bytes()));
        auto weight = [&](int i) { return static_cast<const char *>(w.get()) + bytes * size_t(i % copies); };
        for (int32_t kernel : kernels) {
            TEST_CUDA(cudaError_t(ar4j_llama_set_linear_rows_kernel(kernel)));
            const char *name = kernel == AR4J_LLAMA_LINEAR_ROWS_RING ? "ring" : "registers";
            for (int32_t rows : {1, 3, 8}) {
                for (int32_t splits : {0, 1, 2, 4, 8}) {
                    if ((rows != 1 || quick) && splits != 0) continue;
                    if (quick && rows != 1) continue;
                    const double us = graph_median_us(stream, launches, [&](int i) {
                        return ar4j_llama_linear_rows_split(weight(i), x.get(), s.k, y.get(), s.n, rows, s.n, s.k, splits,
                                                            1, stream);
                    });
                    printf("  %-10s %7d %6d %5d %7s %10.2f %8.0f %s\n", s.name, s.n, s.k, rows,
                           splits == 0 ? "auto" : std::to_string(splits).c_str(), us, double(bytes) / (us * 1e3), name);
                }
            }
        }
        TEST_CUDA(cudaError_t(ar4j_llama_set_linear_rows_kernel(AR4J_LLAMA_LINEAR_ROWS_AUTO)));
        if (quick) continue;
        if (strncmp(s.name, "gate_up", 7) == 0) {
            for (int32_t rows : {1, 3}) {
                const double us = graph_median_us(stream, launches, [&](int i) {
                    return ar4j_llama_linear_rows_silu_mul(weight(i), x.get(), s.k, y.get(), s.n / 2, rows, s.n / 2, s.k, 0, 1,
                                                    stream);
                });
                printf("  %-10s %7d %6d %5d %7s %10.2f %8.0f   (+ SwiGLU epilogue, automatic kernel)\n", s.name, s.n, s.k, rows, "auto",
                       us, double(bytes) / (us * 1e3));
            }
        }
        if (strncmp(s.name, "lm_head", 7) == 0) {
            DeviceBuffer ws(ar4j_llama_linear_rows_argmax_workspace_bytes(8, s.n)), index(64), value(64);
            TEST_CUDA(cudaMemset(ws.get(), 0, ws.bytes()));
            for (int32_t rows : {1, 3}) {
                const double us = graph_median_us(stream, launches, [&](int i) {
                    return ar4j_llama_linear_rows_argmax(weight(i), x.get(), s.k, y.get(), s.n, rows, s.n, s.k, s.n, 0,
                                                  index.as<int32_t>(), value.as<float>(), ws.get(), ws.bytes(), 1,
                                                  stream);
                });
                printf("  %-10s %7d %6d %5d %7s %10.2f %8.0f   (+ argmax epilogue, automatic kernel)\n", s.name, s.n, s.k, rows, "1", us,
                       double(bytes) / (us * 1e3));
            }
        }
    }
    TEST_CUDA(cudaStreamDestroy(stream));
}

}  // namespace test
