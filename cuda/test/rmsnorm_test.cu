// Checks ar4j_residual_rmsnorm and ar4j_residual_rmsnorm_ex against a host reference:
// residual_out bitwise (one fp32 add, rounded to the dtype), out within a stated tolerance per dtype
// (the device uses rsqrtf and a different summation order than the host's double-precision sum),
// outputs poisoned with NaN before each run, in place and out of place, with and without
// programmatic dependent launch, run twice for bitwise-identical results; the 16-byte pack kernel
// against the element kernel (the same data at an address 16-byte loads cannot take) bitwise; the
// decode shapes (rows 1..8, hidden 4096, 5120, 8192 and an unaligned 4099); a PDL launch right
// behind a slow kernel that writes its input (griddepcontrol.wait must hold the loads back), eager
// and captured in a CUDA graph; and every argument check. Last line: "N passed, N failed"; exit 0
// only when none failed, 3 when there is no GPU.

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

// The bytes of out and residual_out of one run of the kernel on copies of in, res and w placed
// `offset` bytes past 16-byte aligned allocations (offset 0: the pack kernel where the row allows it;
// an offset of one element: the element kernel).
struct Outputs {
    std::vector<uint8_t> out, res_out;
    bool ok = false;
};

Outputs run_at(int dtype, size_t rows, size_t hidden, const std::vector<uint8_t> &in, const std::vector<uint8_t> &res,
               const std::vector<uint8_t> &w, size_t offset, uint32_t flags) {
    const size_t n = rows * hidden, es = elem_size(dtype);
    char *d_in, *d_res, *d_w, *d_out, *d_res_out;
    cudaMalloc(&d_in, n * es + 16); cudaMalloc(&d_res, n * es + 16); cudaMalloc(&d_w, hidden * es + 16);
    cudaMalloc(&d_out, n * es + 16); cudaMalloc(&d_res_out, n * es + 16);
    cudaMemcpy(d_in + offset, in.data(), n * es, cudaMemcpyHostToDevice);
    cudaMemcpy(d_res + offset, res.data(), n * es, cudaMemcpyHostToDevice);
    cudaMemcpy(d_w + offset, w.data(), hidden * es, cudaMemcpyHostToDevice);
    cudaMemset(d_out, 0xff, n * es + 16);
    cudaMemset(d_res_out, 0xff, n * es + 16);
    Outputs o;
    const int st = ar4j_residual_rmsnorm_ex(dtype, d_in + offset, d_res + offset, d_w + offset, d_out + offset,
                                            d_res_out + offset, rows, hidden, 1e-6f, nullptr, flags);
    o.ok = st == AR4J_SUCCESS && cudaDeviceSynchronize() == cudaSuccess;
    o.out.resize(n * es); o.res_out.resize(n * es);
    cudaMemcpy(o.out.data(), d_out + offset, n * es, cudaMemcpyDeviceToHost);
    cudaMemcpy(o.res_out.data(), d_res_out + offset, n * es, cudaMemcpyDeviceToHost);
    cudaFree(d_in); cudaFree(d_res); cudaFree(d_w); cudaFree(d_out); cudaFree(d_res_out);
    return o;
}

