// Checks of the batched attention and RoPE + KV append (several sequences in one call, each with
// its own cache region): against the CPU reference per sequence, against the single-sequence
// functions run on each sequence alone (same bits), and the sizes the host functions report.
#pragma once

#include <algorithm>

#include "attention_checks.h"

namespace test {

struct BatchCase {
    const char *name;
    int32_t sequences, tokens, n_heads, n_kv_heads, head_dim, max_positions, splits;
    int64_t pad;                   // elements between one sequence's max_positions rows and the next cache
    std::vector<int32_t> lengths;  // each sequence's context (last position + 1); empty: random
};

// The header's formulas for ar4j_llama_attention_batched_workspace_bytes and _splits, written
// again here (not shared with the library, so that a change of either shows).
inline int64_t formula_chunks(int32_t n, int32_t sequences, int32_t group) {
    const int64_t t = n / sequences, rows = t * group;
    const int64_t b = t > AR4J_LLAMA_MAX_ATTENTION_STORED_TOKENS ? 32 : rows <= 4 ? 4 : rows <= 8 ? 8 : rows <= 16 ? 16 : 32;
    return int64_t(sequences) * ((rows + b - 1) / b);
}
inline size_t formula_workspace(int32_t n, int32_t sequences, int32_t heads, int32_t kv, int32_t hd, int32_t max_pos,
                                int32_t splits) {
    auto a256 = [](size_t x) { return (x + 255) / 256 * 256; };
    const size_t r = size_t(n) * heads;
    size_t bytes = a256(size_t(formula_chunks(n, sequences, heads / kv)) * kv * 4) + a256(r * splits * 8);
    if (splits > 1) bytes += a256(r * splits * hd * 4);
    if (n / sequences <= AR4J_LLAMA_MAX_ATTENTION_STORED_TOKENS) bytes += r * max_pos * 2;
    return bytes;
}
inline int32_t formula_splits(int32_t n, int32_t sequences, int32_t heads, int32_t kv, int32_t max_context, int32_t sms) {
    const int64_t blocks = formula_chunks(n, sequences, heads / kv) * kv;
    int64_t s = (4 * int64_t(sms) + blocks - 1) / blocks;
    s = std::min<int64_t>(s, (int64_t(max_context) + 63) / 64);
    return int32_t(std::max<int64_t>(1, std::min<int64_t>(s, AR4J_LLAMA_MAX_SPLITS)));
}

// Host-only: the batched workspace and splits against the header's formulas (the single-sequence
// functions too, as sequences 1), and 0 / 1 for n not a multiple of sequences.
inline void check_attention_batched_sizes() {
    struct Shape {
        int32_t n, sequences, heads, kv, hd, max_pos, splits, max_context, sms;
    };
    const Shape shapes[] = {
        {1, 1, 32, 8, 128, 131072, 33, 4224, 132},  {64, 64, 32, 8, 128, 8192, 2, 8192, 132},
        {256, 64, 32, 8, 128, 8192, 3, 8192, 132},  {8, 2, 8, 1, 64, 1024, 8, 1000, 132},
        {48, 4, 8, 2, 64, 512, 3, 500, 78},          {9, 1, 8, 1, 64, 256, 1, 256, 132},
        {37, 1, 8, 2, 64, 256, 3, 256, 132},         {5, 5, 8, 8, 128, 4608, 16, 4099, 16},
        {24, 3, 8, 1, 128, 2048, 128, 2048, 132},   {128, 64, 4, 4, 256, 600, 1, 64, 1},
    };
    int wrong = 0;
    for (const Shape &s : shapes) {
        const size_t ws = ar4j_llama_attention_batched_workspace_bytes(s.n, s.sequences, s.heads, s.kv, s.hd, s.max_pos,
                                                                       s.splits);
        const int32_t sp = ar4j_llama_attention_batched_splits(s.n, s.sequences, s.heads, s.kv, s.max_context, s.sms);
        wrong += ws != formula_workspace(s.n, s.sequences, s.heads, s.kv, s.hd, s.max_pos, s.splits);
        wrong += sp != formula_splits(s.n, s.sequences, s.heads, s.kv, s.max_context, s.sms);
        if (s.sequences == 1) {
            wrong += ar4j_llama_attention_workspace_bytes(s.n, s.heads, s.kv, s.hd, s.max_pos, s.splits) != ws;
            wrong += ar4j_llama_attention_splits(s.n, s.heads, s.kv, s.max_context, s.sms) != sp;
        }
    }
    // 64 llama3-8b decodes at TP 1 on 132 SMs: 64 x 8 blocks per split already fill the GPU.
    const int32_t batch_splits = ar4j_llama_attention_batched_splits(64, 64, 32, 8, 8192, 132);
    const bool refused = ar4j_llama_attention_batched_workspace_bytes(3, 2, 8, 2, 64, 64, 1) == 0 &&
                         ar4j_llama_attention_batched_workspace_bytes(4, 0, 8, 2, 64, 64, 1) == 0 &&
                         ar4j_llama_attention_batched_splits(3, 2, 8, 2, 64, 132) == 1 &&
                         ar4j_llama_attention_batched_splits(4, -1, 8, 2, 64, 132) == 1;
    check(wrong == 0 && batch_splits == 2 && refused, "attention batched sizes",
          "(%zu shapes: %d differ from the header's formulas; 64 decodes of 32/8 heads on 132 SMs: %d splits (2); "
          "n %% sequences != 0 refused %d)",
          sizeof(shapes) / sizeof(shapes[0]), wrong, batch_splits, refused);
}

// ar4j_llama_attention_batched against the reference of each sequence (its own q rows, cache and
// positions), outputs and workspace poisoned before each of two runs (with and without PDL: same
// bits). Cache rows beyond each sequence's last position and the pad between caches are NaN, so
// a read past a sequence's causal limit or into another sequence's region shows. Then each
// sequence alone through ar4j_llama_attention (its q rows, its cache region, the same splits)
// must give the same bits as its rows of the batched call.
inline void check_attention_batched(const BatchCase &c) {
    const int32_t S = c.sequences, T = c.tokens, n = S * T;
    const int64_t q_row = int64_t(c.n_heads) * c.head_dim, kv_row = int64_t(c.n_kv_heads) * c.head_dim;
    const int64_t q_stride = q_row + 2 * kv_row;  // q read in place from a fused QKV row
    const int64_t stride = int64_t(c.max_positions) * kv_row + c.pad;
    std::vector<int32_t> lengths = c.lengths;
    while (int32_t(lengths.size()) < S) lengths.push_back(uniform_int(T, c.max_positions));
    std::vector<uint16_t> qkv = random_bf16(size_t(n) * q_stride, -4.0f, 4.0f);
    std::vector<uint16_t> kc(size_t(S) * stride, 0xFFFF), vc(size_t(S) * stride, 0xFFFF);
    std::vector<int32_t> pos(n);
    std::vector<float> want(size_t(n) * q_row);
    const float scale = float(1.0 / std::sqrt(double(c.head_dim)));
    for (int32_t s = 0; s < S; ++s) {
        const int32_t length = std::max(lengths[s], T);
        std::vector<uint16_t> q(size_t(T) * q_row), ks(size_t(c.max_positions) * kv_row, 0xFFFF),
            vs(size_t(c.max_positions) * kv_row, 0xFFFF);
        for (int64_t i = 0; i < int64_t(length) * kv_row; ++i) {
            ks[i] = kc[size_t(s) * stride + i] = to_bf16(uniform(-1.0f, 1.0f));
            vs[i] = vc[size_t(s) * stride + i] = to_bf16(uniform(-1.0f, 1.0f));
        }
        std::vector<int32_t> p(T);
        for (int32_t t = 0; t < T; ++t) {
            p[t] = pos[size_t(s) * T + t] = length - T + t;
            for (int64_t e = 0; e < q_row; ++e) q[size_t(t) * q_row + e] = qkv[(size_t(s) * T + t) * q_stride + e];
        }
        const AttentionCase one{c.name, T, c.n_heads, c.n_kv_heads, c.head_dim, c.max_positions, 0, c.splits, true};
        const std::vector<float> w = reference_attention(one, q, ks, vs, p, scale);
        std::copy(w.begin(), w.end(), want.begin() + size_t(s) * T * q_row);
    }
    const size_t ws_bytes = ar4j_llama_attention_batched_workspace_bytes(n, S, c.n_heads, c.n_kv_heads, c.head_dim,
                                                                         c.max_positions, c.splits);
    const size_t ws_single =
        ar4j_llama_attention_workspace_bytes(T, c.n_heads, c.n_kv_heads, c.head_dim, c.max_positions, c.splits);
    DeviceBuffer d_qkv(qkv.size() * 2), d_kc(kc.size() * 2), d_vc(vc.size() * 2), d_pos(size_t(n) * 4),
        d_out(size_t(n) * q_row * 2), d_ws(std::max(ws_bytes, ws_single)), d_status(4);
    d_qkv.upload(qkv);
    d_kc.upload(kc);
    d_vc.upload(vc);
    d_pos.upload(pos);
    std::vector<uint16_t> runs[2];
    int rc = 0;
    for (int run = 0; run < 2; ++run) {
        d_out.poison();
        d_ws.poison();
        TEST_CUDA(cudaMemset(d_status.get(), 0, 4));
        rc |= ar4j_llama_attention_batched(d_qkv.get(), q_stride, d_kc.get(), d_vc.get(), stride, n, S, c.n_heads,
                                           c.n_kv_heads, c.head_dim, c.max_positions, d_pos.as<int32_t>(), 0, scale,
                                           d_out.get(), q_row, c.splits, d_ws.get(), ws_bytes, d_status.as<int32_t>(),
                                           1 - run, nullptr);
        sync();
        runs[run] = d_out.download<uint16_t>(size_t(n) * q_row);
    }
    const int32_t status = device_status_word(d_status);
    double max_err = 0.0, sum_err = 0.0;
    size_t exact = 0, nan = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        const float got = from_bf16(runs[0][i]);
        nan += std::isnan(got);
        const double err = std::isnan(got) ? 1e30 : std::fabs(double(got) - want[i]);
        max_err = std::max(max_err, err);
        sum_err += err;
        exact += bits(got) == bits(want[i]);
    }
    const double mean_err = sum_err / double(want.size());

