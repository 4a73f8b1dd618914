// Checks of the fused forms of the rows kernel (split-K, SwiGLU epilogue, argmax epilogue)
// against the plain kernel and the standalone kernels they replace: bit for bit, since each
// fused form is defined as the composition it stands in for.
#pragma once

#include "test_support.h"

namespace test {

// Splits change only the fp32 sum order: within the plain kernel's bound (check_linear_rows) and
// the same bits on a second run.
inline void check_linear_rows_splits(int32_t rows, int32_t n, int32_t k) {
    const int64_t x_stride = k + 8;
    std::vector<uint16_t> w = random_bf16(size_t(n) * k, -1.0f, 1.0f);
    std::vector<uint16_t> x = random_bf16(size_t(rows) * x_stride, -2.0f, 2.0f);
    DeviceBuffer d_w(w.size() * 2), d_x(x.size() * 2), d_y(size_t(rows) * n * 2), d_y2(size_t(rows) * n * 2);
    d_w.upload(w);
    d_x.upload(x);
    for (int32_t splits : {1, 2, 4, 8}) {
        d_y.poison();
        d_y2.poison();
        int rc = ar4j_llama_linear_rows_split(d_w.get(), d_x.get(), x_stride, d_y.get(), n, rows, n, k, splits, 1, nullptr);
        rc |= ar4j_llama_linear_rows_split(d_w.get(), d_x.get(), x_stride, d_y2.get(), n, rows, n, k, splits, 1, nullptr);
        sync();
        std::vector<uint16_t> y = d_y.download<uint16_t>(size_t(rows) * n);
        std::vector<uint16_t> y2 = d_y2.download<uint16_t>(size_t(rows) * n);
        size_t outside = 0, differ = 0;
        for (int r = 0; r < rows; ++r) {
            for (int j = 0; j < n; ++j) {
                double exact = 0.0, magnitude = 0.0;
                for (int i = 0; i < k; ++i) {
                    const double p = double(from_bf16(w[size_t(j) * k + i])) * from_bf16(x[size_t(r) * x_stride + i]);
                    exact += p;
                    magnitude += std::fabs(p);
                }
                const double bound = bf16_ulp(float(exact)) + double(k) * magnitude * 6e-8;
                outside += !(std::fabs(double(from_bf16(y[size_t(r) * n + j])) - exact) <= bound);
                differ += y[size_t(r) * n + j] != y2[size_t(r) * n + j];
            }
        }
        check(rc == 0 && outside == 0 && differ == 0, "linear_rows_split",
              "(%d rows x %d x %d, %d splits: %zu outside the bound, %zu differ between two runs)", rows, n, k, splits,
              outside, differ);
    }
}

// The SwiGLU form equals linear_rows_split into a gate_up row followed by silu_mul, bit for bit.
inline void check_linear_rows_silu_mul(int32_t rows, int32_t inter, int32_t k, int32_t splits) {
    const int64_t x_stride = k, out_stride = inter + 3;
    std::vector<uint16_t> w = random_bf16(size_t(2) * inter * k, -1.0f, 1.0f);
    std::vector<uint16_t> x = random_bf16(size_t(rows) * x_stride, -1.0f, 1.0f);
    DeviceBuffer d_w(w.size() * 2), d_x(x.size() * 2), d_gate_up(size_t(rows) * 2 * inter * 2),
        d_want(size_t(rows) * inter * 2), d_out(size_t(rows) * out_stride * 2);
    d_w.upload(w);
    d_x.upload(x);
    d_gate_up.poison();
    d_want.poison();
    d_out.poison();
    int rc = ar4j_llama_linear_rows_split(d_w.get(), d_x.get(), x_stride, d_gate_up.get(), 2 * inter, rows, 2 * inter,
                                          k, splits, 1, nullptr);
    const char *gate_up = static_cast<const char *>(d_gate_up.get());
    rc |= ar4j_llama_silu_mul(gate_up, 2 * inter, gate_up + size_t(inter) * 2, 2 * inter, d_want.get(), inter, rows,
                              inter, 1, nullptr);
    rc |= ar4j_llama_linear_rows_silu_mul(d_w.get(), d_x.get(), x_stride, d_out.get(), out_stride, rows, inter, k,
                                          splits, 1, nullptr);
    sync();
    std::vector<uint16_t> want = d_want.download<uint16_t>(size_t(rows) * inter);
    std::vector<uint16_t> got = d_out.download<uint16_t>(size_t(rows) * out_stride);
    size_t differ = 0, gap_touched = 0;
    for (int r = 0; r < rows; ++r) {
        for (int j = 0; j < inter; ++j) differ += got[size_t(r) * out_stride + j] != want[size_t(r) * inter + j];
        for (int64_t j = inter; j < out_stride; ++j) gap_touched += got[size_t(r) * out_stride + j] != 0xFFFFu;
    }
    check(rc == 0 && differ == 0 && gap_touched == 0, "linear_rows_silu_mul",
          "(%d rows, intermediate %d, k %d, %d splits: %zu differ from linear_rows_split + silu_mul, %zu padding touched)",
          rows, inter, k, splits, differ, gap_touched);
}

// The argmax form: its logits equal linear_rows_split with 1 split, and its choice equals
// ar4j_llama_argmax over them, on two launches in a row (the workspace counter resets itself);
// with ties (duplicated rows of W) and a NaN row.
inline void check_linear_rows_argmax(int32_t rows, int32_t n, int32_t k, int32_t argmax_cols, bool nan_row) {
    const int32_t offset = 777;
    std::vector<uint16_t> w = random_bf16(size_t(n) * k, -1.0f, 1.0f);
    std::vector<uint16_t> x = random_bf16(size_t(rows) * k, 0.0f, 1.0f);
    // A strong row (all positive weights: the maximum for positive x), copied to a later index (a tie).
    const int32_t star = uniform_int(n / 2, argmax_cols - 1), twin = std::min(argmax_cols - 1, star + 5);
    const int32_t decoy = argmax_cols < n ? argmax_cols : -1;  // beyond argmax_cols: stronger, but ignored
    for (int i = 0; i < k; ++i) {
        w[size_t(star) * k + i] = to_bf16(0.9f);
        w[size_t(twin) * k + i] = to_bf16(0.9f);
        if (decoy >= 0) w[size_t(decoy) * k + i] = to_bf16(1.0f);
    }
    const int32_t nan_at = nan_row ? uniform_int(1, star - 1) : -1;
    if (nan_row) w[size_t(nan_at) * k + 3] = 0x7FC0u;
    DeviceBuffer d_w(w.size() * 2), d_x(x.size() * 2), d_want(size_t(rows) * n * 2), d_logits(size_t(rows) * n * 2),
        d_want_index(rows * 4), d_want_value(rows * 4), d_index(rows * 4), d_value(rows * 4),
        d_ws(ar4j_llama_linear_rows_argmax_workspace_bytes(rows, n));
    d_w.upload(w);
    d_x.upload(x);
    TEST_CUDA(cudaMemset(d_ws.get(), 0, d_ws.bytes()));
    int rc = ar4j_llama_linear_rows_split(d_w.get(), d_x.get(), k, d_want.get(), n, rows, n, k, 1, 1, nullptr);
    rc |= ar4j_llama_argmax(AR4J_LLAMA_DTYPE_BFLOAT16, d_want.get(), n, rows, argmax_cols, offset,
                            d_want_index.as<int32_t>(), d_want_value.as<float>(), 1, nullptr);
    sync();
    std::vector<int32_t> want_index = d_want_index.download<int32_t>(rows);
    std::vector<float> want_value = d_want_value.download<float>(rows);
    std::vector<uint16_t> want = d_want.download<uint16_t>(size_t(rows) * n);
    bool ok = rc == 0;
    for (int launch = 0; launch < 2; ++launch) {
        d_logits.poison();
        d_index.poison();
        d_value.poison();
        rc = ar4j_llama_linear_rows_argmax(d_w.get(), d_x.get(), k, d_logits.get(), n, rows, n, k, argmax_cols, offset,
                                           d_index.as<int32_t>(), d_value.as<float>(), d_ws.get(), d_ws.bytes(), 1,
                                           nullptr);
        sync();
        std::vector<int32_t> index = d_index.download<int32_t>(rows);
        std::vector<float> value = d_value.download<float>(rows);
        std::vector<uint16_t> logits = d_logits.download<uint16_t>(size_t(rows) * n);
        ok &= rc == 0 && logits == want;
        for (int r = 0; r < rows; ++r) {
            ok &= index[r] == want_index[r];
            ok &= std::isnan(want_value[r]) ? std::isnan(value[r]) : bits(value[r]) == bits(want_value[r]);
        }
        check(ok, "linear_rows_argmax",
              "(launch %d: %d rows x %d x %d, argmax over %d: row 0 chose %d, argmax chose %d; star %d, twin %d, "
              "NaN row %d; logits %s)", launch + 1, rows, n, k, argmax_cols, index[0] - offset, want_index[0] - offset,
              star, twin, nan_at, logits == want ? "equal" : "DIFFER");
    }
}

}  // namespace test

