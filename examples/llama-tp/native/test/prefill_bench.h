// Timing of ar4j_llama_prefill_attention on llama3-8b's shapes at TP 1 (32 query heads, 8 KV heads,
// head_dim 128): `ar4j_llama_kernels_test --bench-prefill`. A prompt of P tokens in chunks of C, as the
// engine's chunked prefill runs it: chunk i attends its own rows causally and every key before it. One
// CUDA graph holds one layer's calls (P / C of them; Q, K and V random, fixed seeds); CUDA events around 15
// replays after 2 warm-ups, the median replay; then a hash of the output's bits (poisoned with NaN before the
// shape's calls), so that two builds can be compared bit for bit on the same inputs. "TFLOP/s" counts the causal attention's products: 4 * head_dim * heads *
// P (P + 1) / 2 FLOPs (a query-key pair of a head: head_dim multiply-adds in Q K^T and head_dim in P V).
#pragma once

#include <cstdio>
#include <vector>

#include "graph_timing.h"

namespace test {

inline void bench_prefill_attention() {
    constexpr int32_t heads = 32, kv = 8, hd = 128, max_prompt = 32768;
    constexpr int64_t qkv_stride = int64_t(heads + 2 * kv) * hd;  // the fused QKV projection's row
    constexpr int64_t kv_stride = int64_t(kv) * hd;
    printf("# prefill attention: llama3-8b TP 1 (32/8 heads x 128, bf16); one layer's chunks in a graph, "
           "median of 15 replays\n");
    printf("# %7s %6s %12s %12s %9s   %s\n", "prompt", "chunk", "ms/layer", "ms/32 layers", "TFLOP/s",
           "out: FNV-1a of the output's bits");
    cudaStream_t stream;
    TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    DeviceBuffer qkv(size_t(max_prompt) * qkv_stride * 2), k(size_t(max_prompt) * kv_stride * 2),
        v(size_t(max_prompt) * kv_stride * 2), out(size_t(max_prompt) * heads * hd * 2);
    const DeviceBuffer *inputs[] = {&qkv, &k, &v};
    const int64_t widths[] = {qkv_stride, kv_stride, kv_stride};
    for (int i = 0; i < 3; ++i) {
        const int rc = ar4j_llama_fill_random_bf16(inputs[i]->get(), max_prompt, widths[i], widths[i], 0, 0, widths[i],
                                                   11 + i, 1.0f, stream);
        if (rc != 0) {
            fprintf(stderr, "bench_prefill_attention: fill_random_bf16: %s (%d)\n", ar4j_llama_error_string(rc), rc);
            exit(2);
        }
    }
    TEST_CUDA(cudaStreamSynchronize(stream));
    const float scale = 0.08838834764831845f;
    const uint16_t *q = qkv.as<uint16_t>();
    struct Shape { int32_t prompt, chunk; };
    for (const Shape s : {Shape{4096, 1024}, Shape{4096, 4096}, Shape{8192, 1024}, Shape{8192, 2048},
                          Shape{8192, 8192}, Shape{32768, 1024}, Shape{32768, 8192}}) {
        const int32_t chunks = s.prompt / s.chunk;
        // The output poisoned first (0xffff: a bf16 NaN), so that the hash below is of what this shape's calls wrote.
        TEST_CUDA(cudaMemsetAsync(out.get(), 0xff, size_t(s.prompt) * heads * hd * 2, stream));
        TEST_CUDA(cudaStreamSynchronize(stream));
        const double us = graph_median_us(stream, chunks, [&](int32_t i) {
            const int64_t row = int64_t(i) * s.chunk;
            return ar4j_llama_prefill_attention(q + row * qkv_stride, qkv_stride, k.get(), v.get(), kv_stride,
                                                out.as<uint16_t>() + row * heads * hd, int64_t(heads) * hd, s.chunk,
                                                int32_t(row), heads, kv, hd, scale, 1, stream);
        });
        if (us < 0) continue;
        const double layer_ms = us * chunks / 1e3;
        const double flops = 4.0 * hd * heads * (double(s.prompt) * (s.prompt + 1) / 2);
        // The output's bits (FNV-1a of the prompt's rows), to compare builds: the same inputs, the same bits?
        std::vector<uint16_t> host(size_t(s.prompt) * heads * hd);
        TEST_CUDA(cudaMemcpy(host.data(), out.get(), host.size() * 2, cudaMemcpyDeviceToHost));
        uint64_t hash = 0xcbf29ce484222325ull;
        size_t nan = 0;
        for (uint16_t x : host) {
            hash = (hash ^ x) * 0x100000001b3ull;
            nan += (x & 0x7f80) == 0x7f80 && (x & 0x007f) != 0;
        }
        printf("  %7d %6d %12.3f %12.1f %9.1f   out %016llx%s\n", s.prompt, s.chunk, layer_ms, 32 * layer_ms,
               flops / (layer_ms * 1e9), (unsigned long long)hash, nan == 0 ? "" : "  NaN in the output: not written?");
    }
    TEST_CUDA(cudaStreamDestroy(stream));
}

}  // namespace test