    // Each sequence alone, in order on one stream (the workspace is reused only after the last use).
    d_out.poison();
    const uint16_t *qkv_d = d_qkv.as<uint16_t>();
    for (int32_t s = 0; s < S; ++s) {
        rc |= ar4j_llama_attention(qkv_d + size_t(s) * T * q_stride, q_stride, d_kc.as<uint16_t>() + size_t(s) * stride,
                                   d_vc.as<uint16_t>() + size_t(s) * stride, T, c.n_heads, c.n_kv_heads, c.head_dim,
                                   c.max_positions, d_pos.as<int32_t>() + size_t(s) * T, 0, scale,
                                   d_out.as<uint16_t>() + size_t(s) * T * q_row, q_row, c.splits, d_ws.get(),
                                   ws_single, d_status.as<int32_t>(), 1, nullptr);
    }
    sync();
    const bool same_as_alone = d_out.download<uint16_t>(size_t(n) * q_row) == runs[0];
    const int32_t shortest = *std::min_element(lengths.begin(), lengths.begin() + S);
    const int32_t longest = *std::max_element(lengths.begin(), lengths.begin() + S);
    check(rc == 0 && nan == 0 && max_err <= 1.0 / 32 && mean_err <= 1.0 / 1024 && runs[0] == runs[1] &&
              same_as_alone && status == 0 && device_status_word(d_status) == 0,
          "attention batched",
          "(%s: %d x %d tokens, %d/%d heads x %d, contexts %d..%d, %d splits, pad %lld: max err %.2e (<= 3.1e-2), "
          "mean %.2e (<= 9.8e-4), %zu of %zu bit-exact, NaN %zu, deterministic %d, each sequence alone the same bits %d)",
          c.name, S, T, c.n_heads, c.n_kv_heads, c.head_dim, std::max(shortest, T), longest, c.splits,
          (long long)c.pad, max_err, mean_err, exact, want.size(), nan, runs[0] == runs[1], same_as_alone);
}

