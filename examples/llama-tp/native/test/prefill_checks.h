// Checks of prefill attention: ar4j_llama_prefill_softmax alone against a CPU reference, the
// one-kernel ar4j_llama_prefill_attention and the engine's cuBLAS sequence (cuBLAS batched GEMM S_h = Q_h . K_g^T, the softmax, batched GEMM
// O_h = P_h . V_g, with the engine's pointer arrays and strides) against the eager-attention
// reference of attention_checks.h. cuBLAS is opened with dlopen (libcublas.so.13, the GPU host's
// /usr/local/cuda/lib64), so that the test links nothing but the library under test.
#pragma once

#include <dlfcn.h>

#include "attention_checks.h"

namespace test {

// ---- the few cuBLAS calls the check needs (cublas_api.h values, CUDA 12/13) ----
struct Cublas {
    using Create = int (*)(void **);
    using Destroy = int (*)(void *);
    using GemmBatchedEx = int (*)(void *, int, int, int, int, int, const void *, const void *const *, int, int,
                                  const void *const *, int, int, const void *, void *const *, int, int, int, int, int);
    static constexpr int OP_N = 0, OP_T = 1, R_16BF = 14, COMPUTE_32F = 68, GEMM_DEFAULT = -1;
    void *library = nullptr;
    void *handle = nullptr;
    Create create = nullptr;
    Destroy destroy = nullptr;
    GemmBatchedEx gemm_batched = nullptr;
    const char *why = "";

