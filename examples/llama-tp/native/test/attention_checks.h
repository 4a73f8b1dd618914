// Checks of RoPE and attention against CPU references with transformers' bf16 rounding points.
#pragma once

#include <algorithm>

#include "test_support.h"

namespace test {

// HF's default inverse frequencies: 1 / theta^(2i / head_dim), in fp32.
inline std::vector<float> inverse_frequencies(int32_t head_dim, float theta) {
    std::vector<float> f(head_dim / 2);
    for (int i = 0; i < head_dim / 2; ++i) f[i] = 1.0f / std::pow(theta, float(2 * i) / float(head_dim));
    return f;
}

// RoPE in place on q and k inside a fused [n, (heads + 2 kv) * head_dim] QKV buffer; v untouched.
// Reference: fp32 position x inv_freq, cos/sin correctly rounded to fp32 (double libm), times the
// scaling, then HF's bf16 roundings. Device cosf/sinf are within 2 fp32 ulps of that, so bf16
// values agree but for rare rounding-boundary cases: all within 2 bf16 ulps of the inputs'
// magnitude, and >= 99.5% bit-exact (random positions up to 2^17 - 1 give about 0.1% boundary
// cases: 5 of 3840 in one run on an H200; the bound leaves room for that on fresh data).
inline void check_rope(int32_t n_heads, int32_t n_kv_heads, int32_t head_dim, int32_t start_pos, bool device_positions,
                       float attention_scaling) {
    const int32_t n = 6, max_positions = 131072;
    const int64_t stride = int64_t(n_heads + 2 * n_kv_heads) * head_dim;
    std::vector<uint16_t> qkv = random_bf16(size_t(n) * stride, -3.0f, 3.0f);
    std::vector<float> inv_freq = inverse_frequencies(head_dim, 500000.0f);
    std::vector<int32_t> pos(n);
    for (int t = 0; t < n; ++t) pos[t] = device_positions ? uniform_int(0, max_positions - 1) : start_pos + t;
    if (device_positions) pos[0] = max_positions - 1;
    DeviceBuffer d_qkv(qkv.size() * 2), d_freq(inv_freq.size() * 4), d_pos(n * 4), d_status(4);
    d_qkv.upload(qkv);
    d_freq.upload(inv_freq);
    d_pos.upload(pos);
    TEST_CUDA(cudaMemset(d_status.get(), 0, 4));
    uint16_t *q = d_qkv.as<uint16_t>();
    const int rc = ar4j_llama_rope(q, stride, q + int64_t(n_heads) * head_dim, stride, n, n_heads, n_kv_heads, head_dim,
                                   d_freq.as<float>(), attention_scaling, device_positions ? d_pos.as<int32_t>() : nullptr,
                                   start_pos, max_positions, d_status.as<int32_t>(), device_positions, nullptr);
    sync();
    std::vector<uint16_t> out = d_qkv.download<uint16_t>(qkv.size());
    const int half = head_dim / 2;
    size_t exact = 0, outside = 0, count = 0, v_changed = 0;
    for (int t = 0; t < n; ++t) {
        for (int h = 0; h < n_heads + 2 * n_kv_heads; ++h) {
            const size_t base = size_t(t) * stride + size_t(h) * head_dim;
            if (h >= n_heads + n_kv_heads) {
                for (int e = 0; e < head_dim; ++e) v_changed += out[base + e] != qkv[base + e];
                continue;
            }
            for (int i = 0; i < half; ++i) {
                const float freq = float(pos[t]) * inv_freq[i];
                const float c = rb(float(std::cos(double(freq))) * attention_scaling);
                const float s = rb(float(std::sin(double(freq))) * attention_scaling);
                const float x1 = from_bf16(qkv[base + i]), x2 = from_bf16(qkv[base + i + half]);
                const float want[2] = {rb(rb(x1 * c) + rb(-x2 * s)), rb(rb(x2 * c) + rb(x1 * s))};
                const float got[2] = {from_bf16(out[base + i]), from_bf16(out[base + i + half])};
                const float scale = std::fabs(x1) + std::fabs(x2);
                for (int j = 0; j < 2; ++j) {
                    ++count;
                    exact += bits(got[j]) == bits(want[j]);
                    outside += !(std::fabs(got[j] - want[j]) <= 2.0f * bf16_ulp(scale) * std::fabs(attention_scaling));
                }
            }
        }
    }
    check(rc == 0 && outside == 0 && exact >= count * 995 / 1000 && v_changed == 0 && device_status_word(d_status) == 0,
          "rope", "(%d/%d heads x %d, %s, scaling %.2f: %zu of %zu bit-exact, %zu beyond tolerance, v changed %zu)",
          n_heads, n_kv_heads, head_dim, device_positions ? "device positions up to 131071, PDL" : "start_pos",
          attention_scaling, exact, count, outside, v_changed);
}

struct AttentionCase {
    const char *name;
    int32_t n, n_heads, n_kv_heads, head_dim, max_positions, first_pos, splits;
    bool device_positions;
};

// The eager-attention reference: s = bf16(bf16(q.k) * scale), p = bf16(softmax(s)), out = bf16(p.v),
// in double between those roundings.
inline std::vector<float> reference_attention(const AttentionCase &c, const std::vector<uint16_t> &q,
                                              const std::vector<uint16_t> &kc, const std::vector<uint16_t> &vc,
                                              const std::vector<int32_t> &pos, float scale) {
    const int64_t q_row = int64_t(c.n_heads) * c.head_dim, kv_row = int64_t(c.n_kv_heads) * c.head_dim;
    std::vector<float> out(size_t(c.n) * q_row);
    const int group = c.n_heads / c.n_kv_heads;
    for (int t = 0; t < c.n; ++t) {
        for (int h = 0; h < c.n_heads; ++h) {
            const int kvh = h / group, length = pos[t] + 1;
            std::vector<float> s(length);
            for (int j = 0; j < length; ++j) {
                double dot = 0.0;
                for (int e = 0; e < c.head_dim; ++e) {
                    dot += double(from_bf16(q[size_t(t) * q_row + size_t(h) * c.head_dim + e])) *
                           from_bf16(kc[size_t(j) * kv_row + size_t(kvh) * c.head_dim + e]);
                }
                s[j] = rb(rb(float(dot)) * scale);
            }
            const float m = *std::max_element(s.begin(), s.end());
            double denominator = 0.0;
            for (int j = 0; j < length; ++j) denominator += std::exp(double(s[j]) - m);
            std::vector<double> acc(c.head_dim, 0.0);
            for (int j = 0; j < length; ++j) {
                const double p = rb(float(std::exp(double(s[j]) - m) / denominator));
                for (int e = 0; e < c.head_dim; ++e) {
                    acc[e] += p * from_bf16(vc[size_t(j) * kv_row + size_t(kvh) * c.head_dim + e]);
                }
            }
            for (int e = 0; e < c.head_dim; ++e) out[size_t(t) * q_row + size_t(h) * c.head_dim + e] = rb(float(acc[e]));
        }
    }
    return out;
}

// Attention against the reference, outputs and workspace poisoned (NaN) before each run. Cache
// rows beyond the last position are NaN, so a read past the causal limit shows. Tolerance: the fp32 sums are in another order than the reference's,
// so a score or probability may round to the neighbouring bf16: max |err| <= 2^-5 max|v| and
// mean |err| <= 2^-10 max|v|. Also: a second run (without PDL; with one split, without a
// workspace) gives the same bits (determinism).
inline void check_attention(const AttentionCase &c) {
    const int64_t q_row = int64_t(c.n_heads) * c.head_dim, kv_row = int64_t(c.n_kv_heads) * c.head_dim;
    const int64_t q_stride = q_row + 2 * kv_row;  // q read in place from a fused QKV row
    const int32_t last = c.first_pos + c.n - 1;
    std::vector<uint16_t> qkv = random_bf16(size_t(c.n) * q_stride, -4.0f, 4.0f);
    std::vector<uint16_t> q(size_t(c.n) * q_row);
    for (int t = 0; t < c.n; ++t)
        for (int64_t e = 0; e < q_row; ++e) q[size_t(t) * q_row + e] = qkv[size_t(t) * q_stride + e];
    std::vector<uint16_t> kc(size_t(c.max_positions) * kv_row, 0xFFFF), vc(size_t(c.max_positions) * kv_row, 0xFFFF);
    for (int64_t i = 0; i < int64_t(last + 1) * kv_row; ++i) {
        kc[i] = to_bf16(uniform(-1.0f, 1.0f));
        vc[i] = to_bf16(uniform(-1.0f, 1.0f));
    }
    std::vector<int32_t> pos(c.n);
    for (int t = 0; t < c.n; ++t) pos[t] = c.first_pos + t;
    const float scale = float(1.0 / std::sqrt(double(c.head_dim)));
    std::vector<float> want = reference_attention(c, q, kc, vc, pos, scale);

    const size_t ws_bytes =
        ar4j_llama_attention_workspace_bytes(c.n, c.n_heads, c.n_kv_heads, c.head_dim, c.max_positions, c.splits);
    DeviceBuffer d_qkv(qkv.size() * 2), d_kc(kc.size() * 2), d_vc(vc.size() * 2), d_pos(c.n * 4),
        d_out(size_t(c.n) * q_row * 2), d_ws(ws_bytes), d_status(4);
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
        // The second run without PDL.
        rc |= ar4j_llama_attention(d_qkv.get(), q_stride, d_kc.get(), d_vc.get(), c.n, c.n_heads, c.n_kv_heads,
                                   c.head_dim, c.max_positions, c.device_positions ? d_pos.as<int32_t>() : nullptr,
                                   c.first_pos, scale, d_out.get(), q_row, c.splits, d_ws.get(), ws_bytes,
                                   d_status.as<int32_t>(), 1 - run, nullptr);
        sync();
        runs[run] = d_out.download<uint16_t>(size_t(c.n) * q_row);
    }
    double max_err = 0.0, sum_err = 0.0;
    size_t exact = 0, nan = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        const float got = from_bf16(runs[0][i]);
        nan += std::isnan(got);
        const double err = std::fabs(double(got) - want[i]);
        max_err = std::max(max_err, std::isnan(err) ? 1e30 : err);
        sum_err += std::isnan(err) ? 1e30 : err;
        exact += bits(got) == bits(want[i]);
    }
    const double mean_err = sum_err / double(want.size());
    const double max_v = 1.0;  // |v| < 1
    check(rc == 0 && nan == 0 && max_err <= max_v / 32 && mean_err <= max_v / 1024 && runs[0] == runs[1] &&
              device_status_word(d_status) == 0,
          "attention", "(%s: n %d, %d/%d heads x %d, positions %d..%d, %d splits: max err %.2e (<= 3.1e-2), mean %.2e "
          "(<= 9.8e-4), %zu of %zu bit-exact, NaN %zu, deterministic %d)",
          c.name, c.n, c.n_heads, c.n_kv_heads, c.head_dim, c.first_pos, last, c.splits, max_err, mean_err, exact,
          want.size(), nan, runs[0] == runs[1]);
}