namespace test {

// An L2 prefetch of W before the product, both captured in one graph with PDL (as the engine's
// step), changes nothing of the product's bits; its arguments are checked.
inline void check_prefetch_l2() {
    const int32_t rows = 1, n = 2048, k = 4096;
    std::vector<uint16_t> w = random_bf16(size_t(n) * k, -1.0f, 1.0f);
    std::vector<uint16_t> x = random_bf16(size_t(rows) * k, -2.0f, 2.0f);
    DeviceBuffer d_w(w.size() * 2), d_x(x.size() * 2), d_y(size_t(rows) * n * 2), d_y2(size_t(rows) * n * 2);
    d_w.upload(w);
    d_x.upload(x);
    d_y.poison();
    d_y2.poison();
    cudaStream_t stream;
    TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    int rc = ar4j_llama_linear_rows(d_w.get(), d_x.get(), k, d_y.get(), n, rows, n, k, 1, stream);
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    TEST_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    rc |= ar4j_llama_prefetch_l2(d_w.get(), d_w.bytes(), 1, stream);
    rc |= ar4j_llama_linear_rows(d_w.get(), d_x.get(), k, d_y2.get(), n, rows, n, k, 1, stream);
    TEST_CUDA(cudaStreamEndCapture(stream, &graph));
    TEST_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    TEST_CUDA(cudaGraphLaunch(exec, stream));
    TEST_CUDA(cudaStreamSynchronize(stream));
    std::vector<uint16_t> y = d_y.download<uint16_t>(size_t(n));
    std::vector<uint16_t> y2 = d_y2.download<uint16_t>(size_t(n));
    size_t differ = 0;
    for (int j = 0; j < n; ++j) differ += y[j] != y2[j];
    const char *bytes = static_cast<const char *>(d_w.get());
    const int codes[] = {ar4j_llama_prefetch_l2(nullptr, 16, 1, stream), ar4j_llama_prefetch_l2(bytes, 0, 1, stream),
                         ar4j_llama_prefetch_l2(bytes, 24, 1, stream), ar4j_llama_prefetch_l2(bytes + 8, 16, 1, stream),
                         ar4j_llama_prefetch_l2(bytes, 16, 0, stream)};
    const int expected[] = {AR4J_LLAMA_ERROR_NULL_POINTER, AR4J_LLAMA_ERROR_SIZE, AR4J_LLAMA_ERROR_SIZE,
                            AR4J_LLAMA_ERROR_MISALIGNED, AR4J_LLAMA_OK};
    int wrong = 0;
    for (int i = 0; i < 5; ++i) wrong += codes[i] != expected[i];
    TEST_CUDA(cudaStreamSynchronize(stream));
    TEST_CUDA(cudaGraphExecDestroy(exec));
    TEST_CUDA(cudaGraphDestroy(graph));
    TEST_CUDA(cudaStreamDestroy(stream));
    check(rc == 0 && differ == 0 && wrong == 0, "prefetch_l2",
          "(a product after a prefetch of its weight in one graph: %zu of %d outputs differ; %d of 5 argument codes "
          "wrong)", differ, n, wrong);
}

}  // namespace test