// ar4j_llama_attention (positions NULL: start_pos + t) and ar4j_llama_attention_batched with one
// sequence and the same arguments (the cache's own size as the stride, then a larger one, which one
// sequence never applies): the same bits.
inline void check_attention_single_is_batched(int32_t n, int32_t heads, int32_t kv, int32_t hd, int32_t start_pos,
                                              int32_t splits) {
    const int32_t max_positions = start_pos + n + 5;
    const int64_t q_row = int64_t(heads) * hd, kv_row = int64_t(kv) * hd;
    std::vector<uint16_t> q = random_bf16(size_t(n) * q_row, -4.0f, 4.0f);
    std::vector<uint16_t> kc = random_bf16(size_t(max_positions) * kv_row, -1.0f, 1.0f);
    std::vector<uint16_t> vc = random_bf16(size_t(max_positions) * kv_row, -1.0f, 1.0f);
    const size_t ws_bytes = ar4j_llama_attention_workspace_bytes(n, heads, kv, hd, max_positions, splits);
    DeviceBuffer d_q(q.size() * 2), d_kc(kc.size() * 2), d_vc(vc.size() * 2), d_out(q.size() * 2), d_ws(ws_bytes),
        d_status(4);
    d_q.upload(q);
    d_kc.upload(kc);
    d_vc.upload(vc);
    TEST_CUDA(cudaMemset(d_status.get(), 0, 4));
    std::vector<uint16_t> out[3];
    int rc = 0;
    for (int i = 0; i < 3; ++i) {
        d_out.poison();
        d_ws.poison();
        if (i == 0) {
            rc |= ar4j_llama_attention(d_q.get(), q_row, d_kc.get(), d_vc.get(), n, heads, kv, hd, max_positions,
                                       nullptr, start_pos, 0.125f, d_out.get(), q_row, splits, d_ws.get(), ws_bytes,
                                       d_status.as<int32_t>(), 1, nullptr);
        } else {
            const int64_t stride = int64_t(max_positions) * kv_row + (i == 2 ? 1 << 20 : 0);
            rc |= ar4j_llama_attention_batched(d_q.get(), q_row, d_kc.get(), d_vc.get(), stride, n, 1, heads, kv, hd,
                                               max_positions, nullptr, start_pos, 0.125f, d_out.get(), q_row, splits,
                                               d_ws.get(), ws_bytes, d_status.as<int32_t>(), 1, nullptr);
        }
        sync();
        out[i] = d_out.download<uint16_t>(q.size());
    }
    size_t finite = 0;
    for (uint16_t x : out[0]) finite += std::isfinite(from_bf16(x));
    check(rc == 0 && out[0] == out[1] && out[0] == out[2] && finite == out[0].size() && device_status_word(d_status) == 0,
          "attention == batched, 1 sequence", "(n %d, %d/%d heads x %d, positions %d.., %d splits: same bits %d / %d "
          "with a larger stride, finite %zu of %zu)", n, heads, kv, hd, start_pos, splits, out[0] == out[1],
          out[0] == out[2], finite, out[0].size());
}