// A device position outside [0, max_positions): that token's rows NaN, the others right, status set.
inline void check_attention_bad_position(int32_t splits) {
    const int32_t n = 3, heads = 2, kv = 1, hd = 64, max_positions = 32;
    std::vector<uint16_t> q = random_bf16(size_t(n) * heads * hd, -1.0f, 1.0f);
    std::vector<uint16_t> kc = random_bf16(size_t(max_positions) * kv * hd, -1.0f, 1.0f);
    std::vector<uint16_t> vc = random_bf16(size_t(max_positions) * kv * hd, -1.0f, 1.0f);
    std::vector<int32_t> pos = {4, max_positions, 6};
    const size_t ws_bytes = ar4j_llama_attention_workspace_bytes(n, heads, kv, hd, max_positions, splits);
    DeviceBuffer d_q(q.size() * 2), d_kc(kc.size() * 2), d_vc(vc.size() * 2), d_pos(n * 4),
        d_out(size_t(n) * heads * hd * 2), d_ws(ws_bytes), d_status(4);
    d_q.upload(q);
    d_kc.upload(kc);
    d_vc.upload(vc);
    d_pos.upload(pos);
    d_out.poison();
    TEST_CUDA(cudaMemset(d_status.get(), 0, 4));
    const int rc = ar4j_llama_attention(d_q.get(), heads * hd, d_kc.get(), d_vc.get(), n, heads, kv, hd, max_positions,
                                        d_pos.as<int32_t>(), 0, 0.125f, d_out.get(), heads * hd, splits, d_ws.get(),
                                        ws_bytes, d_status.as<int32_t>(), 0, nullptr);
    sync();
    std::vector<uint16_t> out = d_out.download<uint16_t>(size_t(n) * heads * hd);
    bool bad_nan = true, good_finite = true;
    for (int e = 0; e < heads * hd; ++e) {
        bad_nan &= std::isnan(from_bf16(out[size_t(1) * heads * hd + e]));
        good_finite &= std::isfinite(from_bf16(out[e])) && std::isfinite(from_bf16(out[size_t(2) * heads * hd + e]));
    }
    check(rc == 0 && bad_nan && good_finite && device_status_word(d_status) == AR4J_LLAMA_ERROR_POSITION,
          "attention: bad position", "(%d splits: NaN rows %d, other rows finite %d, status %d)", splits, bad_nan,
          good_finite, device_status_word(d_status));
}

