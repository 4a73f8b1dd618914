// Checks of the copies, element-wise kernels, argmax, fills and conversions against CPU references.
#pragma once

#include <algorithm>

#include "random_reference.h"
#include "test_support.h"

namespace test {

// Embedding gather of one vocabulary shard: exact, zero rows for other shards' ids.
inline void check_embedding(int32_t hidden) {
    const int32_t vocab = 1000, vocab_start = 250, vocab_end = 500, n = 40;
    std::vector<uint16_t> table = random_bf16(size_t(vocab_end - vocab_start) * hidden, -1.0f, 1.0f);
    std::vector<int32_t> ids(n);
    for (int i = 0; i < n; ++i) ids[i] = i % 3 == 0 ? uniform_int(0, vocab - 1) : uniform_int(vocab_start, vocab_end - 1);
    ids[1] = vocab_start;
    ids[2] = vocab_end - 1;
    ids[3] = vocab_end;  // the next shard's first row
    DeviceBuffer d_table(table.size() * 2), d_ids(n * 4), d_out(size_t(n) * hidden * 2), d_status(4);
    d_table.upload(table);
    d_ids.upload(ids);
    d_out.poison();
    TEST_CUDA(cudaMemset(d_status.get(), 0, 4));
    int rc = ar4j_llama_embedding(d_ids.as<int32_t>(), n, d_table.get(), vocab_start, vocab_end, vocab, hidden,
                                  d_out.get(), d_status.as<int32_t>(), 0, nullptr);
    sync();
    std::vector<uint16_t> out = d_out.download<uint16_t>(size_t(n) * hidden);
    size_t wrong = 0;
    for (int t = 0; t < n; ++t) {
        for (int c = 0; c < hidden; ++c) {
            const bool mine = ids[t] >= vocab_start && ids[t] < vocab_end;
            const uint16_t want = mine ? table[size_t(ids[t] - vocab_start) * hidden + c] : 0;
            wrong += out[size_t(t) * hidden + c] != want;
        }
    }
    check(rc == 0 && wrong == 0 && device_status_word(d_status) == 0, "embedding", "(hidden %d, exact: %zu wrong of %zu, rc %d)",
          hidden, wrong, out.size(), rc);

    // An id outside [0, vocab): that row zero, the others still gathered, the status word set.
    ids[5] = vocab;
    ids[6] = -7;
    d_ids.upload(ids);
    d_out.poison();
    rc = ar4j_llama_embedding(d_ids.as<int32_t>(), n, d_table.get(), vocab_start, vocab_end, vocab, hidden,
                              d_out.get(), d_status.as<int32_t>(), 0, nullptr);
    sync();
    out = d_out.download<uint16_t>(size_t(n) * hidden);
    bool zero_rows = true, others = true;
    for (int c = 0; c < hidden; ++c) {
        zero_rows &= out[size_t(5) * hidden + c] == 0 && out[size_t(6) * hidden + c] == 0;
        others &= out[size_t(1) * hidden + c] == table[c];
    }
    check(rc == 0 && zero_rows && others && device_status_word(d_status) == AR4J_LLAMA_ERROR_TOKEN_ID,
          "embedding: bad token id", "(zero rows %d, other rows %d, status %d)", zero_rows, others,
          device_status_word(d_status));
}

// KV append from a fused QKV row layout, at start_pos + t and at scattered device positions.
inline void check_kv_append(int32_t n_kv_heads, int32_t head_dim, int64_t row_stride) {
    const int32_t max_positions = 64, n = 5;
    const int64_t row = int64_t(n_kv_heads) * head_dim;
    std::vector<uint16_t> k = random_bf16(size_t(n) * row_stride, -2.0f, 2.0f);
    std::vector<uint16_t> v = random_bf16(size_t(n) * row_stride, -2.0f, 2.0f);
    DeviceBuffer d_k(k.size() * 2), d_v(v.size() * 2), d_kc(size_t(max_positions) * row * 2),
        d_vc(size_t(max_positions) * row * 2), d_pos(n * 4), d_status(4);
    d_k.upload(k);
    d_v.upload(v);
    for (int variant = 0; variant < 2; ++variant) {
        std::vector<int32_t> pos(n);
        for (int t = 0; t < n; ++t) pos[t] = variant == 0 ? 17 + t : (t * 13 + 5) % max_positions;
        d_pos.upload(pos);
        d_kc.poison();
        d_vc.poison();
        TEST_CUDA(cudaMemset(d_status.get(), 0, 4));
        const int rc = ar4j_llama_kv_append(d_k.get(), row_stride, d_v.get(), row_stride, n, n_kv_heads, head_dim,
                                            d_kc.get(), d_vc.get(), max_positions,
                                            variant == 0 ? nullptr : d_pos.as<int32_t>(), 17, d_status.as<int32_t>(),
                                            variant, nullptr);
        sync();
        std::vector<uint16_t> kc = d_kc.download<uint16_t>(size_t(max_positions) * row);
        std::vector<uint16_t> vc = d_vc.download<uint16_t>(size_t(max_positions) * row);
        size_t wrong = 0;
        std::vector<int> written(max_positions, -1);
        for (int t = 0; t < n; ++t) written[pos[t]] = t;
        for (int p = 0; p < max_positions; ++p) {
            for (int64_t e = 0; e < row; ++e) {
                const int t = written[p];
                const uint16_t want_k = t < 0 ? 0xFFFF : k[size_t(t) * row_stride + e];
                const uint16_t want_v = t < 0 ? 0xFFFF : v[size_t(t) * row_stride + e];
                wrong += kc[size_t(p) * row + e] != want_k;
                wrong += vc[size_t(p) * row + e] != want_v;
            }
        }
        check(rc == 0 && wrong == 0 && device_status_word(d_status) == 0, "kv_append",
              "(%s, %d kv heads x %d, stride %lld, exact incl. untouched rows: %zu wrong, rc %d)",
              variant == 0 ? "start_pos" : "device positions, PDL", n_kv_heads, head_dim, (long long)row_stride,
              wrong, rc);
    }
    // A position outside [0, max_positions) on the device: not written, status set.
    std::vector<int32_t> pos = {1, 2, max_positions, 3, -1};
    d_pos.upload(pos);
    d_kc.poison();
    d_vc.poison();
    TEST_CUDA(cudaMemset(d_status.get(), 0, 4));
    const int rc = ar4j_llama_kv_append(d_k.get(), row_stride, d_v.get(), row_stride, n, n_kv_heads, head_dim,
                                        d_kc.get(), d_vc.get(), max_positions, d_pos.as<int32_t>(), 0,
                                        d_status.as<int32_t>(), 0, nullptr);
    sync();
    std::vector<uint16_t> kc = d_kc.download<uint16_t>(size_t(max_positions) * row);
    const bool row3 = kc[size_t(3) * row] == k[size_t(3) * row_stride];
    check(rc == 0 && row3 && device_status_word(d_status) == AR4J_LLAMA_ERROR_POSITION, "kv_append: bad position",
          "(valid rows written %d, status %d)", row3, device_status_word(d_status));
}

// SiLU(gate) x up from one fused gate_up output. Reference: the same rounding points with the
// host's expf; exact except where the host's and the device's expf differ by an ulp.
inline void check_silu_mul() {
    const int32_t rows = 3, cols = 1000;
    std::vector<uint16_t> gate_up = random_bf16(size_t(rows) * 2 * cols, -8.0f, 8.0f);
    DeviceBuffer d_in(gate_up.size() * 2), d_out(size_t(rows) * cols * 2);
    d_in.upload(gate_up);
    d_out.poison();
    const int rc = ar4j_llama_silu_mul(d_in.get(), 2 * cols, d_in.as<uint16_t>() + cols, 2 * cols, d_out.get(), cols,
                                       rows, cols, 1, nullptr);
    sync();
    std::vector<uint16_t> out = d_out.download<uint16_t>(size_t(rows) * cols);
    size_t exact = 0, outside = 0;
    for (int r = 0; r < rows; ++r) {
        for (int c = 0; c < cols; ++c) {
            const float g = from_bf16(gate_up[size_t(r) * 2 * cols + c]);
            const float u = from_bf16(gate_up[size_t(r) * 2 * cols + cols + c]);
            const float want = rb(rb(g / (1.0f + std::exp(-g))) * u);
            const float got = from_bf16(out[size_t(r) * cols + c]);
            exact += bits(got) == bits(want);
            outside += !(std::fabs(got - want) <= 2.0f * bf16_ulp(want));
        }
    }
    const size_t count = size_t(rows) * cols;
    check(rc == 0 && outside == 0 && exact >= count * 999 / 1000, "silu_mul",
          "(%zu of %zu bit-exact, need >= 99.9%%; %zu beyond 2 bf16 ulps, need 0)", exact, count, outside);
}

// Y = X · Wᵀ for 1..8 rows against a double-precision host sum: each output within one bf16
// rounding of the exact value (plus the fp32 sum's error), rows of X at a padded stride, n not a
// multiple of the block's 8 features, k not a multiple of the 4 x 32 chunks of the unrolled loop.
inline void check_linear_rows(int32_t rows, int32_t n, int32_t k) {
    const int64_t x_stride = k + 24, y_stride = n + 5;
    std::vector<uint16_t> w = random_bf16(size_t(n) * k, -1.0f, 1.0f);
    std::vector<uint16_t> x = random_bf16(size_t(rows) * x_stride, -2.0f, 2.0f);
    DeviceBuffer d_w(w.size() * 2), d_x(x.size() * 2), d_y(size_t(rows) * y_stride * 2);
    d_w.upload(w);
    d_x.upload(x);
    d_y.poison();
    const int rc = ar4j_llama_linear_rows(d_w.get(), d_x.get(), x_stride, d_y.get(), y_stride, rows, n, k, 1, nullptr);
    sync();
    std::vector<uint16_t> y = d_y.download<uint16_t>(size_t(rows) * y_stride);
    size_t outside = 0, untouched_gap = 0;
    double worst = 0.0;
    for (int r = 0; r < rows; ++r) {
        for (int j = 0; j < n; ++j) {
            double exact = 0.0, magnitude = 0.0;
            for (int i = 0; i < k; ++i) {
                const double p = double(from_bf16(w[size_t(j) * k + i])) * from_bf16(x[size_t(r) * x_stride + i]);
                exact += p;
                magnitude += std::fabs(p);
            }
            const float got = from_bf16(y[size_t(r) * y_stride + j]);
            // One bf16 rounding of the result, plus fp32 accumulation error (k * 2^-24 of the magnitude).
            const double bound = bf16_ulp(float(exact)) + double(k) * magnitude * 6e-8;
            const double error = std::fabs(double(got) - exact);
            worst = std::max(worst, error / bound);
            outside += !(error <= bound);
        }
        for (int64_t j = n; j < y_stride; ++j) untouched_gap += y[size_t(r) * y_stride + j] == 0xFFFFu;
    }
    check(rc == 0 && outside == 0 && untouched_gap == size_t(rows) * (y_stride - n), "linear_rows",
          "(%d rows x %d x %d: %zu outside one bf16 ulp + fp32 sum error, worst %.2f of the bound; "
          "row padding untouched %d)", rows, n, k, outside, worst, untouched_gap == size_t(rows) * (y_stride - n));
}

// Argmax as torch.argmax: ties to the lowest index, NaN wins, all -inf gives 0.
inline void check_argmax(int32_t dtype) {
    const int32_t rows = 5, cols = 4096, stride = 4100, offset = 1000;
    std::vector<float> logits(size_t(rows) * stride);
    for (auto &x : logits) x = rb(uniform(-5.0f, 5.0f));
    auto at = [&](int r, int c) -> float & { return logits[size_t(r) * stride + c]; };
    at(1, 3000) = 9.0f; at(1, 50) = 9.0f; at(1, 100) = 9.0f;        // ties: 50
    at(2, 900) = NAN; at(2, 700) = NAN; at(2, 10) = 100.0f;          // NaN: 700
    for (int c = 0; c < cols; ++c) at(3, c) = -INFINITY;             // all -inf: 0
    at(4, cols - 1) = 7.5f; at(4, 0) = 7.25f;                        // the last column
    for (int r = 0; r < rows; ++r) for (int c = cols; c < stride; ++c) at(r, c) = 1e30f;  // beyond cols: ignored
    std::vector<int32_t> want(rows);
    for (int r = 0; r < rows; ++r) want[r] = reference_argmax(&at(r, 0), cols);
    const bool bf = dtype == AR4J_LLAMA_DTYPE_BFLOAT16;
    DeviceBuffer d_logits(logits.size() * (bf ? 2 : 4)), d_index(rows * 4), d_value(rows * 4);
    if (bf) {
        std::vector<uint16_t> h(logits.size());
        for (size_t i = 0; i < h.size(); ++i) h[i] = to_bf16(logits[i]);
        d_logits.upload(h);
    } else {
        d_logits.upload(logits);
    }
    d_index.poison();
    d_value.poison();
    const int rc = ar4j_llama_argmax(dtype, d_logits.get(), stride, rows, cols, offset, d_index.as<int32_t>(),
                                     d_value.as<float>(), 1, nullptr);
    sync();
    std::vector<int32_t> index = d_index.download<int32_t>(rows);
    std::vector<float> value = d_value.download<float>(rows);
    bool ok = rc == 0;
    for (int r = 0; r < rows; ++r) {
        ok &= index[r] == offset + want[r];
        const float w = at(r, want[r]);
        ok &= std::isnan(w) ? std::isnan(value[r]) : bits(value[r]) == bits(w);
    }
    check(ok, "argmax", "(%s: rows %d %d %d %d %d, want %d %d %d %d %d; ties, NaN, -inf, last column)",
          bf ? "bf16" : "fp32", index[0] - offset, index[1] - offset, index[2] - offset, index[3] - offset,
          index[4] - offset, want[0], want[1], want[2], want[3], want[4]);
}

// Seeded fill: exact against the stated formula; every sharding of a tensor gives the same bits.
inline void check_fill_random() {
    const int64_t rows = 96, cols = 200;
    const uint64_t seed = 0x1234abcd5678ull + uint64_t(uniform_int(0, 1 << 30));
    const float std_dev = 0.05f;
    DeviceBuffer d_full(rows * cols * 2), d_part(rows * cols * 2);
    d_full.poison();
    int rc = ar4j_llama_fill_random_bf16(d_full.get(), rows, cols, cols, 0, 0, cols, seed, std_dev, nullptr);
    sync();
    std::vector<uint16_t> full = d_full.download<uint16_t>(rows * cols);
    size_t wrong = 0;
    double sum = 0.0, sum_sq = 0.0;
    for (int64_t i = 0; i < rows * cols; ++i) {
        const float want = rb(reference_random_value(seed, uint64_t(i), std_dev));
        wrong += full[i] != to_bf16(want);
        sum += from_bf16(full[i]);
        sum_sq += double(from_bf16(full[i])) * from_bf16(full[i]);
    }
    const double mean = sum / double(rows * cols);
    const double sd = std::sqrt(sum_sq / double(rows * cols) - mean * mean);
    check(rc == 0 && wrong == 0, "fill_random_bf16", "(exact against the formula: %zu wrong of %lld)", wrong,
          (long long)(rows * cols));
    check(std::fabs(mean) < 0.05 * std_dev && std::fabs(sd - std_dev) < 0.03 * std_dev, "fill_random_bf16: moments",
          "(mean %.5f, sd %.5f for std %.3f; need |mean| < 5%% and sd within 3%%)", mean, sd, std_dev);
    // Column shards (TP of a column-parallel weight) and row shards (row-parallel), each in its own buffer.
    for (int split = 0; split < 2; ++split) {
        d_part.poison();
        const int64_t parts = 4;
        std::vector<uint16_t> joined(rows * cols);
        for (int64_t p = 0; p < parts; ++p) {
            const int64_t r0 = split == 0 ? 0 : p * rows / parts, c0 = split == 0 ? p * cols / parts : 0;
            const int64_t nr = split == 0 ? rows : rows / parts, nc = split == 0 ? cols / parts : cols;
            rc |= ar4j_llama_fill_random_bf16(d_part.get(), nr, nc, nc, r0, c0, cols, seed, std_dev, nullptr);
            sync();
            std::vector<uint16_t> shard = d_part.download<uint16_t>(nr * nc);
            for (int64_t r = 0; r < nr; ++r)
                for (int64_t c = 0; c < nc; ++c) joined[(r0 + r) * cols + c0 + c] = shard[r * nc + c];
        }
        check(rc == 0 && joined == full, "fill_random_bf16: sharding", "(%s shards of 4 join to the unsharded tensor)",
              split == 0 ? "column" : "row");
    }
}

inline void check_fill_and_conversions() {
    const int64_t count = 10007;
    DeviceBuffer d_bf(count * 2), d_f(count * 4);
    d_bf.poison();
    int rc = ar4j_llama_fill_bf16(d_bf.get(), count, 0.3f, nullptr);
    sync();
    std::vector<uint16_t> filled = d_bf.download<uint16_t>(count);
    size_t wrong = 0;
    for (auto h : filled) wrong += h != to_bf16(0.3f);
    check(rc == 0 && wrong == 0, "fill_bf16", "(0.3 -> 0x%04x everywhere: %zu wrong)", to_bf16(0.3f), wrong);

    // bf16 -> fp32: every bit pattern.
    std::vector<uint16_t> all(65536);
    for (int i = 0; i < 65536; ++i) all[i] = uint16_t(i);
    DeviceBuffer d_all(65536 * 2), d_all_f(65536 * 4);
    d_all.upload(all);
    d_all_f.poison();
    rc = ar4j_llama_bf16_to_f32(d_all.get(), d_all_f.as<float>(), 65536, nullptr);
    sync();
    std::vector<float> widened = d_all_f.download<float>(65536);
    wrong = 0;
    for (int i = 0; i < 65536; ++i) wrong += bits(widened[i]) != (uint32_t(i) << 16) && !std::isnan(widened[i]);
    for (int i = 0; i < 65536; ++i) wrong += std::isnan(from_bf16(uint16_t(i))) != std::isnan(widened[i]);
    check(rc == 0 && wrong == 0, "bf16_to_f32", "(all 65536 patterns: %zu wrong)", wrong);

    // fp32 -> bf16: ties to even, overflow to inf, NaN, signed zero, subnormals, random values.
    std::vector<float> in(count);
    const uint32_t specials[] = {0x3F808000u, 0x3F818000u, 0x7F7FFFFFu, 0xFF7FFFFFu, 0x7F800000u, 0x80000000u,
                                 0x00000001u, 0x807FFFFFu, 0x7FC00000u, 0x3F800001u, 0x3F80FFFFu, 0x00008000u};
    for (int64_t i = 0; i < count; ++i) {
        uint32_t u = i < 12 ? specials[i] : uint32_t(rng()());
        memcpy(&in[i], &u, 4);
    }
    d_f.upload(in);
    d_bf.poison();
    rc = ar4j_llama_f32_to_bf16(d_f.as<float>(), d_bf.get(), count, nullptr);
    sync();
    std::vector<uint16_t> narrowed = d_bf.download<uint16_t>(count);
    wrong = 0;
    for (int64_t i = 0; i < count; ++i) {
        const uint16_t want = to_bf16(in[i]);
        const bool both_nan = std::isnan(from_bf16(want)) && std::isnan(from_bf16(narrowed[i]));
        wrong += !both_nan && narrowed[i] != want;
    }
    check(rc == 0 && wrong == 0, "f32_to_bf16", "(%lld values incl. ties, overflow, NaN, subnormals: %zu wrong)",
          (long long)count, wrong);
}

}  // namespace test