// A position outside [0, max_positions) for one token of sequence 1 of 3: that token's rows NaN,
// every other row finite, the status set.
inline void check_attention_batched_bad_position() {
    const int32_t S = 3, T = 2, n = S * T, heads = 4, kv = 2, hd = 64, max_positions = 128, splits = 2;
    const int64_t q_row = int64_t(heads) * hd, stride = int64_t(max_positions) * kv * hd;
    std::vector<uint16_t> q = random_bf16(size_t(n) * q_row, -1.0f, 1.0f);
    std::vector<uint16_t> kc = random_bf16(size_t(S) * stride, -1.0f, 1.0f);
    std::vector<uint16_t> vc = random_bf16(size_t(S) * stride, -1.0f, 1.0f);
    const std::vector<int32_t> pos = {10, 11, 100, max_positions, 0, 1};
    const size_t ws_bytes = ar4j_llama_attention_batched_workspace_bytes(n, S, heads, kv, hd, max_positions, splits);
    DeviceBuffer d_q(q.size() * 2), d_kc(kc.size() * 2), d_vc(vc.size() * 2), d_pos(n * 4), d_out(q.size() * 2),
        d_ws(ws_bytes), d_status(4);
    d_q.upload(q);
    d_kc.upload(kc);
    d_vc.upload(vc);
    d_pos.upload(pos);
    d_out.poison();
    TEST_CUDA(cudaMemset(d_status.get(), 0, 4));
    const int rc = ar4j_llama_attention_batched(d_q.get(), q_row, d_kc.get(), d_vc.get(), stride, n, S, heads, kv, hd,
                                                max_positions, d_pos.as<int32_t>(), 0, 0.125f, d_out.get(), q_row,
                                                splits, d_ws.get(), ws_bytes, d_status.as<int32_t>(), 0, nullptr);
    sync();
    const std::vector<uint16_t> out = d_out.download<uint16_t>(q.size());
    bool bad_nan = true, others_finite = true;
    for (int32_t t = 0; t < n; ++t) {
        for (int64_t e = 0; e < q_row; ++e) {
            const float x = from_bf16(out[size_t(t) * q_row + e]);
            if (t == 3) bad_nan &= std::isnan(x);
            else others_finite &= std::isfinite(x);
        }
    }
    check(rc == 0 && bad_nan && others_finite && device_status_word(d_status) == AR4J_LLAMA_ERROR_POSITION,
          "attention batched: bad position", "(that token's rows NaN %d, every other row finite %d, status %d)",
          bad_nan, others_finite, device_status_word(d_status));
}