    static Cublas &get() {
        static Cublas c = open();
        return c;
    }
    bool ok() const { return handle != nullptr; }

private:
    static Cublas open() {
        Cublas c;
        for (const char *name : {"libcublas.so.13", "/usr/local/cuda/lib64/libcublas.so.13", "libcublas.so.12",
                                 "/usr/local/cuda/lib64/libcublas.so.12", "libcublas.so"}) {
            c.library = dlopen(name, RTLD_NOW | RTLD_LOCAL);
            if (c.library != nullptr) break;
        }
        if (c.library == nullptr) {
            c.why = "libcublas.so.13 not found (set LD_LIBRARY_PATH to the CUDA toolkit's lib64)";
            return c;
        }
        c.create = reinterpret_cast<Create>(dlsym(c.library, "cublasCreate_v2"));
        c.destroy = reinterpret_cast<Destroy>(dlsym(c.library, "cublasDestroy_v2"));
        c.gemm_batched = reinterpret_cast<GemmBatchedEx>(dlsym(c.library, "cublasGemmBatchedEx"));
        if (c.create == nullptr || c.destroy == nullptr || c.gemm_batched == nullptr) {
            c.why = "a cuBLAS symbol is missing";
            return c;
        }
        void *h = nullptr;
        if (c.create(&h) != 0) {
            c.why = "cublasCreate_v2 failed";
            return c;
        }
        c.handle = h;
        return c;
    }
};

// ar4j_llama_prefill_softmax alone: random bf16 "matmul outputs" in a [heads][n][row_stride]
// buffer (columns beyond the keys random too: they must come back unchanged), against
// s = bf16(d * scale), p = bf16(exp(s - max) / sum) in double between the roundings, 0 past the
// causal limit. Tolerance: 1 bf16 ulp of p (expf and the fp32 sum's order), >= 99% bit-exact.
inline void check_prefill_softmax(int32_t n, int32_t n_heads, int32_t start_pos, int32_t extra_columns) {
    const int32_t keys = start_pos + n;
    const int64_t row_stride = (int64_t(keys) + 7) / 8 * 8 + extra_columns;
    const int64_t head_stride = int64_t(n) * row_stride + 8;
    const float scale = float(1.0 / std::sqrt(128.0));
    std::vector<uint16_t> s = random_bf16(size_t(n_heads) * head_stride, -40.0f, 40.0f);
    DeviceBuffer d(s.size() * 2);
    d.upload(s);
    const int rc = ar4j_llama_prefill_softmax(d.get(), row_stride, head_stride, n, n_heads, start_pos, scale, 1, nullptr);
    sync();
    std::vector<uint16_t> out = d.download<uint16_t>(s.size());
    size_t exact = 0, count = 0, outside = 0, mask_wrong = 0, beyond_changed = 0;
    for (int h = 0; h < n_heads; ++h) {
        for (int i = 0; i < n; ++i) {
            const size_t base = size_t(h) * head_stride + size_t(i) * row_stride;
            const int valid = start_pos + i + 1;
            std::vector<double> x(valid);
            double mx = -INFINITY;
            for (int j = 0; j < valid; ++j) {
                x[j] = rb(from_bf16(s[base + j]) * scale);
                mx = std::max(mx, x[j]);
            }
            double sum = 0;
            for (int j = 0; j < valid; ++j) sum += std::exp(x[j] - mx);
            for (int j = 0; j < valid; ++j) {
                const float want = rb(float(std::exp(x[j] - mx) / sum));
                const float got = from_bf16(out[base + j]);
                ++count;
                exact += bits(got) == bits(want);
                outside += !(std::fabs(got - want) <= bf16_ulp(want));
            }
            for (int j = valid; j < keys; ++j) mask_wrong += out[base + j] != 0;
            for (int64_t j = keys; j < row_stride; ++j) beyond_changed += out[base + j] != s[base + j];
        }
        for (int64_t j = int64_t(n) * row_stride; j < head_stride; ++j) {
            beyond_changed += out[size_t(h) * head_stride + j] != s[size_t(h) * head_stride + j];
        }
    }
    check(rc == 0 && outside == 0 && exact >= count * 99 / 100 && mask_wrong == 0 && beyond_changed == 0,
          "prefill_softmax", "(%d rows x %d heads from position %d, keys %d: %zu of %zu bit-exact, %zu beyond 1 ulp, "
          "%zu masked not 0, %zu outside the keys changed, rc %d)",
          n, n_heads, start_pos, keys, exact, count, outside, mask_wrong, beyond_changed, rc);
}

// The engine's prefill attention of one chunk: n query rows at positions start .. start + n - 1
// (c.first_pos = start; context = start + n keys) read in place from a fused QKV buffer, the KV
// cache rows 0 .. start + n - 1 filled (the rows after them NaN), scores in a workspace of
// [heads][n][row_stride = max_positions], the output into [n][heads * head_dim]. Against
// reference_attention with check_attention's tolerance (the sums are cuBLAS's, not the
// reference's order); the output poisoned before.
inline void check_prefill_attention(const AttentionCase &c) {
    Cublas &cb = Cublas::get();
    if (!check(cb.ok(), "prefill attention (cuBLAS)", "(%s: %s)", c.name, cb.ok() ? "loaded" : cb.why)) return;
    const int64_t q_row = int64_t(c.n_heads) * c.head_dim, kv_row = int64_t(c.n_kv_heads) * c.head_dim;
    const int64_t qkv_stride = q_row + 2 * kv_row;
    const int32_t keys = c.first_pos + c.n;
    const int group = c.n_heads / c.n_kv_heads;
    std::vector<uint16_t> qkv = random_bf16(size_t(c.n) * qkv_stride, -4.0f, 4.0f);
    std::vector<uint16_t> q(size_t(c.n) * q_row);
    for (int t = 0; t < c.n; ++t)
        for (int64_t e = 0; e < q_row; ++e) q[size_t(t) * q_row + e] = qkv[size_t(t) * qkv_stride + e];
    std::vector<uint16_t> kc(size_t(c.max_positions) * kv_row, 0xFFFF), vc(size_t(c.max_positions) * kv_row, 0xFFFF);
    for (int64_t i = 0; i < int64_t(keys) * kv_row; ++i) {
        kc[i] = to_bf16(uniform(-1.0f, 1.0f));
        vc[i] = to_bf16(uniform(-1.0f, 1.0f));
    }
    std::vector<int32_t> pos(c.n);
    for (int t = 0; t < c.n; ++t) pos[t] = c.first_pos + t;
    const float scale = float(1.0 / std::sqrt(double(c.head_dim)));
    std::vector<float> want = reference_attention(c, q, kc, vc, pos, scale);

    const int64_t ld_s = (int64_t(c.max_positions) + 7) / 8 * 8;
    const int64_t head_stride = int64_t(c.n) * ld_s;
    DeviceBuffer d_qkv(qkv.size() * 2), d_kc(kc.size() * 2), d_vc(vc.size() * 2),
        d_s(size_t(c.n_heads) * head_stride * 2), d_out(size_t(c.n) * q_row * 2), d_ptr(size_t(c.n_heads) * 8 * 6);
    d_qkv.upload(qkv);
    d_kc.upload(kc);
    d_vc.upload(vc);
    d_s.poison();
    d_out.poison();
    // The pointer arrays, as the engine builds them once per layer: per head h (KV head g = h / group)
    // K_g, Q_h, S_h for the scores, V_g, P_h = S_h, O_h for the output.
    std::vector<const void *> ptr(size_t(c.n_heads) * 6);
    const uint16_t *qkv_d = d_qkv.as<uint16_t>(), *k_d = d_kc.as<uint16_t>(), *v_d = d_vc.as<uint16_t>();
    uint16_t *s_d = d_s.as<uint16_t>(), *o_d = d_out.as<uint16_t>();
    for (int h = 0; h < c.n_heads; ++h) {
        const int g = h / group;
        ptr[0 * c.n_heads + h] = k_d + int64_t(g) * c.head_dim;
        ptr[1 * c.n_heads + h] = qkv_d + int64_t(h) * c.head_dim;
        ptr[2 * c.n_heads + h] = s_d + int64_t(h) * head_stride;
        ptr[3 * c.n_heads + h] = v_d + int64_t(g) * c.head_dim;
        ptr[4 * c.n_heads + h] = s_d + int64_t(h) * head_stride;
        ptr[5 * c.n_heads + h] = o_d + int64_t(h) * c.head_dim;
    }
    d_ptr.upload(ptr);
    const void *const *p = d_ptr.as<const void *const>();
    const float one = 1.0f, zero = 0.0f;
    // S_h^T (keys x n, col-major, ld ld_s) = K_g (keys x hd, ld kv_row: op T of the col-major hd x keys) . Q_h^T.
    const int s1 = cb.gemm_batched(cb.handle, Cublas::OP_T, Cublas::OP_N, keys, c.n, c.head_dim, &one, p,
                                   Cublas::R_16BF, int(kv_row), p + c.n_heads, Cublas::R_16BF, int(qkv_stride), &zero,
                                   const_cast<void *const *>(p + 2 * c.n_heads), Cublas::R_16BF, int(ld_s), c.n_heads,
                                   Cublas::COMPUTE_32F, Cublas::GEMM_DEFAULT);
    const int rc = ar4j_llama_prefill_softmax(s_d, ld_s, head_stride, c.n, c.n_heads, c.first_pos, scale, 0, nullptr);
    // O_h^T (hd x n, ld q_row) = V_g^T (hd x keys, ld kv_row) . P_h^T (keys x n, ld ld_s).
    const int s2 = cb.gemm_batched(cb.handle, Cublas::OP_N, Cublas::OP_N, c.head_dim, c.n, keys, &one,
                                   p + 3 * c.n_heads, Cublas::R_16BF, int(kv_row), p + 4 * c.n_heads, Cublas::R_16BF,
                                   int(ld_s), &zero, const_cast<void *const *>(p + 5 * c.n_heads), Cublas::R_16BF,
                                   int(q_row), c.n_heads, Cublas::COMPUTE_32F, Cublas::GEMM_DEFAULT);
    sync();
    // The same chunk through the one-kernel tensor-core attention, into a second poisoned output.
    DeviceBuffer d_fa(size_t(c.n) * q_row * 2);
    d_fa.poison();
    const int fa = ar4j_llama_prefill_attention(qkv_d, qkv_stride, k_d, v_d, kv_row, d_fa.get(), q_row, c.n,
                                                c.first_pos, c.n_heads, c.n_kv_heads, c.head_dim, scale, 1, nullptr);
    sync();
    struct Errors { double max, mean; size_t nans; };
    auto errors = [&](const DeviceBuffer &d) {
        std::vector<uint16_t> out = d.download<uint16_t>(size_t(c.n) * q_row);
        Errors e = {0.0, 0.0, 0};
        for (size_t i = 0; i < out.size(); ++i) {
            const float got = from_bf16(out[i]);
            if (std::isnan(got)) {
                ++e.nans;
                continue;
            }
            const double err = std::fabs(double(got) - want[i]);
            e.max = std::max(e.max, err);
            e.mean += err;
        }
        e.mean /= double(out.size());
        return e;
    };
    const Errors g = errors(d_out), f = errors(d_fa);
    // Values are in [-1, 1): check_attention's bounds.
    check(s1 == 0 && s2 == 0 && rc == 0 && g.nans == 0 && g.max <= 1.0 / 32 && g.mean <= 1.0 / 1024,
          "prefill attention", "(%s: %d rows from %d, %d/%d heads x %d: max err %.5f, mean %.6f, NaN %zu, "
          "gemm %d/%d, softmax %d)",
          c.name, c.n, c.first_pos, c.n_heads, c.n_kv_heads, c.head_dim, g.max, g.mean, g.nans, s1, s2, rc);
    check(fa == 0 && f.nans == 0 && f.max <= 1.0 / 32 && f.mean <= 1.0 / 1024, "prefill_attention (one kernel)",
          "(%s: %d rows from %d, %d/%d heads x %d: max err %.5f, mean %.6f, NaN %zu, rc %d)", c.name, c.n,
          c.first_pos, c.n_heads, c.n_kv_heads, c.head_dim, f.max, f.mean, f.nans, fa);
}

// Bad arguments of the one-kernel prefill attention: named codes, nothing launched.
inline void check_prefill_attention_errors() {
    DeviceBuffer d(1 << 16);
    const char *p = d.as<char>();
    void *o = d.get();
    const float scale = 0.125f;
    // A valid call: 2 rows, 4/2 heads of 64 (q and out rows 256, kv rows 128).
    auto call = [&](const void *q, int64_t qs, int64_t kvs, int64_t os, int32_t n, int32_t start, int32_t heads,
                    int32_t kv, int32_t dim, float sc) {
        return ar4j_llama_prefill_attention(q, qs, p, p, kvs, o, os, n, start, heads, kv, dim, sc, 0, nullptr);
    };
    const bool ok = call(nullptr, 256, 128, 256, 2, 0, 4, 2, 64, scale) == AR4J_LLAMA_ERROR_NULL_POINTER &&
                    call(p, 256, 128, 256, 2, 0, 4, 2, 96, scale) == AR4J_LLAMA_ERROR_HEAD_DIM &&
                    call(p, 256, 128, 256, 0, 0, 4, 2, 64, scale) == AR4J_LLAMA_ERROR_SIZE &&
                    call(p, 256, 128, 256, 65535 * 64 + 1, 0, 4, 2, 64, scale) == AR4J_LLAMA_ERROR_SIZE &&
                    call(p, 256, 128, 256, 2, -1, 4, 2, 64, scale) == AR4J_LLAMA_ERROR_SIZE &&
                    call(p, 256, 128, 256, 2, 0, 4, 3, 64, scale) == AR4J_LLAMA_ERROR_GQA &&
                    call(p, 128, 128, 256, 2, 0, 4, 2, 64, scale) == AR4J_LLAMA_ERROR_STRIDE &&
                    call(p, 256, 64, 256, 2, 0, 4, 2, 64, scale) == AR4J_LLAMA_ERROR_STRIDE &&
                    call(p + 2, 256, 128, 256, 2, 0, 4, 2, 64, scale) == AR4J_LLAMA_ERROR_MISALIGNED &&
                    call(p, 260, 128, 256, 2, 0, 4, 2, 64, scale) == AR4J_LLAMA_ERROR_MISALIGNED &&
                    call(p, 256, 128, 256, 2, 0, 4, 2, 64, 0.0f) == AR4J_LLAMA_ERROR_INVALID_ARGUMENT;
    check(ok, "prefill_attention refusals", "(null, head_dim, size, more rows than the grid holds, start, GQA, strides, alignment, scale)");
}

// Bad arguments of the softmax: named codes, nothing launched.
inline void check_prefill_softmax_errors() {
    DeviceBuffer d(4096);
    const float scale = 0.1f;
    const bool ok =
        ar4j_llama_prefill_softmax(nullptr, 8, 64, 1, 1, 0, scale, 0, nullptr) == AR4J_LLAMA_ERROR_NULL_POINTER &&
        ar4j_llama_prefill_softmax(d.get(), 8, 64, 0, 1, 0, scale, 0, nullptr) == AR4J_LLAMA_ERROR_SIZE &&
        ar4j_llama_prefill_softmax(d.get(), 8, 64, 2, 1, 7, scale, 0, nullptr) == AR4J_LLAMA_ERROR_STRIDE &&
        ar4j_llama_prefill_softmax(d.get(), 16, 16, 2, 2, 0, scale, 0, nullptr) == AR4J_LLAMA_ERROR_STRIDE &&
        ar4j_llama_prefill_softmax(d.get(), 12, 64, 2, 1, 0, scale, 0, nullptr) == AR4J_LLAMA_ERROR_MISALIGNED &&
        ar4j_llama_prefill_softmax(d.as<char>() + 2, 8, 64, 2, 1, 0, scale, 0, nullptr) == AR4J_LLAMA_ERROR_MISALIGNED &&
        ar4j_llama_prefill_softmax(d.get(), 8, 64, 2, 1, 0, -1.0f, 0, nullptr) == AR4J_LLAMA_ERROR_INVALID_ARGUMENT;
    check(ok, "prefill_softmax refusals", "(null, size, stride, alignment, scale)");
}

}  // namespace test