// ar4j_llama_rope_kv_append against ar4j_llama_rope then ar4j_llama_kv_append on the same fused
// QKV rows: q and both caches the same bits (caches poisoned, so untouched rows are compared too),
// k and v of the QKV rows unchanged by the fused kernel. Then a bad device position.
inline void check_rope_kv_append(int32_t n_heads, int32_t n_kv_heads, int32_t head_dim, bool device_positions) {
    const int32_t n = 5, max_positions = 4096;
    const int64_t stride = int64_t(n_heads + 2 * n_kv_heads) * head_dim;
    const int64_t kv_row = int64_t(n_kv_heads) * head_dim;
    const std::vector<uint16_t> qkv = random_bf16(size_t(n) * stride, -3.0f, 3.0f);
    const std::vector<float> inv_freq = inverse_frequencies(head_dim, 500000.0f);
    std::vector<int32_t> pos(n);
    for (int t = 0; t < n; ++t) pos[t] = device_positions ? (t * 997 + 11) % max_positions : 1000 + t;
    const int32_t start_pos = 1000;
    DeviceBuffer d_a(qkv.size() * 2), d_b(qkv.size() * 2), d_freq(inv_freq.size() * 4), d_pos(n * 4),
        d_kc_a(size_t(max_positions) * kv_row * 2), d_vc_a(size_t(max_positions) * kv_row * 2),
        d_kc_b(size_t(max_positions) * kv_row * 2), d_vc_b(size_t(max_positions) * kv_row * 2), d_status(4);
    d_a.upload(qkv);
    d_b.upload(qkv);
    d_freq.upload(inv_freq);
    d_pos.upload(pos);
    d_kc_a.poison();
    d_vc_a.poison();
    d_kc_b.poison();
    d_vc_b.poison();
    TEST_CUDA(cudaMemset(d_status.get(), 0, 4));
    const int32_t *positions = device_positions ? d_pos.as<int32_t>() : nullptr;
    uint16_t *a = d_a.as<uint16_t>(), *b = d_b.as<uint16_t>();
    const int64_t k_off = int64_t(n_heads) * head_dim, v_off = k_off + kv_row;
    int rc = ar4j_llama_rope(a, stride, a + k_off, stride, n, n_heads, n_kv_heads, head_dim, d_freq.as<float>(), 1.0f,
                             positions, start_pos, max_positions, d_status.as<int32_t>(), 0, nullptr);
    rc |= ar4j_llama_kv_append(a + k_off, stride, a + v_off, stride, n, n_kv_heads, head_dim, d_kc_a.get(),
                               d_vc_a.get(), max_positions, positions, start_pos, d_status.as<int32_t>(), 0, nullptr);
    rc |= ar4j_llama_rope_kv_append(b, stride, b + k_off, stride, b + v_off, stride, n, n_heads, n_kv_heads, head_dim,
                                    d_freq.as<float>(), 1.0f, d_kc_b.get(), d_vc_b.get(), max_positions, positions,
                                    start_pos, d_status.as<int32_t>(), device_positions, nullptr);
    sync();
    const std::vector<uint16_t> qa = d_a.download<uint16_t>(qkv.size()), qb = d_b.download<uint16_t>(qkv.size());
    size_t q_wrong = 0, kv_changed = 0;
    for (int t = 0; t < n; ++t) {
        for (int64_t e = 0; e < stride; ++e) {
            const size_t i = size_t(t) * stride + e;
            if (e < k_off) q_wrong += qa[i] != qb[i];
            else kv_changed += qb[i] != qkv[i];
        }
    }
    const bool caches = d_kc_a.download<uint16_t>(size_t(max_positions) * kv_row) ==
                            d_kc_b.download<uint16_t>(size_t(max_positions) * kv_row) &&
                        d_vc_a.download<uint16_t>(size_t(max_positions) * kv_row) ==
                            d_vc_b.download<uint16_t>(size_t(max_positions) * kv_row);
    check(rc == 0 && q_wrong == 0 && kv_changed == 0 && caches && device_status_word(d_status) == 0,
          "rope_kv_append", "(%d/%d heads x %d, %s: q differs from rope in %zu, caches == rope + kv_append %d, "
          "k/v rows changed %zu)", n_heads, n_kv_heads, head_dim, device_positions ? "device positions, PDL" : "start_pos",
          q_wrong, caches, kv_changed);

    // Token 1 at max_positions: its q unchanged, no cache row, status set; the others done.
    std::vector<int32_t> bad = pos;
    bad[1] = max_positions;
    d_pos.upload(bad);
    d_b.upload(qkv);
    d_kc_b.poison();
    TEST_CUDA(cudaMemset(d_status.get(), 0, 4));
    rc = ar4j_llama_rope_kv_append(b, stride, b + k_off, stride, b + v_off, stride, n, n_heads, n_kv_heads, head_dim,
                                   d_freq.as<float>(), 1.0f, d_kc_b.get(), d_vc_b.get(), max_positions,
                                   d_pos.as<int32_t>(), 0, d_status.as<int32_t>(), 0, nullptr);
    sync();
    const std::vector<uint16_t> qbad = d_b.download<uint16_t>(qkv.size());
    const std::vector<uint16_t> kbad = d_kc_b.download<uint16_t>(size_t(max_positions) * kv_row);
    bool q1_unchanged = true, row_written = true;
    for (int64_t e = 0; e < k_off; ++e) q1_unchanged &= qbad[size_t(stride) + e] == qkv[size_t(stride) + e];
    for (int64_t e = 0; e < kv_row; ++e) row_written &= kbad[size_t(bad[2]) * kv_row + e] != 0xFFFF;
    check(rc == 0 && q1_unchanged && row_written && device_status_word(d_status) == AR4J_LLAMA_ERROR_POSITION,
          "rope_kv_append: bad position", "(that token's q unchanged %d, other rows written %d, status %d)",
          q1_unchanged, row_written, device_status_word(d_status));
}

}  // namespace test