// ar4j_llama_rope_kv_append_batched against ar4j_llama_rope_kv_append run on each sequence alone
// (its tokens, its cache region), on copies of the same fused QKV rows and of the same poisoned
// caches: q and both whole cache buffers (the pad between regions and every unwritten row
// included) the same bits, and exactly n rows written. Sequences 0 and 1 share their positions,
// so a row written to the wrong sequence's cache shows. Then a bad position in one sequence.
// With one sequence, positions may be NULL (start_pos + t).
inline void check_rope_kv_append_batched(int32_t S, int32_t T, int32_t heads, int32_t kv, int32_t hd,
                                         bool device_positions) {
    const int32_t n = S * T, max_positions = 512, start_pos = 300;
    const int64_t qkv_stride = int64_t(heads + 2 * kv) * hd, kv_row = int64_t(kv) * hd;
    const int64_t stride = int64_t(max_positions) * kv_row + 24;  // 24: any stride is aligned for this one
    const std::vector<uint16_t> qkv = random_bf16(size_t(n) * qkv_stride, -3.0f, 3.0f);
    const std::vector<float> inv_freq = inverse_frequencies(hd, 500000.0f);
    std::vector<int32_t> pos(n);
    for (int32_t s = 0; s < S; ++s) {
        const int32_t base = s == 1 ? pos[0] : uniform_int(0, max_positions - T);
        for (int32_t t = 0; t < T; ++t) pos[size_t(s) * T + t] = device_positions ? base + t : start_pos + t;
    }
    const size_t cache = size_t(S) * stride;
    DeviceBuffer d_a(qkv.size() * 2), d_b(qkv.size() * 2), d_freq(inv_freq.size() * 4), d_pos(size_t(n) * 4),
        d_kc_a(cache * 2), d_vc_a(cache * 2), d_kc_b(cache * 2), d_vc_b(cache * 2), d_status(4);
    d_a.upload(qkv);
    d_b.upload(qkv);
    d_freq.upload(inv_freq);
    d_pos.upload(pos);
    d_kc_a.poison();
    d_vc_a.poison();
    d_kc_b.poison();
    d_vc_b.poison();
    TEST_CUDA(cudaMemset(d_status.get(), 0, 4));
    uint16_t *a = d_a.as<uint16_t>(), *b = d_b.as<uint16_t>();
    const int64_t k_off = int64_t(heads) * hd, v_off = k_off + kv_row;
    int rc = ar4j_llama_rope_kv_append_batched(b, qkv_stride, b + k_off, qkv_stride, b + v_off, qkv_stride, n, S, heads,
                                               kv, hd, d_freq.as<float>(), 1.0f, d_kc_b.get(), d_vc_b.get(), stride,
                                               max_positions, device_positions ? d_pos.as<int32_t>() : nullptr,
                                               start_pos, d_status.as<int32_t>(), 1, nullptr);
    for (int32_t s = 0; s < S; ++s) {
        uint16_t *x = a + size_t(s) * T * qkv_stride;
        rc |= ar4j_llama_rope_kv_append(x, qkv_stride, x + k_off, qkv_stride, x + v_off, qkv_stride, T, heads, kv, hd,
                                        d_freq.as<float>(), 1.0f, d_kc_a.as<uint16_t>() + size_t(s) * stride,
                                        d_vc_a.as<uint16_t>() + size_t(s) * stride, max_positions,
                                        device_positions ? d_pos.as<int32_t>() + size_t(s) * T : nullptr, start_pos,
                                        d_status.as<int32_t>(), 0, nullptr);
    }
    sync();
    const bool q_same = d_a.download<uint16_t>(qkv.size()) == d_b.download<uint16_t>(qkv.size());
    const std::vector<uint16_t> kb = d_kc_b.download<uint16_t>(cache), vb = d_vc_b.download<uint16_t>(cache);
    const bool caches_same = d_kc_a.download<uint16_t>(cache) == kb && d_vc_a.download<uint16_t>(cache) == vb;
    size_t written = 0;  // cache rows (one token's kv_row elements) holding anything but the poison
    for (int32_t s = 0; s < S; ++s) {
        for (int32_t p = 0; p < max_positions; ++p) {
            bool any = false;
            for (int64_t e = 0; e < kv_row; ++e) {
                const size_t i = size_t(s) * stride + size_t(p) * kv_row + e;
                any |= kb[i] != 0xFFFF || vb[i] != 0xFFFF;
            }
            written += any;
        }
    }
    bool pad_untouched = true;
    for (int32_t s = 0; s < S; ++s) {
        for (int64_t e = int64_t(max_positions) * kv_row; e < stride; ++e) {
            pad_untouched &= kb[size_t(s) * stride + e] == 0xFFFF && vb[size_t(s) * stride + e] == 0xFFFF;
        }
    }
    bool ok = check(rc == 0 && q_same && caches_same && written == size_t(n) && pad_untouched &&
                        device_status_word(d_status) == 0,
                    "rope_kv_append batched",
                    "(%d x %d tokens, %d/%d heads x %d, %s: q same as each sequence alone %d, caches same %d, rows "
                    "written %zu of %d, pad untouched %d)",
                    S, T, heads, kv, hd, device_positions ? "device positions, PDL" : "start_pos", q_same, caches_same,
                    written, n, pad_untouched);
    if (!ok || !device_positions || S < 2) return;

    // Token 0 of sequence 1 at max_positions: its q unchanged, no cache row in any sequence, status set.
    std::vector<int32_t> bad = pos;
    bad[size_t(T)] = max_positions;
    d_pos.upload(bad);
    d_b.upload(qkv);
    d_kc_b.poison();
    d_vc_b.poison();
    TEST_CUDA(cudaMemset(d_status.get(), 0, 4));
    rc = ar4j_llama_rope_kv_append_batched(b, qkv_stride, b + k_off, qkv_stride, b + v_off, qkv_stride, n, S, heads, kv,
                                           hd, d_freq.as<float>(), 1.0f, d_kc_b.get(), d_vc_b.get(), stride,
                                           max_positions, d_pos.as<int32_t>(), 0, d_status.as<int32_t>(), 0, nullptr);
    sync();
    const std::vector<uint16_t> qbad = d_b.download<uint16_t>(qkv.size());
    const std::vector<uint16_t> kbad = d_kc_b.download<uint16_t>(cache);
    bool q_unchanged = true;
    for (int64_t e = 0; e < k_off; ++e) q_unchanged &= qbad[size_t(T) * qkv_stride + e] == qkv[size_t(T) * qkv_stride + e];
    size_t rows = 0;
    for (int32_t s = 0; s < S; ++s) {
        for (int32_t p = 0; p < max_positions; ++p) rows += kbad[size_t(s) * stride + size_t(p) * kv_row] != 0xFFFF;
    }
    check(rc == 0 && q_unchanged && rows == size_t(n - 1) && device_status_word(d_status) == AR4J_LLAMA_ERROR_POSITION,
          "rope_kv_append batched: bad position", "(that token's q unchanged %d, key rows written %zu of %d, status %d)",
          q_unchanged, rows, n - 1, device_status_word(d_status));
}

}  // namespace test
