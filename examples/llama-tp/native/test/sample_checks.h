// Checks of ar4j_llama_sample: determinism per (seed, counter), the counter's advance per launch and per
// graph replay, a chi-square goodness of fit against the exact distribution computed on the CPU in
// double, and that nothing outside the top-k set or the nucleus (or non-finite) is ever drawn.
#pragma once

#include <algorithm>

#include "test_support.h"

namespace test {

// The state: the counter, then the zero completion word.
inline void set_sample_state(DeviceBuffer &state, uint64_t counter) {
    state.upload(std::vector<uint64_t>{counter, 0});
}
inline uint64_t sample_counter(const DeviceBuffer &state) { return state.download<uint64_t>(1)[0]; }

// The probabilities the header defines, in double: softmax(x / T) over the finite logits, cut to the values
// >= the k-th largest, then to the values >= the largest v whose kept mass from the top reaches p. margin:
// the smallest distance between p and a cumulative mass at a value boundary (a draw near a boundary could
// round either way in the kernel's fixed point).
inline std::vector<double> sample_reference(const std::vector<float> &x, double t, int k, double p, double *margin) {
    const size_t n = x.size();
    std::vector<double> prob(n, 0.0);
    std::vector<float> finite;
    for (float v : x) if (std::isfinite(v)) finite.push_back(v);
    std::sort(finite.begin(), finite.end(), [](float a, float b) { return a > b; });
    const double max = finite[0];
    const float vk = (k > 0 && size_t(k) < finite.size()) ? finite[size_t(k) - 1] : finite.back();
    double kept = 0;
    for (float v : finite) if (v >= vk) kept += std::exp((double(v) - max) / t);
    // Distinct kept values from the top, and the mass down to each.
    std::vector<float> values;
    for (float v : finite) if (v >= vk && (values.empty() || values.back() != v)) values.push_back(v);
    float vp = values.back();
    double cum = 0;
    *margin = 1.0;
    bool cut = false;
    for (float value : values) {
        for (float v : finite) if (v == value) cum += std::exp((double(v) - max) / t) / kept;
        if (p < 1.0) *margin = std::min(*margin, std::fabs(cum - p));
        if (!cut && cum >= p) { vp = value; cut = true; }
    }
    double total = 0;
    for (size_t j = 0; j < n; ++j) {
        if (std::isfinite(x[j]) && x[j] >= vp) prob[j] = std::exp((double(x[j]) - max) / t);
        total += prob[j];
    }
    for (double &q : prob) q /= total;
    return prob;
}

// The chi-square critical value with dof degrees of freedom at upper tail 1e-6 (Wilson-Hilferty, z = 4.7534).
inline double chi_square_critical_1e6(int dof) {
    const double a = 2.0 / (9.0 * dof), z = 4.7534;
    return dof * std::pow(1.0 - a + z * std::sqrt(a), 3.0);
}

// Draws `draws` samples (rows of one launch, all the same logits) and tests their counts against the exact
// distribution: bins of expected count < 5 pooled, H0 rejected at p < 1e-6 (a correct kernel fails about
// once in a million runs); draws of probability 0 must not occur at all.
inline void check_sample_distribution(const char *name, const std::vector<float> &logits, float t, int k, float p,
                                      int32_t draws) {
    const int32_t n = int32_t(logits.size()), stride = n + 3, offset = 7;
    double margin = 0;
    std::vector<double> prob = sample_reference(logits, t, k, p, &margin);
    std::vector<uint16_t> h(size_t(draws) * stride, to_bf16(1e30f));
    for (int32_t r = 0; r < draws; ++r) for (int32_t j = 0; j < n; ++j) h[size_t(r) * stride + j] = to_bf16(logits[j]);
    DeviceBuffer d_logits(h.size() * 2), d_out(size_t(draws) * 4), state(16), status(4);
    d_logits.upload(h);
    d_out.poison();
    status.upload(std::vector<int32_t>{0});
    const uint64_t counter = uint64_t(uniform_int(0, 1 << 30));
    set_sample_state(state, counter);
    const uint64_t seed = rng()();
    const int rc = ar4j_llama_sample(d_logits.get(), stride, draws, n, t, k, p, seed, state.get(), offset,
                                     d_out.as<int32_t>(), status.as<int32_t>(), 1, nullptr);
    sync();
    std::vector<int32_t> out = d_out.download<int32_t>(size_t(draws));
    std::vector<int64_t> count(size_t(n), 0);
    int64_t outside = 0, forbidden = 0;
    for (int32_t v : out) {
        const int32_t j = v - offset;
        if (j < 0 || j >= n) { ++outside; continue; }
        ++count[size_t(j)];
        forbidden += prob[size_t(j)] == 0.0;
    }
    double chi2 = 0, pooled_expected = 0, pooled_observed = 0;
    int bins = 0, kept = 0;
    for (int32_t j = 0; j < n; ++j) {
        if (prob[size_t(j)] == 0.0) continue;
        ++kept;
        const double e = prob[size_t(j)] * draws;
        if (e < 5.0) { pooled_expected += e; pooled_observed += double(count[size_t(j)]); continue; }
        chi2 += (double(count[size_t(j)]) - e) * (double(count[size_t(j)]) - e) / e;
        ++bins;
    }
    if (pooled_expected > 0) {
        chi2 += (pooled_observed - pooled_expected) * (pooled_observed - pooled_expected) / pooled_expected;
        ++bins;
    }
    const int dof = std::max(1, bins - 1);
    const double critical = chi_square_critical_1e6(dof);
    check(rc == 0 && outside == 0 && forbidden == 0 && chi2 < critical && device_status_word(status) == 0 &&
              sample_counter(state) == counter + 1,
          "sample distribution",
          "(%s: T %.2f, k %d, p %.2f, %d draws of %d logits, %d kept: chi2 %.1f < %.1f (dof %d, reject at p < 1e-6); "
          "draws outside the kept set %lld, out of range %lld; nucleus margin %.1e; counter +1)",
          name, t, k, p, draws, n, kept, chi2, critical, dof, (long long)forbidden, (long long)outside, margin);
}

// 40 logits on a grid of 0.25 (many ties), the same in every run (their own generator).
inline std::vector<float> sample_logits(uint64_t salt) {
    std::mt19937_64 g(0x5A3D1EULL + salt);
    std::vector<float> x(40);
    for (float &v : x) v = std::round(std::uniform_real_distribution<float>(-3.0f, 3.0f)(g) * 4.0f) / 4.0f;
    return x;
}

inline void check_sample_distributions() {
    const int32_t draws = 200000;
    check_sample_distribution("all", sample_logits(0), 1.0f, 0, 1.0f, draws);
    check_sample_distribution("cold", sample_logits(1), 0.5f, 0, 1.0f, draws);
    check_sample_distribution("top-k 10 (ties at the k-th)", sample_logits(2), 0.7f, 10, 1.0f, draws);
    check_sample_distribution("top-p 0.8", sample_logits(3), 1.3f, 0, 0.8f, draws);
    check_sample_distribution("top-k 25, top-p 0.6", sample_logits(4), 1.0f, 25, 0.6f, draws);
    check_sample_distribution("top-k 5, top-p 0.93", sample_logits(5), 0.8f, 5, 0.93f, draws);
    check_sample_distribution("top-k 1", sample_logits(6), 1.0f, 1, 1.0f, 20000);
    // Non-finite logits are never drawn; negative values only, -0 and +0.
    std::vector<float> odd = sample_logits(7);
    for (float &v : odd) v = -std::fabs(v);
    odd[3] = NAN; odd[11] = INFINITY; odd[12] = -INFINITY; odd[20] = -0.0f; odd[21] = 0.0f;
    check_sample_distribution("NaN, +-inf, -0 and +0", odd, 1.0f, 0, 1.0f, draws);
}

// The same seed and counter give the same draws; the counter advances once per launch and per graph replay;
// another counter gives other draws. On a vocabulary of 128256 random logits, with top-k and top-p.
inline void check_sample_determinism() {
    const int32_t n = 128256, rows = 64, k = 50;
    const float t = 0.9f, p = 0.9f;
    std::vector<uint16_t> row = random_bf16(size_t(n), -8.0f, 8.0f);
    std::vector<uint16_t> h(size_t(rows) * n);
    for (int32_t r = 0; r < rows; ++r) std::copy(row.begin(), row.end(), h.begin() + size_t(r) * n);
    std::vector<float> x(static_cast<size_t>(n), 0.0f);
    for (int32_t j = 0; j < n; ++j) x[size_t(j)] = from_bf16(row[size_t(j)]);
    double margin = 0;
    std::vector<double> prob = sample_reference(x, t, k, p, &margin);
    DeviceBuffer d_logits(h.size() * 2), a(rows * 4), b(rows * 4), c(rows * 4), state(16), status(4);
    d_logits.upload(h);
    status.upload(std::vector<int32_t>{0});
    const uint64_t seed = rng()();
    auto launch_into = [&](DeviceBuffer &out) {
        out.poison();
        return ar4j_llama_sample(d_logits.get(), n, rows, n, t, k, p, seed, state.get(), 0, out.as<int32_t>(),
                                 status.as<int32_t>(), 1, nullptr);
    };
    set_sample_state(state, 41);
    int rc = launch_into(a);
    sync();
    const uint64_t after_one = sample_counter(state);
    rc |= launch_into(b);  // counter 42
    sync();
    const uint64_t after_two = sample_counter(state);
    set_sample_state(state, 41);
    rc |= launch_into(c);  // counter 41 again
    sync();
    std::vector<int32_t> va = a.download<int32_t>(rows), vb = b.download<int32_t>(rows), vc = c.download<int32_t>(rows);
    int64_t outside = 0;
    int differ = 0;
    for (int32_t r = 0; r < rows; ++r) {
        for (int32_t v : {va[size_t(r)], vb[size_t(r)]}) outside += v < 0 || v >= n || prob[size_t(v)] == 0.0;
        differ += va[size_t(r)] != vb[size_t(r)];
    }
    int kept = 0;
    for (double q : prob) kept += q > 0;
    check(rc == 0 && va == vc && after_one == 42 && after_two == 43 && differ > 0 && outside == 0 &&
              device_status_word(status) == 0,
          "sample determinism",
          "(vocab %d, T %.1f, k %d, p %.1f: %d kept; counter 41 twice: same %d rows; counter 41 -> %llu -> %llu; "
          "counter 42 differs in %d of %d rows; draws outside the nucleus %lld)",
          n, t, k, p, kept, va == vc ? rows : 0, (unsigned long long)after_one, (unsigned long long)after_two,
          differ, rows, (long long)outside);

    // A captured launch: three replays advance the counter three times and draw fresh numbers.
    cudaStream_t stream;
    TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    set_sample_state(state, 1000);
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    TEST_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    rc = ar4j_llama_sample(d_logits.get(), n, rows, n, t, k, p, seed, state.get(), 0, a.as<int32_t>(),
                           status.as<int32_t>(), 1, stream);
    TEST_CUDA(cudaStreamEndCapture(stream, &graph));
    TEST_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    std::vector<std::vector<int32_t>> replays;
    for (int i = 0; i < 3; ++i) {
        TEST_CUDA(cudaGraphLaunch(exec, stream));
        TEST_CUDA(cudaStreamSynchronize(stream));
        replays.push_back(a.download<int32_t>(rows));
    }
    const uint64_t after = sample_counter(state);
    TEST_CUDA(cudaGraphExecDestroy(exec));
    TEST_CUDA(cudaGraphDestroy(graph));
    TEST_CUDA(cudaStreamDestroy(stream));
    set_sample_state(state, 1001);
    rc |= launch_into(b);  // the second replay's counter, eagerly
    sync();
    vb = b.download<int32_t>(rows);
    check(rc == 0 && after == 1003 && replays[0] != replays[1] && replays[1] != replays[2] && vb == replays[1],
          "sample graph replays", "(counter 1000 -> %llu after 3 replays; replays differ; replay 2 = an eager launch "
          "at counter 1001: %s)", (unsigned long long)after, vb == replays[1] ? "yes" : "no");
}

// A row without a finite logit: index_offset and AR4J_LLAMA_ERROR_LOGITS; argument errors.
inline void check_sample_errors() {
    const int32_t n = 16;
    std::vector<uint16_t> h(size_t(2) * n, to_bf16(1.0f));
    for (int32_t j = 0; j < n; ++j) h[size_t(n) + j] = j % 2 ? to_bf16(NAN) : to_bf16(-INFINITY);
    DeviceBuffer d_logits(h.size() * 2), out(8), state(16), status(4);
    d_logits.upload(h);
    out.poison();
    status.upload(std::vector<int32_t>{0});
    set_sample_state(state, 0);
    int rc = ar4j_llama_sample(d_logits.get(), n, 2, n, 1.0f, 0, 1.0f, 1, state.get(), 100, out.as<int32_t>(),
                               status.as<int32_t>(), 0, nullptr);
    sync();
    std::vector<int32_t> got = out.download<int32_t>(2);
    const int32_t word = device_status_word(status);
    check(rc == 0 && got[0] >= 100 && got[0] < 100 + n && got[1] == 100 && word == AR4J_LLAMA_ERROR_LOGITS,
          "sample without a finite logit", "(row 1 all NaN/-inf: index %d, status %d; row 0: %d)", got[1], word,
          got[0]);
    void *s = state.get();
    int32_t *o = out.as<int32_t>();
    const void *l = d_logits.get();
    const int codes[] = {
        ar4j_llama_sample(nullptr, n, 1, n, 1.0f, 0, 1.0f, 1, s, 0, o, nullptr, 0, nullptr),
        ar4j_llama_sample(l, n, 1, n, 1.0f, 0, 1.0f, 1, nullptr, 0, o, nullptr, 0, nullptr),
        ar4j_llama_sample(l, n, 0, n, 1.0f, 0, 1.0f, 1, s, 0, o, nullptr, 0, nullptr),
        ar4j_llama_sample(l, n - 1, 1, n, 1.0f, 0, 1.0f, 1, s, 0, o, nullptr, 0, nullptr),
        ar4j_llama_sample(l, n, 1, n, 0.0f, 0, 1.0f, 1, s, 0, o, nullptr, 0, nullptr),
        ar4j_llama_sample(l, n, 1, n, NAN, 0, 1.0f, 1, s, 0, o, nullptr, 0, nullptr),
        ar4j_llama_sample(l, n, 1, n, INFINITY, 0, 1.0f, 1, s, 0, o, nullptr, 0, nullptr),
        ar4j_llama_sample(l, n, 1, n, 1.0f, -1, 1.0f, 1, s, 0, o, nullptr, 0, nullptr),
        ar4j_llama_sample(l, n, 1, n, 1.0f, 0, 0.0f, 1, s, 0, o, nullptr, 0, nullptr),
        ar4j_llama_sample(l, n, 1, n, 1.0f, 0, 1.5f, 1, s, 0, o, nullptr, 0, nullptr),
        ar4j_llama_sample(l, n, 1, n, 1.0f, 0, NAN, 1, s, 0, o, nullptr, 0, nullptr),
        ar4j_llama_sample(l, n, 1, n, 1.0f, 0, 1.0f, 1, static_cast<char *>(s) + 4, 0, o, nullptr, 0, nullptr),
    };
    const int want[] = {AR4J_LLAMA_ERROR_NULL_POINTER, AR4J_LLAMA_ERROR_NULL_POINTER, AR4J_LLAMA_ERROR_SIZE,
                        AR4J_LLAMA_ERROR_STRIDE, AR4J_LLAMA_ERROR_INVALID_ARGUMENT, AR4J_LLAMA_ERROR_INVALID_ARGUMENT,
                        AR4J_LLAMA_ERROR_INVALID_ARGUMENT, AR4J_LLAMA_ERROR_INVALID_ARGUMENT,
                        AR4J_LLAMA_ERROR_INVALID_ARGUMENT, AR4J_LLAMA_ERROR_INVALID_ARGUMENT,
                        AR4J_LLAMA_ERROR_INVALID_ARGUMENT, AR4J_LLAMA_ERROR_MISALIGNED};
    int wrong = 0;
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; ++i) wrong += codes[i] != want[i];
    check(wrong == 0 && sample_counter(state) == 1, "sample argument errors",
          "(%d of %zu codes wrong; refused calls leave the counter at 1: %llu)", wrong, sizeof codes / sizeof codes[0],
          (unsigned long long)sample_counter(state));
}

}  // namespace test
