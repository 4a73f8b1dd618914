// Checks ar4j_residual_rmsnorm against a host reference: residual_out bitwise (one fp32 add,
// rounded to the dtype), out within a stated tolerance per dtype (the device uses rsqrtf and
// a different summation order than the host's double-precision sum), outputs poisoned with
// NaN before each run, in place and out of place, run twice for bitwise-identical results,
// and every argument check. Last line: "N passed, N failed"; exit 0 only when none failed,
// 3 when there is no GPU.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "ar4j/residual_rmsnorm.h"

namespace {

int passed = 0, failed = 0;

void check(bool ok, const char *what) {
    if (ok) { ++passed; } else { ++failed; std::printf("FAIL %s\n", what); }
}

size_t elem_size(int dtype) { return dtype == AR4J_DTYPE_FLOAT32 ? 4 : 2; }
const char *dtype_name(int dtype) {
    return dtype == AR4J_DTYPE_FLOAT32 ? "fp32" : dtype == AR4J_DTYPE_FLOAT16 ? "fp16" : "bf16";
}

// Host values as the dtype's bits, and back.
uint32_t to_bits(int dtype, float v) {
    if (dtype == AR4J_DTYPE_FLOAT32) { uint32_t b; std::memcpy(&b, &v, 4); return b; }
    if (dtype == AR4J_DTYPE_FLOAT16) { __half h = __float2half_rn(v); uint16_t b; std::memcpy(&b, &h, 2); return b; }
    __nv_bfloat16 h = __float2bfloat16_rn(v); uint16_t b; std::memcpy(&b, &h, 2); return b;
}
float from_bits(int dtype, uint32_t b) {
    if (dtype == AR4J_DTYPE_FLOAT32) { float v; std::memcpy(&v, &b, 4); return v; }
    uint16_t s = static_cast<uint16_t>(b);
    if (dtype == AR4J_DTYPE_FLOAT16) { __half h; std::memcpy(&h, &s, 2); return __half2float(h); }
    __nv_bfloat16 h; std::memcpy(&h, &s, 2); return __bfloat162float(h);
}
float round_to(int dtype, float v) { return from_bits(dtype, to_bits(dtype, v)); }

void put(int dtype, std::vector<uint8_t> &buf, size_t i, float v) {
    uint32_t b = to_bits(dtype, v);
    std::memcpy(buf.data() + i * elem_size(dtype), &b, elem_size(dtype));
}
float get(int dtype, const std::vector<uint8_t> &buf, size_t i) {
    uint32_t b = 0;
    std::memcpy(&b, buf.data() + i * elem_size(dtype), elem_size(dtype));
    return from_bits(dtype, b);
}

double tolerance(int dtype) { return dtype == AR4J_DTYPE_FLOAT32 ? 1e-5 : dtype == AR4J_DTYPE_FLOAT16 ? 2e-3 : 1.6e-2; }

void run_case(int dtype, size_t rows, size_t hidden, bool in_place, std::mt19937 &rng) {
    const size_t n = rows * hidden, es = elem_size(dtype);
    std::uniform_real_distribution<float> dist(-2.f, 2.f);
    std::vector<uint8_t> in(n * es), res(n * es), w(hidden * es);
    for (size_t i = 0; i < n; ++i) { put(dtype, in, i, dist(rng)); put(dtype, res, i, dist(rng)); }
    for (size_t i = 0; i < hidden; ++i) put(dtype, w, i, dist(rng));

    // Reference.
    std::vector<float> ref_res(n), ref_out(n);
    for (size_t r = 0; r < rows; ++r) {
        double squares = 0;
        for (size_t i = 0; i < hidden; ++i) {
            const size_t k = r * hidden + i;
            ref_res[k] = round_to(dtype, get(dtype, in, k) + get(dtype, res, k));
            squares += static_cast<double>(ref_res[k]) * ref_res[k];
        }
        const double inv = 1.0 / std::sqrt(squares / static_cast<double>(hidden) + 1e-6);
        for (size_t i = 0; i < hidden; ++i) {
            const size_t k = r * hidden + i;
            ref_out[k] = static_cast<float>(ref_res[k] * inv * get(dtype, w, i));
        }
    }

    void *d_in, *d_res, *d_w, *d_out, *d_res_out;
    cudaMalloc(&d_in, n * es); cudaMalloc(&d_res, n * es); cudaMalloc(&d_w, hidden * es);
    cudaMalloc(&d_out, n * es); cudaMalloc(&d_res_out, n * es);
    std::vector<uint8_t> first_out, first_res;
    for (int attempt = 0; attempt < 2; ++attempt) {
        cudaMemcpy(d_in, in.data(), n * es, cudaMemcpyHostToDevice);
        cudaMemcpy(d_res, res.data(), n * es, cudaMemcpyHostToDevice);
        cudaMemcpy(d_w, w.data(), hidden * es, cudaMemcpyHostToDevice);
        cudaMemset(d_out, 0xff, n * es);      // NaN in every dtype
        cudaMemset(d_res_out, 0xff, n * es);
        void *out = in_place ? d_in : d_out;  // out over the input, residual_out over the residual
        void *res_out = in_place ? d_res : d_res_out;
        int st = ar4j_residual_rmsnorm(dtype, d_in, d_res, d_w, out, res_out, rows, hidden, 1e-6f, nullptr);
        cudaError_t err = cudaDeviceSynchronize();
        char what[160];
        std::snprintf(what, sizeof what, "%s rows=%zu hidden=%zu %s: status %d, cuda %d", dtype_name(dtype), rows,
                      hidden, in_place ? "in place" : "out of place", st, static_cast<int>(err));
        check(st == AR4J_SUCCESS && err == cudaSuccess, what);
        std::vector<uint8_t> got_out(n * es), got_res(n * es);
        cudaMemcpy(got_out.data(), out, n * es, cudaMemcpyDeviceToHost);
        cudaMemcpy(got_res.data(), res_out, n * es, cudaMemcpyDeviceToHost);
        size_t wrong_res = 0, wrong_out = 0;
        double worst = 0;
        for (size_t k = 0; k < n; ++k) {
            if (to_bits(dtype, get(dtype, got_res, k)) != to_bits(dtype, ref_res[k]) || std::isnan(get(dtype, got_res, k)))
                ++wrong_res;
            const double g = get(dtype, got_out, k), e = ref_out[k];
            const double rel = std::fabs(g - e) / std::fmax(1.0, std::fabs(e));
            if (!(rel <= tolerance(dtype))) ++wrong_out;
            if (rel > worst || std::isnan(rel)) worst = std::isnan(rel) ? INFINITY : rel;
        }
        std::snprintf(what, sizeof what, "%s rows=%zu hidden=%zu %s: residual_out %zu of %zu not bitwise equal",
                      dtype_name(dtype), rows, hidden, in_place ? "in place" : "out of place", wrong_res, n);
        check(wrong_res == 0, what);
        std::snprintf(what, sizeof what, "%s rows=%zu hidden=%zu %s: out %zu of %zu beyond %.1e (worst %.2e)",
                      dtype_name(dtype), rows, hidden, in_place ? "in place" : "out of place", wrong_out, n,
                      tolerance(dtype), worst);
        check(wrong_out == 0, what);
        if (attempt == 0) { first_out = got_out; first_res = got_res; }
        else {
            std::snprintf(what, sizeof what, "%s rows=%zu hidden=%zu: a second run is bitwise identical",
                          dtype_name(dtype), rows, hidden);
            check(first_out == got_out && first_res == got_res, what);
        }
    }
    cudaFree(d_in); cudaFree(d_res); cudaFree(d_w); cudaFree(d_out); cudaFree(d_res_out);
}

void argument_checks() {
    void *a, *b, *c, *d, *e;
    cudaMalloc(&a, 4096); cudaMalloc(&b, 4096); cudaMalloc(&c, 4096); cudaMalloc(&d, 4096); cudaMalloc(&e, 4096);
    const int f = AR4J_DTYPE_FLOAT32;
    check(ar4j_residual_rmsnorm(f, nullptr, b, c, d, e, 1, 8, 1e-6f, nullptr) == AR4J_ERROR_NULL_POINTER, "null input refused");
    check(ar4j_residual_rmsnorm(f, a, b, c, d, e, 0, 8, 1e-6f, nullptr) == AR4J_ERROR_EMPTY, "zero rows refused");
    check(ar4j_residual_rmsnorm(f, a, b, c, d, e, 1, 0, 1e-6f, nullptr) == AR4J_ERROR_EMPTY, "zero hidden refused");
    check(ar4j_residual_rmsnorm(f, a, b, c, d, e, 1, AR4J_RMSNORM_MAX_HIDDEN + 1, 1e-6f, nullptr) == AR4J_ERROR_TOO_LARGE,
          "hidden above the limit refused");
    check(ar4j_residual_rmsnorm(f, a, b, c, d, e, 1, 8, 0.f, nullptr) == AR4J_ERROR_INVALID_ARGUMENT, "eps 0 refused");
    check(ar4j_residual_rmsnorm(f, a, b, c, d, e, 1, 8, NAN, nullptr) == AR4J_ERROR_INVALID_ARGUMENT, "eps NaN refused");
    check(ar4j_residual_rmsnorm(f, a, b, c, d, d, 1, 8, 1e-6f, nullptr) == AR4J_ERROR_INVALID_ARGUMENT,
          "out == residual_out refused");
    check(ar4j_residual_rmsnorm(f, a, b, c, b, e, 1, 8, 1e-6f, nullptr) == AR4J_ERROR_INVALID_ARGUMENT,
          "out == residual refused");
    check(ar4j_residual_rmsnorm(7, a, b, c, d, e, 1, 8, 1e-6f, nullptr) == AR4J_ERROR_DTYPE, "unknown dtype refused");
    cudaFree(a); cudaFree(b); cudaFree(c); cudaFree(d); cudaFree(e);
}

}  // namespace

int main() {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        std::printf("no CUDA device: nothing was tested\n0 passed, 0 failed\n");
        return 3;
    }
    std::mt19937 rng(20261201);
    argument_checks();
    const size_t hiddens[] = {1, 7, 64, 511, 4096, 7168, 16384, 65536};
    const size_t rows_list[] = {1, 3, 17};
    for (int dtype : {AR4J_DTYPE_FLOAT32, AR4J_DTYPE_FLOAT16, AR4J_DTYPE_BFLOAT16})
        for (size_t hidden : hiddens)
            for (size_t rows : rows_list)
                for (bool in_place : {false, true}) run_case(dtype, rows, hidden, in_place, rng);
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
