// Checks of argument refusal (named codes, nothing enqueued) and of CUDA-graph capture with PDL.
#pragma once

#include "test_support.h"

namespace test {

inline void check_error_codes() {
    DeviceBuffer out(4096), a(4096), ws(1 << 16), status(4);
    out.poison();
    int32_t *ids = a.as<int32_t>();
    const int codes[] = {
        ar4j_llama_embedding(nullptr, 1, a.get(), 0, 8, 8, 8, out.get(), nullptr, 0, nullptr),
        ar4j_llama_embedding(ids, 1, a.get(), 8, 8, 8, 8, out.get(), nullptr, 0, nullptr),
        ar4j_llama_embedding(ids, 0, a.get(), 0, 8, 8, 8, out.get(), nullptr, 0, nullptr),
        ar4j_llama_rope(out.get(), 64, nullptr, 0, 1, 1, 0, 7, a.as<float>(), 1.0f, nullptr, 0, 8, nullptr, 0, nullptr),
        ar4j_llama_rope(out.get(), 64, nullptr, 0, 4, 1, 0, 64, a.as<float>(), 1.0f, nullptr, 5, 8, nullptr, 0, nullptr),
        ar4j_llama_rope(out.get(), 32, nullptr, 0, 1, 1, 0, 64, a.as<float>(), 1.0f, nullptr, 0, 8, nullptr, 0, nullptr),
        ar4j_llama_kv_append(a.get(), 64, a.get(), 64, 1, 1, 64, out.get(), out.get(), 8, nullptr, 8, nullptr, 0, nullptr),
        ar4j_llama_attention(a.get(), 384, a.get(), a.get(), 1, 6, 4, 64, 8, nullptr, 0, 0.125f, out.get(), 384, 1,
                             ws.get(), ws.bytes(), nullptr, 0, nullptr),
        ar4j_llama_attention(a.get(), 128, a.get(), a.get(), 1, 2, 1, 64, 8, nullptr, 0, 0.125f, out.get(), 128, 0,
                             ws.get(), ws.bytes(), nullptr, 0, nullptr),
        ar4j_llama_attention(a.get(), 128, a.get(), a.get(), 1, 2, 1, 64, 8, nullptr, 0, 0.125f, out.get(), 128, 129,
                             ws.get(), ws.bytes(), nullptr, 0, nullptr),
        // 16 bytes of workspace is too small.
        ar4j_llama_attention(a.get(), 128, a.get(), a.get(), 1, 2, 1, 64, 8, nullptr, 0, 0.125f, out.get(), 128, 2,
                             ws.get(), 16, nullptr, 0, nullptr),
        ar4j_llama_attention(a.as<char>() + 2, 128, a.get(), a.get(), 1, 2, 1, 64, 8, nullptr, 0, 0.125f, out.get(),
                             128, 1, ws.get(), ws.bytes(), nullptr, 0, nullptr),
        ar4j_llama_attention(a.get(), 128, a.get(), a.get(), 1, 2, 1, 64, 8, nullptr, 0, NAN, out.get(), 128, 1,
                             ws.get(), ws.bytes(), nullptr, 0, nullptr),
        ar4j_llama_silu_mul(a.get(), 4, a.get(), 8, out.get(), 8, 1, 8, 0, nullptr),
        ar4j_llama_argmax(1, a.get(), 8, 1, 8, 0, ids, nullptr, 0, nullptr),
        ar4j_llama_fill_random_bf16(out.get(), 2, 8, 8, 0, 4, 8, 1, 0.1f, nullptr),
        ar4j_llama_fill_bf16(out.get(), 0, 1.0f, nullptr),
        ar4j_llama_linear_rows(a.get(), a.get(), 8, out.get(), 8, 9, 8, 8, 0, nullptr),
        ar4j_llama_linear_rows(a.get(), a.get(), 12, out.get(), 8, 1, 8, 12, 0, nullptr),
        ar4j_llama_linear_rows(a.as<char>() + 2, a.get(), 8, out.get(), 8, 1, 8, 8, 0, nullptr),
        ar4j_llama_linear_rows(a.get(), a.get(), 4, out.get(), 8, 1, 8, 8, 0, nullptr),
        // attention: head_dim not a multiple of 8; no workspace; out_row_stride odd.
        ar4j_llama_attention(a.get(), 120, a.get(), a.get(), 1, 2, 1, 60, 8, nullptr, 0, 0.125f, out.get(), 120, 1,
                             ws.get(), ws.bytes(), nullptr, 0, nullptr),
        ar4j_llama_attention(a.get(), 128, a.get(), a.get(), 1, 2, 1, 64, 8, nullptr, 0, 0.125f, out.get(), 128, 1,
                             nullptr, 0, nullptr, 0, nullptr),
        ar4j_llama_attention(a.get(), 128, a.get(), a.get(), 1, 2, 1, 64, 8, nullptr, 0, 0.125f, out.get(), 129, 1,
                             ws.get(), ws.bytes(), nullptr, 0, nullptr),
        // rope_kv_append: no KV heads; v stride too small; start_pos + n beyond max_positions.
        ar4j_llama_rope_kv_append(out.get(), 64, a.get(), 64, a.get(), 64, 1, 1, 0, 64, a.as<float>(), 1.0f,
                                  out.get(), out.get(), 8, nullptr, 0, nullptr, 0, nullptr),
        ar4j_llama_rope_kv_append(out.get(), 64, a.get(), 64, a.get(), 32, 1, 1, 1, 64, a.as<float>(), 1.0f,
                                  out.get(), out.get(), 8, nullptr, 0, nullptr, 0, nullptr),
        ar4j_llama_rope_kv_append(out.get(), 64, a.get(), 64, a.get(), 64, 2, 1, 1, 64, a.as<float>(), 1.0f,
                                  out.get(), out.get(), 8, nullptr, 7, nullptr, 0, nullptr),
        // attention_batched (2/1 heads of 64, max_positions 8: a cache of 512 elements): no sequence;
        // 3 tokens in 2 sequences; 2 sequences without device positions; a stride below one cache;
        // a stride that is not a multiple of 8.
        ar4j_llama_attention_batched(a.get(), 128, a.get(), a.get(), 512, 2, 0, 2, 1, 64, 8, ids, 0, 0.125f, out.get(),
                                     128, 1, ws.get(), ws.bytes(), nullptr, 0, nullptr),
        ar4j_llama_attention_batched(a.get(), 128, a.get(), a.get(), 512, 3, 2, 2, 1, 64, 8, ids, 0, 0.125f, out.get(),
                                     128, 1, ws.get(), ws.bytes(), nullptr, 0, nullptr),
        ar4j_llama_attention_batched(a.get(), 128, a.get(), a.get(), 512, 2, 2, 2, 1, 64, 8, nullptr, 0, 0.125f,
                                     out.get(), 128, 1, ws.get(), ws.bytes(), nullptr, 0, nullptr),
        ar4j_llama_attention_batched(a.get(), 128, a.get(), a.get(), 504, 2, 2, 2, 1, 64, 8, ids, 0, 0.125f, out.get(),
                                     128, 1, ws.get(), ws.bytes(), nullptr, 0, nullptr),
        ar4j_llama_attention_batched(a.get(), 128, a.get(), a.get(), 516, 2, 2, 2, 1, 64, 8, ids, 0, 0.125f, out.get(),
                                     128, 1, ws.get(), ws.bytes(), nullptr, 0, nullptr),
        // rope_kv_append_batched (1/1 heads of 64, max_positions 8): negative sequences; 3 tokens in 2
        // sequences; 2 sequences without device positions; a stride below one cache.
        ar4j_llama_rope_kv_append_batched(out.get(), 64, a.get(), 64, a.get(), 64, 2, -1, 1, 1, 64, a.as<float>(),
                                          1.0f, out.get(), out.get(), 512, 8, ids, 0, nullptr, 0, nullptr),
        ar4j_llama_rope_kv_append_batched(out.get(), 64, a.get(), 64, a.get(), 64, 3, 2, 1, 1, 64, a.as<float>(),
                                          1.0f, out.get(), out.get(), 512, 8, ids, 0, nullptr, 0, nullptr),
        ar4j_llama_rope_kv_append_batched(out.get(), 64, a.get(), 64, a.get(), 64, 2, 2, 1, 1, 64, a.as<float>(),
                                          1.0f, out.get(), out.get(), 512, 8, nullptr, 0, nullptr, 0, nullptr),
        ar4j_llama_rope_kv_append_batched(out.get(), 64, a.get(), 64, a.get(), 64, 2, 2, 1, 1, 64, a.as<float>(),
                                          1.0f, out.get(), out.get(), 511, 8, ids, 0, nullptr, 0, nullptr),
    };
    const int expected[] = {
        AR4J_LLAMA_ERROR_NULL_POINTER, AR4J_LLAMA_ERROR_VOCAB_RANGE, AR4J_LLAMA_ERROR_SIZE,
        AR4J_LLAMA_ERROR_HEAD_DIM, AR4J_LLAMA_ERROR_POSITION, AR4J_LLAMA_ERROR_STRIDE,
        AR4J_LLAMA_ERROR_POSITION, AR4J_LLAMA_ERROR_GQA, AR4J_LLAMA_ERROR_SPLITS,
        AR4J_LLAMA_ERROR_SPLITS, AR4J_LLAMA_ERROR_WORKSPACE, AR4J_LLAMA_ERROR_MISALIGNED,
        AR4J_LLAMA_ERROR_INVALID_ARGUMENT, AR4J_LLAMA_ERROR_STRIDE, AR4J_LLAMA_ERROR_DTYPE,
        AR4J_LLAMA_ERROR_SIZE, AR4J_LLAMA_ERROR_SIZE,
        AR4J_LLAMA_ERROR_SIZE, AR4J_LLAMA_ERROR_MISALIGNED, AR4J_LLAMA_ERROR_MISALIGNED, AR4J_LLAMA_ERROR_STRIDE,
        AR4J_LLAMA_ERROR_HEAD_DIM, AR4J_LLAMA_ERROR_NULL_POINTER, AR4J_LLAMA_ERROR_MISALIGNED,
        AR4J_LLAMA_ERROR_SIZE, AR4J_LLAMA_ERROR_STRIDE, AR4J_LLAMA_ERROR_POSITION,
        AR4J_LLAMA_ERROR_SIZE, AR4J_LLAMA_ERROR_SIZE, AR4J_LLAMA_ERROR_NULL_POINTER, AR4J_LLAMA_ERROR_STRIDE,
        AR4J_LLAMA_ERROR_MISALIGNED,
        AR4J_LLAMA_ERROR_SIZE, AR4J_LLAMA_ERROR_SIZE, AR4J_LLAMA_ERROR_NULL_POINTER, AR4J_LLAMA_ERROR_STRIDE,
    };
    sync();
    std::vector<uint32_t> after = out.download<uint32_t>(1024);
    bool untouched = true;
    for (uint32_t w : after) untouched &= w == 0xFFFFFFFFu;
    const int count = int(sizeof(codes) / sizeof(codes[0]));
    int mismatches = 0;
    for (int i = 0; i < count; ++i) {
        if (codes[i] != expected[i]) {
            printf("        call %d returned %d (%s), expected %d\n", i, codes[i], ar4j_llama_error_string(codes[i]),
                   expected[i]);
            ++mismatches;
        }
    }
    check(mismatches == 0 && untouched, "argument errors", "(%d refused calls: %d wrong codes; output untouched %d)",
          count, mismatches, untouched);

    bool named = true;
    for (int code = AR4J_LLAMA_ERROR_NULL_POINTER; code <= AR4J_LLAMA_ERROR_INVALID_ARGUMENT; ++code) {
        const char *s = ar4j_llama_error_string(code);
        named &= s != nullptr && strcmp(s, "unknown status") != 0;
        for (int other = AR4J_LLAMA_ERROR_NULL_POINTER; other < code; ++other) {
            named &= strcmp(s, ar4j_llama_error_string(other)) != 0;
        }
    }
    const bool cuda_named = strcmp(ar4j_llama_error_string(int(cudaErrorMemoryAllocation)),
                                   cudaGetErrorString(cudaErrorMemoryAllocation)) == 0;
    const bool unknown = strcmp(ar4j_llama_error_string(12345), "unknown status") == 0 &&
                         strcmp(ar4j_llama_error_string(-1), "unknown status") == 0;
    check(named && cuda_named && unknown && ar4j_llama_abi_version() == AR4J_LLAMA_ABI_VERSION, "error strings",
          "(every named code distinct %d, cudaError_t names %d, unknown codes %d, ABI %d)", named, cuda_named, unknown,
          ar4j_llama_abi_version());
}

// One model-like step: embedding -> RoPE + KV append (fused) -> attention -> SiLU x up -> argmax,
// with token ids and positions read from device memory.
struct Step {
    static constexpr int32_t n = 4, heads = 4, kv = 2, hd = 64, vocab = 64, max_positions = 64, splits = 3;
    static constexpr int64_t stride = int64_t(heads + 2 * kv) * hd;  // one fused QKV row
    DeviceBuffer table{size_t(vocab) * stride * 2}, ids{n * 4}, positions{n * 4}, freq{hd / 2 * 4}, qkv{n * stride * 2},
        k_cache{size_t(max_positions) * kv * hd * 2}, v_cache{size_t(max_positions) * kv * hd * 2},
        attn{size_t(n) * heads * hd * 2}, act{size_t(n) * heads * hd * 2}, index{n * 4},
        ws{ar4j_llama_attention_workspace_bytes(n, heads, kv, hd, max_positions, splits)}, status{4};