void run_case(int dtype, size_t rows, size_t hidden, bool in_place, uint32_t flags, std::mt19937 &rng) {
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
        int st = flags == 0 ? ar4j_residual_rmsnorm(dtype, d_in, d_res, d_w, out, res_out, rows, hidden, 1e-6f, nullptr)
                            : ar4j_residual_rmsnorm_ex(dtype, d_in, d_res, d_w, out, res_out, rows, hidden, 1e-6f,
                                                       nullptr, flags);
        cudaError_t err = cudaDeviceSynchronize();
        char what[160];
        std::snprintf(what, sizeof what, "%s rows=%zu hidden=%zu %s%s: status %d, cuda %d", dtype_name(dtype), rows,
                      hidden, in_place ? "in place" : "out of place", flags ? " PDL" : "", st, static_cast<int>(err));
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

    // The element kernel on the same data (every address one element past 16-byte alignment, so
    // no 16-byte load can take it) gives the same bits as the kernel at aligned addresses.
    if (!in_place) {
        Outputs aligned = run_at(dtype, rows, hidden, in, res, w, 0, flags);
        Outputs shifted = run_at(dtype, rows, hidden, in, res, w, es, flags);
        char what[160];
        std::snprintf(what, sizeof what, "%s rows=%zu hidden=%zu%s: aligned and element-shifted runs succeed",
                      dtype_name(dtype), rows, hidden, flags ? " PDL" : "");
        check(aligned.ok && shifted.ok, what);
        std::snprintf(what, sizeof what, "%s rows=%zu hidden=%zu%s: 16-byte and element kernels bitwise equal",
                      dtype_name(dtype), rows, hidden, flags ? " PDL" : "");
        check(aligned.out == shifted.out && aligned.res_out == shifted.res_out, what);
        std::snprintf(what, sizeof what, "%s rows=%zu hidden=%zu%s: the aligned run equals the first run bitwise",
                      dtype_name(dtype), rows, hidden, flags ? " PDL" : "");
        check(aligned.out == first_out && aligned.res_out == first_res, what);
    }
}

// Spins about `ns` nanoseconds, then writes value into every element of dst (fp32 bits or halves):
// a slow producer that a PDL launch behind it must wait for.
__global__ void slow_fill(uint32_t *dst, size_t words, uint32_t value, unsigned long long ns) {
    unsigned long long start;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    for (;;) {
        unsigned long long now;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
        if (now - start > ns) break;
    }
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < words; i += gridDim.x * blockDim.x) dst[i] = value;
}

