// Checks of ar4j_llama_rope_attention_batched (RoPE and the KV append fused into the decode
// attention): against ar4j_llama_rope_kv_append_batched then ar4j_llama_attention_batched on the
// same inputs and splits, which the other checks hold to the CPU reference. The fused call must
// give the same bits in out and in both caches (every element, the untouched rows' poison too)
// and leave q, k and v as they were.
#pragma once

#include "attention_checks.h"

namespace test {

struct RopeAttentionCase {
    const char *name;
    int32_t sequences, tokens, n_heads, n_kv_heads, head_dim, max_positions, splits;
    std::vector<int32_t> lengths;  // each sequence's context after the step (last new position + 1)
    int32_t bad_token = -1;        // a token given position max_positions (an error), or -1
};

inline void check_rope_attention(const RopeAttentionCase &c) {
    const int32_t S = c.sequences, T = c.tokens, n = S * T, hd = c.head_dim;
    const int64_t q_row = int64_t(c.n_heads) * hd, kv_row = int64_t(c.n_kv_heads) * hd;
    const int64_t qkv_stride = q_row + 2 * kv_row, k_off = q_row, v_off = q_row + kv_row;
    const int64_t stride = int64_t(c.max_positions) * kv_row;
    const size_t cache = size_t(S) * stride;
    const std::vector<uint16_t> qkv = random_bf16(size_t(n) * qkv_stride, -3.0f, 3.0f);
    const std::vector<float> inv_freq = inverse_frequencies(hd, 500000.0f);
    // Each sequence's older keys and values (rows 0 .. length - T - 1) random, the rest poison (NaN).
    std::vector<uint16_t> kc(cache, 0xFFFF), vc(cache, 0xFFFF);
    std::vector<int32_t> pos(n);
    for (int32_t s = 0; s < S; ++s) {
        const int32_t length = c.lengths[s];
        for (int64_t i = 0; i < int64_t(length - T) * kv_row; ++i) {
            kc[size_t(s) * stride + i] = to_bf16(uniform(-1.0f, 1.0f));
            vc[size_t(s) * stride + i] = to_bf16(uniform(-1.0f, 1.0f));
        }
        for (int32_t t = 0; t < T; ++t) pos[size_t(s) * T + t] = length - T + t;
    }
    if (c.bad_token >= 0) pos[c.bad_token] = c.max_positions;
    const float scale = float(1.0 / std::sqrt(double(hd)));
    const size_t ws_bytes = ar4j_llama_attention_batched_workspace_bytes(n, S, c.n_heads, c.n_kv_heads, hd,
                                                                         c.max_positions, c.splits);
    DeviceBuffer d_a(qkv.size() * 2), d_b(qkv.size() * 2), d_freq(inv_freq.size() * 4), d_pos(size_t(n) * 4),
        d_kc_a(cache * 2), d_vc_a(cache * 2), d_kc_b(cache * 2), d_vc_b(cache * 2), d_out_a(size_t(n) * q_row * 2),
        d_out_b(size_t(n) * q_row * 2), d_ws(ws_bytes), d_status_a(4), d_status_b(4);
    d_a.upload(qkv);
    d_b.upload(qkv);
    d_freq.upload(inv_freq);
    d_pos.upload(pos);
    d_kc_a.upload(kc);
    d_vc_a.upload(vc);
    TEST_CUDA(cudaMemset(d_status_a.get(), 0, 4));
    TEST_CUDA(cudaMemset(d_status_b.get(), 0, 4));
    d_out_a.poison();
    d_ws.poison();
    uint16_t *a = d_a.as<uint16_t>(), *b = d_b.as<uint16_t>();
    int rc = ar4j_llama_rope_kv_append_batched(a, qkv_stride, a + k_off, qkv_stride, a + v_off, qkv_stride, n, S,
                                               c.n_heads, c.n_kv_heads, hd, d_freq.as<float>(), 1.0f, d_kc_a.get(),
                                               d_vc_a.get(), stride, c.max_positions, d_pos.as<int32_t>(), 0,
                                               d_status_a.as<int32_t>(), 1, nullptr);
    rc |= ar4j_llama_attention_batched(a, qkv_stride, d_kc_a.get(), d_vc_a.get(), stride, n, S, c.n_heads,
                                       c.n_kv_heads, hd, c.max_positions, d_pos.as<int32_t>(), 0, scale, d_out_a.get(),
                                       q_row, c.splits, d_ws.get(), ws_bytes, d_status_a.as<int32_t>(), 1, nullptr);
    sync();
    const std::vector<uint16_t> want = d_out_a.download<uint16_t>(size_t(n) * q_row);
    const std::vector<uint16_t> want_k = d_kc_a.download<uint16_t>(cache), want_v = d_vc_a.download<uint16_t>(cache);
    // Two fused runs (with PDL, then without), caches reset and out and workspace poisoned before each.
    bool same_out = true, same_caches = true;
    for (int run = 0; run < 2; ++run) {
        d_kc_b.upload(kc);
        d_vc_b.upload(vc);
        d_out_b.poison();
        d_ws.poison();
        rc |= ar4j_llama_rope_attention_batched(b, qkv_stride, b + k_off, qkv_stride, b + v_off, qkv_stride,
                                                d_freq.as<float>(), 1.0f, d_kc_b.get(), d_vc_b.get(), stride, n, S,
                                                c.n_heads, c.n_kv_heads, hd, c.max_positions, d_pos.as<int32_t>(), 0,
                                                scale, d_out_b.get(), q_row, c.splits, d_ws.get(), ws_bytes,
                                                d_status_b.as<int32_t>(), 1 - run, nullptr);
        sync();
        same_out &= d_out_b.download<uint16_t>(size_t(n) * q_row) == want;
        same_caches &= d_kc_b.download<uint16_t>(cache) == want_k && d_vc_b.download<uint16_t>(cache) == want_v;
    }
    const bool inputs_kept = d_b.download<uint16_t>(qkv.size()) == qkv;
    size_t nan = 0;
    for (uint16_t x : want) nan += std::isnan(from_bf16(x));
    const int32_t status_a = device_status_word(d_status_a), status_b = device_status_word(d_status_b);
    const int32_t expected_status = c.bad_token >= 0 ? AR4J_LLAMA_ERROR_POSITION : 0;
    // A bad token's rows are NaN (its group of query heads), no other row is.
    const size_t expected_nan = c.bad_token >= 0 ? size_t(c.n_heads) * hd : 0;
    check(rc == 0 && same_out && same_caches && inputs_kept && status_a == expected_status &&
              status_b == expected_status && nan == expected_nan,
          "rope attention batched",
          "(%s: %d x %d tokens, %d/%d heads x %d, %d splits: out the same bits as rope_kv_append then attention %d, "
          "caches the same %d, q/k/v unchanged %d, status %d and %d (want %d), NaN outputs %zu (want %zu))",
          c.name, S, T, c.n_heads, c.n_kv_heads, hd, c.splits, same_out, same_caches, inputs_kept, status_a, status_b,
          expected_status, nan, expected_nan);
}

// The host checks of the fused call: shapes it does not take (more than the stored tokens, more rows
// than one block's) and its own arguments; nothing is launched for any of them.
inline void check_rope_attention_errors() {
    const int32_t heads = 8, kv = 2, hd = 64, max_positions = 64;
    const int64_t q_row = int64_t(heads) * hd, kv_row = int64_t(kv) * hd, qkv_stride = q_row + 2 * kv_row;
    const int64_t stride = int64_t(max_positions) * kv_row;
    DeviceBuffer d_qkv(size_t(16) * qkv_stride * 2), d_freq(hd / 2 * 4), d_kc(size_t(stride) * 2 * 16),
        d_vc(size_t(stride) * 2 * 16), d_out(size_t(16) * q_row * 2), d_ws(1 << 20), d_status(4), d_pos(16 * 4);
    std::vector<int32_t> pos(16);
    for (int i = 0; i < 16; ++i) pos[i] = i;
    d_pos.upload(pos);
    uint16_t *x = d_qkv.as<uint16_t>();
    auto call = [&](int32_t n, int32_t sequences, int32_t h, int32_t kvh, const void *k, int64_t k_stride,
                    const float *freq, float scaling) {
        return ar4j_llama_rope_attention_batched(x, qkv_stride, k, k_stride, x + q_row + kv_row, qkv_stride, freq,
                                                 scaling, d_kc.get(), d_vc.get(), stride, n, sequences, h, kvh, hd,
                                                 max_positions, d_pos.as<int32_t>(), 0, 0.125f, d_out.get(), q_row, 2,
                                                 d_ws.get(), d_ws.bytes(), d_status.as<int32_t>(), 1, nullptr);
    };
    const float *freq = d_freq.as<float>();
    const int nine = call(9, 1, heads, kv, x + q_row, qkv_stride, freq, 1.0f);          // 9 tokens: not stored
    const int rows40 = call(8, 1, heads, 1, x + q_row, qkv_stride, freq, 1.0f);         // 8 x 8 rows > 32
    const int null_k = call(1, 1, heads, kv, nullptr, qkv_stride, freq, 1.0f);
    const int null_freq = call(1, 1, heads, kv, x + q_row, qkv_stride, nullptr, 1.0f);
    const int short_k = call(1, 1, heads, kv, x + q_row, kv_row - 1, freq, 1.0f);
    const int nan_scaling = call(1, 1, heads, kv, x + q_row, qkv_stride, freq, NAN);
    const int odd_k = call(1, 1, heads, kv, reinterpret_cast<const char *>(x + q_row) + 1, qkv_stride, freq, 1.0f);
    sync();
    check(nine == AR4J_LLAMA_ERROR_SIZE && rows40 == AR4J_LLAMA_ERROR_SIZE && null_k == AR4J_LLAMA_ERROR_NULL_POINTER &&
              null_freq == AR4J_LLAMA_ERROR_NULL_POINTER && short_k == AR4J_LLAMA_ERROR_STRIDE &&
              nan_scaling == AR4J_LLAMA_ERROR_INVALID_ARGUMENT && odd_k == AR4J_LLAMA_ERROR_MISALIGNED,
          "rope attention batched: refused arguments",
          "(9 tokens %d, 64 rows %d, k NULL %d, inv_freq NULL %d, k stride short %d, scaling NaN %d, k misaligned %d)",
          nine, rows40, null_k, null_freq, short_k, nan_scaling, odd_k);
}

}  // namespace test
