// Timing of ar4j_llama_attention (and ar4j_llama_rope_kv_append; the two in a row, "rope+attention", against
// ar4j_llama_rope_attention_batched, "rope_attention") on the llama3-8b shapes at TP 1
// (32 query heads, 8 KV heads, head_dim 128): `ar4j_llama_kernels_test --bench-attention`.
// One CUDA graph holds one call per layer for 32 layers, each over its own KV cache (4 GiB in
// all, so a layer's K and V come from memory, not from L2, as in a real step), launched with
// PDL; CUDA events around 15 replays after 2 warm-ups, the median replay divided by 32.
// "GB/s" is the bytes of K and V of the context (2 * context * 8 * 128 * 2) per microsecond.
#pragma once

#include <algorithm>
#include <functional>
#include <vector>

#include "graph_timing.h"

namespace test {

inline void bench_attention(int sm_count) {
    constexpr int32_t layers = 32, heads = 32, kv = 8, hd = 128, max_positions = 32768;
    const int64_t q_stride = int64_t(heads + 2 * kv) * hd;
    const size_t cache_bytes = size_t(max_positions) * kv * hd * 2;  // one layer's K (or V)
    printf("# attention: llama3-8b TP 1 (32/8 heads x 128, bf16), %d SMs, max_positions %d; graph of %d layers, "
           "median of 15 replays\n", sm_count, max_positions, layers);
    printf("# %-15s %3s %7s %6s %10s %8s\n", "kernel", "n", "context", "splits", "us/layer", "GB/s");
    cudaStream_t stream;
    TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    DeviceBuffer k_caches(cache_bytes * layers), v_caches(cache_bytes * layers), qkv(size_t(8) * q_stride * 2),
        out(size_t(8) * heads * hd * 2), positions(8 * 4), freq(hd / 2 * 4), status(4);
    TEST_CUDA(cudaMemset(k_caches.get(), 0x3c, k_caches.bytes()));
    TEST_CUDA(cudaMemset(v_caches.get(), 0x3c, v_caches.bytes()));
    TEST_CUDA(cudaMemset(qkv.get(), 0x3c, qkv.bytes()));
    TEST_CUDA(cudaMemset(freq.get(), 0, freq.bytes()));
    TEST_CUDA(cudaMemset(status.get(), 0, 4));
    const float scale = 0.08838834764831845f;

    // Microseconds per layer of `enqueue(layer)` for every layer in one graph.
    auto time_graph = [&](const std::function<int(int)> &enqueue) { return graph_median_us(stream, layers, enqueue); };

    for (int32_t n : {1, 3}) {
        const int32_t heuristic = ar4j_llama_attention_splits(n, heads, kv, max_positions, sm_count);
        std::vector<int32_t> split_counts = {heuristic};
        for (int32_t s : {1, 16, 64, 128}) {
            if (s != heuristic) split_counts.push_back(s);
        }
        size_t ws_bytes = 0;
        for (int32_t s : split_counts) {
            ws_bytes = std::max(ws_bytes, ar4j_llama_attention_workspace_bytes(n, heads, kv, hd, max_positions, s));
        }
        DeviceBuffer ws(ws_bytes);
        for (int32_t context : {64, 512, 4096, 8000, 32768}) {
            std::vector<int32_t> pos(n);
            for (int32_t t = 0; t < n; ++t) pos[t] = context - n + t;
            positions.upload(pos);
            for (int32_t s : split_counts) {
                // The heuristic's split count also without PDL (each kernel waits for the previous to end).
                for (int32_t pdl : {1, 0}) {
                    if (pdl == 0 && s != heuristic) continue;
                    const double us = time_graph([&](int32_t l) {
                        return ar4j_llama_attention(qkv.get(), q_stride, k_caches.as<char>() + cache_bytes * l,
                                                    v_caches.as<char>() + cache_bytes * l, n, heads, kv, hd,
                                                    max_positions, positions.as<int32_t>(), 0, scale, out.get(),
                                                    heads * hd, s, ws.get(), ws.bytes(), status.as<int32_t>(), pdl,
                                                    stream);
                    });
                    const double bytes = 2.0 * context * kv * hd * 2;
                    printf("  %-15s %3d %7d %6d%s %10.2f %8.0f%s\n", "attention", n, context, s,
                           s == heuristic ? "*" : " ", us, bytes / (us * 1e3), pdl ? "" : "   (no PDL)");
                }
            }
            // A step's RoPE, KV append and attention: the two calls, then the fused one (heuristic splits).
            uint16_t *q = qkv.as<uint16_t>();
            const int64_t cache_elements = int64_t(max_positions) * kv * hd;
            const double separate = time_graph([&](int32_t l) {
                const int rc = ar4j_llama_rope_kv_append(
                    q, q_stride, q + heads * hd, q_stride, q + (heads + kv) * hd, q_stride, n, heads, kv, hd,
                    freq.as<float>(), 1.0f, k_caches.as<char>() + cache_bytes * l, v_caches.as<char>() + cache_bytes * l,
                    max_positions, positions.as<int32_t>(), 0, status.as<int32_t>(), 1, stream);
                if (rc != 0) return rc;
                return ar4j_llama_attention(qkv.get(), q_stride, k_caches.as<char>() + cache_bytes * l,
                                            v_caches.as<char>() + cache_bytes * l, n, heads, kv, hd, max_positions,
                                            positions.as<int32_t>(), 0, scale, out.get(), heads * hd, heuristic,
                                            ws.get(), ws.bytes(), status.as<int32_t>(), 1, stream);
            });
            const double fused = time_graph([&](int32_t l) {
                return ar4j_llama_rope_attention_batched(
                    q, q_stride, q + heads * hd, q_stride, q + (heads + kv) * hd, q_stride, freq.as<float>(), 1.0f,
                    k_caches.as<char>() + cache_bytes * l, v_caches.as<char>() + cache_bytes * l, cache_elements, n, 1,
                    heads, kv, hd, max_positions, positions.as<int32_t>(), 0, scale, out.get(), heads * hd, heuristic,
                    ws.get(), ws.bytes(), status.as<int32_t>(), 1, stream);
            });
            printf("  %-15s %3d %7d %6d* %10.2f\n", "rope+attention", n, context, heuristic, separate);
            printf("  %-15s %3d %7d %6d* %10.2f\n", "rope_attention", n, context, heuristic, fused);
        }
        const double us = time_graph([&](int32_t l) {
            uint16_t *q = qkv.as<uint16_t>();
            return ar4j_llama_rope_kv_append(q, q_stride, q + heads * hd, q_stride, q + (heads + kv) * hd, q_stride, n,
                                             heads, kv, hd, freq.as<float>(), 1.0f,
                                             k_caches.as<char>() + cache_bytes * l, v_caches.as<char>() + cache_bytes * l,
                                             max_positions, positions.as<int32_t>(), 0, status.as<int32_t>(), 1, stream);
        });
        printf("  %-15s %3d %7s %6s  %10.2f\n", "rope_kv_append", n, "-", "-", us);
    }
    printf("# * = ar4j_llama_attention_splits(n, 32, 8, %d, %d); device status after the runs: %d\n", max_positions,
           sm_count, device_status_word(status));
    TEST_CUDA(cudaStreamDestroy(stream));
}

}  // namespace test