namespace test {

// The two kernels of the rows product (registers, bulk-copy ring) give the same bits for every
// form: plain with each split count, SwiGLU and argmax; shapes with partial pieces (k not a
// multiple of a piece), empty slices (n not a multiple of a group) and many groups per block.
// Below sm_90 the ring is refused with AR4J_LLAMA_ERROR_UNSUPPORTED; bad values are refused.
inline void check_linear_rows_kernels_agree(int major) {
    const int bad = ar4j_llama_set_linear_rows_kernel(7);
    if (major < 9) {
        const int ring = ar4j_llama_set_linear_rows_kernel(AR4J_LLAMA_LINEAR_ROWS_RING);
        check(bad == AR4J_LLAMA_ERROR_INVALID_ARGUMENT && ring == AR4J_LLAMA_ERROR_UNSUPPORTED, "linear_rows_kernels",
              "(below sm_90: value 7 gave %d, the ring gave %d)", bad, ring);
        return;
    }
    struct Shape { int32_t rows, n, k, splits; };
    const Shape shapes[] = {{1, 6144, 4096, 0}, {1, 4096, 14336, 0}, {1, 77, 1048, 8}, {3, 1003, 1048, 0},
                            {4, 768, 4096, 2},  {8, 300, 2056, 1},   {2, 4096, 512, 0}, {5, 1000, 14336, 4}};
    size_t differ = 0, calls = 0;
    int rc = bad == AR4J_LLAMA_ERROR_INVALID_ARGUMENT ? 0 : 1;
    for (const Shape &s : shapes) {
        std::vector<uint16_t> w = random_bf16(size_t(s.n) * s.k, -1.0f, 1.0f);
        std::vector<uint16_t> x = random_bf16(size_t(s.rows) * s.k, -1.0f, 1.0f);
        DeviceBuffer d_w(w.size() * 2), d_x(x.size() * 2), d_y(size_t(s.rows) * s.n * 2),
            d_ws(ar4j_llama_linear_rows_argmax_workspace_bytes(s.rows, s.n)), d_index(64), d_value(64);
        d_w.upload(w);
        d_x.upload(x);
        TEST_CUDA(cudaMemset(d_ws.get(), 0, d_ws.bytes()));
        // Each form under each kernel: the outputs' bytes (y, then index and value for argmax).
        auto run = [&](int32_t kernel, int form) {
            rc |= ar4j_llama_set_linear_rows_kernel(kernel);
            d_y.poison();
            d_index.poison();
            d_value.poison();
            const int32_t half = s.n / 2;
            if (form == 0) {
                rc |= ar4j_llama_linear_rows_split(d_w.get(), d_x.get(), s.k, d_y.get(), s.n, s.rows, s.n, s.k, s.splits,
                                                   1, nullptr);
            } else if (form == 1) {
                rc |= ar4j_llama_linear_rows_silu_mul(d_w.get(), d_x.get(), s.k, d_y.get(), half, s.rows, half, s.k,
                                                      s.splits == 8 ? 4 : s.splits, 1, nullptr);
            } else {
                rc |= ar4j_llama_linear_rows_argmax(d_w.get(), d_x.get(), s.k, d_y.get(), s.n, s.rows, s.n, s.k, s.n, 5,
                                                    d_index.as<int32_t>(), d_value.as<float>(), d_ws.get(), d_ws.bytes(),
                                                    1, nullptr);
            }
            sync();
            std::vector<uint16_t> out = d_y.download<uint16_t>(size_t(s.rows) * s.n);
            if (form == 2) {
                std::vector<uint16_t> idx = d_index.download<uint16_t>(size_t(s.rows) * 2);
                std::vector<uint16_t> val = d_value.download<uint16_t>(size_t(s.rows) * 2);
                out.insert(out.end(), idx.begin(), idx.end());
                out.insert(out.end(), val.begin(), val.end());
            }
            return out;
        };
        for (int form = 0; form < 3; ++form) {
            if (form == 1 && s.n % 2 != 0) continue;
            const std::vector<uint16_t> registers = run(AR4J_LLAMA_LINEAR_ROWS_REGISTERS, form);
            const std::vector<uint16_t> ring = run(AR4J_LLAMA_LINEAR_ROWS_RING, form);
            for (size_t i = 0; i < ring.size(); ++i) differ += ring[i] != registers[i];
            ++calls;
        }
    }
    rc |= ar4j_llama_set_linear_rows_kernel(AR4J_LLAMA_LINEAR_ROWS_AUTO);
    check(rc == 0 && differ == 0 && calls == 22, "linear_rows_kernels",
          "(the ring against the registers kernel: %zu calls, %zu output values differ; status %d)", calls, differ, rc);
}

}  // namespace test