// A PDL launch of the norm right behind a kernel that writes its input after ~200 us: with
// griddepcontrol.wait before the loads, the norm sees the written input (1.0 everywhere, residual
// 0.5): residual_out = 1.5 bitwise, out = 1.5 * 1/sqrt(2.25 + eps) * w = 1.0 * w within tolerance.
// Eager, then the same two launches captured in a CUDA graph and replayed.
void pdl_behind_producer(int dtype, size_t rows, size_t hidden) {
    const size_t n = rows * hidden, es = elem_size(dtype);
    std::vector<uint8_t> res(n * es), w(hidden * es);
    for (size_t i = 0; i < n; ++i) put(dtype, res, i, 0.5f);
    for (size_t i = 0; i < hidden; ++i) put(dtype, w, i, i % 2 == 0 ? 1.f : -2.f);
    uint32_t one_word = dtype == AR4J_DTYPE_FLOAT32 ? to_bits(dtype, 1.f) : (to_bits(dtype, 1.f) * 0x10001u);
    void *d_in, *d_res, *d_w, *d_out, *d_res_out;
    cudaMalloc(&d_in, n * es); cudaMalloc(&d_res, n * es); cudaMalloc(&d_w, hidden * es);
    cudaMalloc(&d_out, n * es); cudaMalloc(&d_res_out, n * es);
    cudaMemcpy(d_res, res.data(), n * es, cudaMemcpyHostToDevice);
    cudaMemcpy(d_w, w.data(), hidden * es, cudaMemcpyHostToDevice);
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    for (int graph = 0; graph < 2; ++graph) {
        cudaMemset(d_in, 0xff, n * es);  // NaN until the producer writes it
        cudaMemset(d_out, 0xff, n * es);
        cudaMemset(d_res_out, 0xff, n * es);
        cudaDeviceSynchronize();
        cudaGraph_t g = nullptr;
        cudaGraphExec_t exec = nullptr;
        int st = AR4J_SUCCESS;
        cudaError_t err = cudaSuccess;
        if (graph) cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
        slow_fill<<<4, 256, 0, s>>>(static_cast<uint32_t *>(d_in), n * es / 4, one_word, 200000ull);
        st = ar4j_residual_rmsnorm_ex(dtype, d_in, d_res, d_w, d_out, d_res_out, rows, hidden, 1e-6f, s,
                                      AR4J_RMSNORM_PDL);
        if (graph) {
            err = cudaStreamEndCapture(s, &g);
            if (err == cudaSuccess) err = cudaGraphInstantiate(&exec, g, 0);
            if (err == cudaSuccess) err = cudaGraphLaunch(exec, s);
        }
        if (err == cudaSuccess) err = cudaStreamSynchronize(s);
        char what[160];
        std::snprintf(what, sizeof what, "%s rows=%zu hidden=%zu PDL behind a slow producer (%s): status %d, cuda %d",
                      dtype_name(dtype), rows, hidden, graph ? "graph" : "eager", st, static_cast<int>(err));
        check(st == AR4J_SUCCESS && err == cudaSuccess, what);
        std::vector<uint8_t> got_out(n * es), got_res(n * es);
        cudaMemcpy(got_out.data(), d_out, n * es, cudaMemcpyDeviceToHost);
        cudaMemcpy(got_res.data(), d_res_out, n * es, cudaMemcpyDeviceToHost);
        size_t wrong = 0;
        for (size_t k = 0; k < n; ++k) {
            const float r = get(dtype, got_res, k), o = get(dtype, got_out, k), e = get(dtype, w, k % hidden);
            if (to_bits(dtype, r) != to_bits(dtype, 1.5f) || !(std::fabs(o - e) <= tolerance(dtype) * 2)) ++wrong;
        }
        std::snprintf(what, sizeof what, "%s rows=%zu hidden=%zu PDL behind a slow producer (%s): %zu of %zu wrong",
                      dtype_name(dtype), rows, hidden, graph ? "graph" : "eager", wrong, n);
        check(wrong == 0, what);
        if (exec) cudaGraphExecDestroy(exec);
        if (g) cudaGraphDestroy(g);
    }
    cudaStreamDestroy(s);
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
    check(ar4j_residual_rmsnorm_ex(f, a, b, c, d, e, 1, 8, 1e-6f, nullptr, 2) == AR4J_ERROR_INVALID_ARGUMENT,
          "unknown flag refused");
    check(ar4j_residual_rmsnorm_ex(7, a, b, c, d, e, 1, 8, 1e-6f, nullptr, AR4J_RMSNORM_PDL) == AR4J_ERROR_DTYPE,
          "unknown dtype refused with PDL");
    check(ar4j_rmsnorm_pdl_capable(nullptr) == AR4J_ERROR_NULL_POINTER, "pdl_capable: null out refused");
    int32_t capable = -1;
    check(ar4j_rmsnorm_pdl_capable(&capable) == AR4J_SUCCESS && (capable == 0 || capable == 1), "pdl_capable answers");
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    std::printf("device 0: %s, compute capability %d.%d, PDL %s\n", prop.name, prop.major, prop.minor,
                capable == 1 ? "in effect" : "not in effect");
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
                for (bool in_place : {false, true}) run_case(dtype, rows, hidden, in_place, 0, rng);
    // The decode shapes (a few rows of a model's hidden size, and an unaligned one), with and without PDL.
    const size_t decode_hiddens[] = {4096, 5120, 8192, 4099};
    for (int dtype : {AR4J_DTYPE_FLOAT32, AR4J_DTYPE_FLOAT16, AR4J_DTYPE_BFLOAT16})
        for (size_t hidden : decode_hiddens)
            for (size_t rows = 1; rows <= 8; ++rows)
                for (uint32_t flags : {0u, static_cast<uint32_t>(AR4J_RMSNORM_PDL)})
                    for (bool in_place : {false, true}) run_case(dtype, rows, hidden, in_place, flags, rng);
    for (int dtype : {AR4J_DTYPE_FLOAT32, AR4J_DTYPE_BFLOAT16})
        for (size_t hidden : {size_t{4096}, size_t{8192}, size_t{4099}}) pdl_behind_producer(dtype, 4, hidden);
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