    int enqueue(bool pdl, cudaStream_t stream) {
        uint16_t *q = qkv.as<uint16_t>();
        const int p = pdl ? 1 : 0;
        int rc = ar4j_llama_embedding(ids.as<int32_t>(), n, table.get(), 0, vocab, vocab, int32_t(stride), q,
                                      status.as<int32_t>(), p, stream);
        rc |= ar4j_llama_rope_kv_append(q, stride, q + heads * hd, stride, q + (heads + kv) * hd, stride, n, heads, kv,
                                        hd, freq.as<float>(), 1.0f, k_cache.get(), v_cache.get(), max_positions,
                                        positions.as<int32_t>(), 0, status.as<int32_t>(), p, stream);
        rc |= ar4j_llama_attention(q, stride, k_cache.get(), v_cache.get(), n, heads, kv, hd, max_positions,
                                   positions.as<int32_t>(), 0, 0.125f, attn.get(), heads * hd, splits, ws.get(),
                                   ws.bytes(), status.as<int32_t>(), p, stream);
        rc |= ar4j_llama_silu_mul(attn.get(), heads * hd, attn.get(), heads * hd, act.get(), heads * hd, n, heads * hd,
                                  p, stream);
        rc |= ar4j_llama_argmax(AR4J_LLAMA_DTYPE_BFLOAT16, act.get(), heads * hd, n, heads * hd, 0, index.as<int32_t>(),
                                nullptr, p, stream);
        return rc;
    }
    void prepare(const std::vector<uint16_t> &t, const std::vector<float> &f) {
        table.upload(t);
        freq.upload(f);
        k_cache.poison();
        v_cache.poison();
        TEST_CUDA(cudaMemset(status.get(), 0, 4));
    }
    void set_inputs(const std::vector<int32_t> &token_ids, const std::vector<int32_t> &pos, cudaStream_t stream) {
        TEST_CUDA(cudaMemcpyAsync(ids.get(), token_ids.data(), n * 4, cudaMemcpyHostToDevice, stream));
        TEST_CUDA(cudaMemcpyAsync(positions.get(), pos.data(), n * 4, cudaMemcpyHostToDevice, stream));
        TEST_CUDA(cudaStreamSynchronize(stream));
    }
    std::vector<uint16_t> result() const {
        std::vector<uint16_t> r = act.download<uint16_t>(size_t(n) * heads * hd);
        std::vector<uint16_t> kc = k_cache.download<uint16_t>(size_t(max_positions) * kv * hd);
        std::vector<uint16_t> vc = v_cache.download<uint16_t>(size_t(max_positions) * kv * hd);
        std::vector<int32_t> i = index.download<int32_t>(n);
        r.insert(r.end(), kc.begin(), kc.end());
        r.insert(r.end(), vc.begin(), vc.end());
        for (int32_t x : i) r.push_back(uint16_t(x));
        return r;
    }
};

// Two steps (prefill of 4 at 0..3, then 4 more at 4..7) eagerly without PDL, and as one captured
// graph with PDL replayed twice with new ids and positions in device memory: the same bits.
inline void check_graph_capture() {
    const std::vector<uint16_t> table = random_bf16(size_t(Step::vocab) * Step::stride, -2.0f, 2.0f);
    std::vector<float> freq(Step::hd / 2);
    for (int i = 0; i < Step::hd / 2; ++i) freq[i] = 1.0f / std::pow(10000.0f, float(2 * i) / Step::hd);
    const std::vector<int32_t> ids1 = {3, 17, 42, 63}, ids2 = {5, 5, 0, 31};
    const std::vector<int32_t> pos1 = {0, 1, 2, 3}, pos2 = {4, 5, 6, 7};
    cudaStream_t stream;
    TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

    Step eager, graphed;
    eager.prepare(table, freq);
    graphed.prepare(table, freq);
    int rc = 0;
    eager.set_inputs(ids1, pos1, stream);
    rc |= eager.enqueue(false, stream);
    TEST_CUDA(cudaStreamSynchronize(stream));
    eager.set_inputs(ids2, pos2, stream);
    rc |= eager.enqueue(false, stream);
    TEST_CUDA(cudaStreamSynchronize(stream));

    cudaGraph_t graph;
    cudaGraphExec_t exec;
    TEST_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    const int capture_rc = graphed.enqueue(true, stream);
    TEST_CUDA(cudaStreamEndCapture(stream, &graph));
    TEST_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    graphed.set_inputs(ids1, pos1, stream);
    TEST_CUDA(cudaGraphLaunch(exec, stream));
    TEST_CUDA(cudaStreamSynchronize(stream));
    graphed.set_inputs(ids2, pos2, stream);
    TEST_CUDA(cudaGraphLaunch(exec, stream));
    TEST_CUDA(cudaStreamSynchronize(stream));
    const std::vector<uint16_t> a = eager.result(), b = graphed.result();
    size_t nan = 0;
    for (size_t i = 0; i < size_t(Step::n) * Step::heads * Step::hd; ++i) nan += std::isnan(from_bf16(a[i]));
    check(rc == 0 && capture_rc == 0 && a == b && nan == 0 && device_status_word(eager.status) == 0 &&
              device_status_word(graphed.status) == 0,
          "graph capture with PDL", "(2 replays with new device ids/positions == eager without PDL, bitwise: %d; "
          "NaN in output %zu; rc %d/%d)", a == b, nan, rc, capture_rc);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaStreamDestroy(stream);
}

}  // namespace test
