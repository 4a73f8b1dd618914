// ar4j fused all-reduce + residual add + RMSNorm test: drives ar4j_all_reduce_residual_rmsnorm
// through the C ABI, one thread per rank, ranks sharing GPUs (rank r on GPU r % gpus).
//
//   ar4j_fused_test [--ranks N] [--gpus G] [--quick] [--no-timing] [--seed S]
//
// It sets CUDA_DEVICE_MAX_CONNECTIONS=32 and CUDA_MODULE_LOADING=EAGER for itself (unless set): see
// main() for why ranks sharing one GPU need them.
//
// 1. Correctness: fp32/fp16/bf16 x hidden {56, 64, 4096, 7168, 16384} x rows {1, 3, 17, 40} (where
//    rows * hidden * dtype size fits the push limit) x out of place / in place (out == in,
//    residual_out == residual) x eager / CUDA graph x PDL off / on. Random inputs, outputs poisoned
//    with NaN before each run. Compared with the unfused reference on the same GPU
//    (ar4j_all_reduce ONE_SHOT_PUSH, then ar4j_residual_rmsnorm): residual_out and out bitwise
//    equal; the reference itself against a host computation (double norm) within 1e-5 (fp32),
//    2e-3 (fp16), 1.6e-2 (bf16) relative to max(1, |ref|); every rank's bits equal rank 0's.
// 2. Validation: each refusal returns its named status.
// 3. Poison: rank 0 poisons the group; its call is refused, every other rank's kernel writes NaN
//    over all of out and residual_out.
// 4. Timing (3 x 7168 bf16): a CUDA graph of 122 fused calls against 122 x (push all-reduce +
//    ar4j_residual_rmsnorm), median of 9 replays, PDL off and on.
// Exit code 0 only if every check passed; the last line is "N passed, N failed".

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ar4j/custom_all_reduce.h"
#include "ar4j/residual_rmsnorm.h"

namespace {

std::mutex g_print;
std::atomic<int> g_passed{0}, g_failed{0};

#define CHECK_CUDA(call)                                                                              \
    do {                                                                                              \
        cudaError_t e_ = (call);                                                                      \
        if (e_ != cudaSuccess) {                                                                      \
            std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, cudaGetErrorName(e_)); \
            std::fflush(stdout);                                                                      \
            std::_Exit(2);                                                                            \
        }                                                                                             \
    } while (0)

#define CHECK_AR(call)                                                                                \
    do {                                                                                              \
        int s_ = (call);                                                                              \
        if (s_ != AR4J_SUCCESS) {                                                                     \
            std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, ar4j_status_name(s_)); \
            std::fflush(stdout);                                                                      \
            std::_Exit(2);                                                                            \
        }                                                                                             \
    } while (0)

void record(bool ok, const std::string &what) {
    if (ok) {
        g_passed++;
    } else {
        g_failed++;
        std::lock_guard<std::mutex> lock(g_print);
        std::printf("FAIL %s\n", what.c_str());
        std::fflush(stdout);
    }
}

void say(const std::string &s) {
    std::lock_guard<std::mutex> lock(g_print);
    std::printf("%s\n", s.c_str());
    std::fflush(stdout);
}

const char *dtype_name(int d) { return d == AR4J_DTYPE_FLOAT32 ? "fp32" : d == AR4J_DTYPE_FLOAT16 ? "fp16" : "bf16"; }
size_t esize(int d) { return d == AR4J_DTYPE_FLOAT32 ? 4 : 2; }

float to_float(int d, const uint8_t *p) {
    if (d == AR4J_DTYPE_FLOAT32) { float f; std::memcpy(&f, p, 4); return f; }
    if (d == AR4J_DTYPE_FLOAT16) { __half h; std::memcpy(&h, p, 2); return __half2float(h); }
    __nv_bfloat16 h; std::memcpy(&h, p, 2); return __bfloat162float(h);
}
void from_float(int d, float v, uint8_t *p) {
    if (d == AR4J_DTYPE_FLOAT32) { std::memcpy(p, &v, 4); return; }
    if (d == AR4J_DTYPE_FLOAT16) { __half h = __float2half_rn(v); std::memcpy(p, &h, 2); return; }
    __nv_bfloat16 h = __float2bfloat16_rn(v); std::memcpy(p, &h, 2);
}
float round_to(int d, float v) { uint8_t b[4]; from_float(d, v, b); return to_float(d, b); }

void fill_random(int d, uint64_t seed, size_t n, float lo, float hi, std::vector<uint8_t> &out) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    out.resize(n * esize(d));
    for (size_t i = 0; i < n; ++i) from_float(d, dist(rng), &out[i * esize(d)]);
}

size_t count_not_nan(int d, const std::vector<uint8_t> &v) {
    size_t n = 0;
    for (size_t i = 0; i < v.size() / esize(d); ++i) n += std::isnan(to_float(d, &v[i * esize(d)])) ? 0 : 1;
    return n;
}

constexpr size_t kMaxBytes = AR4J_PUSH_MAX_BYTES;

struct Shared {
    int ws = 0, gpus = 1;
    bool quick = false, timing = true;
    uint64_t seed = 1;
    std::vector<void *> signals;
    std::vector<std::vector<uint8_t>> host_out, host_res;  // each rank's last fused result
    int device_of(int r) const { return r % gpus; }
};

struct Buffers {
    void *in, *residual, *weight, *out, *res_out, *tmp, *ref_out, *ref_res, *a, *b;
};

void *dalloc(size_t n) {
    void *p = nullptr;
    CHECK_CUDA(cudaMalloc(&p, n));
    return p;
}

double tolerance(int d) { return d == AR4J_DTYPE_FLOAT32 ? 1e-5 : d == AR4J_DTYPE_FLOAT16 ? 2e-3 : 1.6e-2; }

void run_correctness(Shared &sh, int rank, ar4j_context *ctx, cudaStream_t st, Buffers &bf, std::barrier<> &sync,
                     int pdl) {
    const int dtypes[] = {AR4J_DTYPE_FLOAT32, AR4J_DTYPE_FLOAT16, AR4J_DTYPE_BFLOAT16};
    const size_t hiddens[] = {56, 64, 4096, 7168, 16384};
    const size_t rowss[] = {1, 3, 17, 40};  // 40 > 32 blocks: a block owns two rows
    const float eps = 1e-6f;
    int cases = 0;
    for (int d : dtypes) {
        for (size_t hidden : hiddens) {
            for (size_t rows : rowss) {
                const size_t n = rows * hidden, bytes = n * esize(d);
                if (bytes > kMaxBytes) continue;
                if (sh.quick && hidden != 7168 && hidden != 56) continue;
                for (int inplace = 0; inplace < 2; ++inplace) {
                    for (int graph = 0; graph < 2; ++graph) {
                        const uint64_t key = sh.seed * 1000003ull + (uint64_t)d * 7919 + hidden * 31 + rows * 7 +
                                             inplace * 3 + graph + pdl * 101;
                        std::vector<uint8_t> in, res, w;
                        fill_random(d, key * 131 + rank, n, -1.f, 1.f, in);     // differs per rank
                        fill_random(d, key * 137 + 99, n, -2.f, 2.f, res);      // the same on every rank
                        fill_random(d, key * 139 + 77, hidden, 0.5f, 1.5f, w);  // the same on every rank
                        CHECK_CUDA(cudaMemcpy(bf.in, in.data(), bytes, cudaMemcpyHostToDevice));
                        CHECK_CUDA(cudaMemcpy(bf.residual, res.data(), bytes, cudaMemcpyHostToDevice));
                        CHECK_CUDA(cudaMemcpy(bf.weight, w.data(), hidden * esize(d), cudaMemcpyHostToDevice));
                        // Every copy and memset first, then a barrier, then only kernels: with ranks
                        // sharing a GPU, a copy queued behind a spinning kernel can hold up a peer's
                        // copy on a shared hardware queue (8 ranks deadlocked until the deadline).
                        CHECK_CUDA(cudaMemsetAsync(bf.tmp, 0xff, bytes, st));
                        CHECK_CUDA(cudaMemsetAsync(bf.ref_out, 0xff, bytes, st));
                        CHECK_CUDA(cudaMemsetAsync(bf.ref_res, 0xff, bytes, st));
                        void *fin = bf.in, *fres = bf.residual, *fout = bf.out, *fro = bf.res_out;
                        if (inplace) {
                            fin = fout = bf.a;
                            fres = fro = bf.b;
                            CHECK_CUDA(cudaMemcpyAsync(bf.a, bf.in, bytes, cudaMemcpyDeviceToDevice, st));
                            CHECK_CUDA(cudaMemcpyAsync(bf.b, bf.residual, bytes, cudaMemcpyDeviceToDevice, st));
                        } else {
                            CHECK_CUDA(cudaMemsetAsync(bf.out, 0xff, bytes, st));
                            CHECK_CUDA(cudaMemsetAsync(bf.res_out, 0xff, bytes, st));
                        }
                        CHECK_CUDA(cudaStreamSynchronize(st));
                        cudaGraphExec_t exec = nullptr;
                        cudaGraph_t g = nullptr;
                        if (graph) {
                            CHECK_CUDA(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
                            CHECK_AR(ar4j_all_reduce_residual_rmsnorm(ctx, AR4J_ALGO_ONE_SHOT_PUSH, d, fin, fres,
                                                                      bf.weight, fout, fro, rows, hidden, eps, st));
                            CHECK_CUDA(cudaStreamEndCapture(st, &g));
                            CHECK_CUDA(cudaGraphInstantiate(&exec, g, 0));
                        }
                        sync.arrive_and_wait();
                        // Unfused reference, then the fused call (fused and plain push calls interleave).
                        CHECK_AR(ar4j_all_reduce(ctx, AR4J_ALGO_ONE_SHOT_PUSH, d, bf.in, bf.tmp, n, st));
                        CHECK_CUDA(cudaStreamSynchronize(st));
                        CHECK_AR(ar4j_residual_rmsnorm(d, bf.tmp, bf.residual, bf.weight, bf.ref_out, bf.ref_res, rows,
                                                       hidden, eps, st));
                        // One spinning kernel per rank between barriers: with more streams than hardware
                        // queues (CUDA_DEVICE_MAX_CONNECTIONS, 8 by default; 8 ranks have 16 streams) a
                        // rank's fused kernel can be queued ahead of a peer's reference push in one queue.
                        CHECK_CUDA(cudaStreamSynchronize(st));
                        sync.arrive_and_wait();
                        if (graph) {
                            CHECK_CUDA(cudaGraphLaunch(exec, st));
                        } else {
                            CHECK_AR(ar4j_all_reduce_residual_rmsnorm(ctx, AR4J_ALGO_ONE_SHOT_PUSH, d, fin, fres,
                                                                      bf.weight, fout, fro, rows, hidden, eps, st));
                        }
                        CHECK_CUDA(cudaStreamSynchronize(st));
                        if (graph) {
                            CHECK_CUDA(cudaGraphExecDestroy(exec));
                            CHECK_CUDA(cudaGraphDestroy(g));
                        }
                        std::vector<uint8_t> o(bytes), ro(bytes), ref_o(bytes), ref_ro(bytes), tmp(bytes);
                        CHECK_CUDA(cudaMemcpy(o.data(), fout, bytes, cudaMemcpyDeviceToHost));
                        CHECK_CUDA(cudaMemcpy(ro.data(), fro, bytes, cudaMemcpyDeviceToHost));
                        CHECK_CUDA(cudaMemcpy(ref_o.data(), bf.ref_out, bytes, cudaMemcpyDeviceToHost));
                        CHECK_CUDA(cudaMemcpy(ref_ro.data(), bf.ref_res, bytes, cudaMemcpyDeviceToHost));
                        CHECK_CUDA(cudaMemcpy(tmp.data(), bf.tmp, bytes, cudaMemcpyDeviceToHost));
                        char tag[200];
                        std::snprintf(tag, sizeof tag, "rank %d %s hidden %zu rows %zu %s %s pdl %d", rank,
                                      dtype_name(d), hidden, rows, inplace ? "in-place" : "out-of-place",
                                      graph ? "graph" : "eager", pdl);
                        size_t diff_res = 0, diff_out = 0;
                        for (size_t i = 0; i < n; ++i) {
                            diff_res += std::memcmp(&ro[i * esize(d)], &ref_ro[i * esize(d)], esize(d)) != 0;
                            diff_out += std::memcmp(&o[i * esize(d)], &ref_o[i * esize(d)], esize(d)) != 0;
                        }
                        // The reference against the host: residual_out exact from the device sum,
                        // out within tolerance (double norm); no NaN anywhere.
                        size_t ref_bad = 0;
                        double worst = 0;
                        for (size_t r = 0; r < rows; ++r) {
                            double sq = 0;
                            std::vector<float> rr(hidden);
                            for (size_t i = 0; i < hidden; ++i) {
                                const size_t k = r * hidden + i;
                                rr[i] = round_to(d, to_float(d, &tmp[k * esize(d)]) + to_float(d, &res[k * esize(d)]));
                                sq += (double)rr[i] * rr[i];
                                if (round_to(d, rr[i]) != to_float(d, &ref_ro[k * esize(d)])) ref_bad++;
                            }
                            const double inv = 1.0 / std::sqrt(sq / hidden + eps);
                            for (size_t i = 0; i < hidden; ++i) {
                                const size_t k = r * hidden + i;
                                const double want = rr[i] * inv * to_float(d, &w[i * esize(d)]);
                                const double got = to_float(d, &ref_o[k * esize(d)]);
                                const double err = std::fabs(got - want) / std::max(1.0, std::fabs(want));
                                if (!(err <= tolerance(d))) ref_bad++;
                                if (err > worst || std::isnan(err)) worst = std::isnan(err) ? 1e30 : err;
                            }
                        }
                        // The all-reduce itself: tmp against the host's rank-order fp32 sum of every
                        // rank's input (each rank regenerates its peers' inputs from their seeds).
                        std::vector<float> sum(n, 0.f);
                        for (int r = 0; r < sh.ws; ++r) {
                            std::vector<uint8_t> pin;
                            fill_random(d, key * 131 + r, n, -1.f, 1.f, pin);
                            for (size_t i = 0; i < n; ++i) sum[i] = r == 0 ? to_float(d, &pin[i * esize(d)])
                                                                           : sum[i] + to_float(d, &pin[i * esize(d)]);
                        }
                        for (size_t i = 0; i < n; ++i) {
                            if (!(round_to(d, sum[i]) == to_float(d, &tmp[i * esize(d)]))) ref_bad++;
                        }
                        const size_t nan_left = (n - count_not_nan(d, o)) + (n - count_not_nan(d, ro));
                        record(diff_res == 0 && diff_out == 0 && ref_bad == 0 && nan_left == 0,
                               std::string(tag) + ": residual_out " + std::to_string(diff_res) + " and out " +
                                   std::to_string(diff_out) + " elements differ from the unfused reference; reference " +
                                   std::to_string(ref_bad) + " off the host (worst rel " + std::to_string(worst) +
                                   "; all-reduce included), " + std::to_string(nan_left) + " NaN left");
                        if (!(diff_res == 0 && diff_out == 0 && ref_bad == 0 && nan_left == 0)) {
                            ar4j_failure_info fi;
                            if (ar4j_read_failure(ctx, &fi) == AR4J_SUCCESS) {
                                char line[300];
                                std::snprintf(line, sizeof line,
                                              "  rank %d failure record: poisoned %d origin %d reason %d peer %d block %d "
                                              "timeout %d (peer %d block %d)",
                                              rank, fi.poisoned, fi.origin_rank, fi.reason, fi.peer, fi.block,
                                              fi.timeout.timed_out, fi.timeout.peer, fi.timeout.block);
                                say(line);
                            }
                        }
                        sh.host_out[rank] = o;
                        sh.host_res[rank] = ro;
                        sync.arrive_and_wait();
                        if (rank != 0) {
                            record(sh.host_out[rank] == sh.host_out[0] && sh.host_res[rank] == sh.host_res[0],
                                   std::string(tag) + ": bits equal rank 0's");
                        }
                        sync.arrive_and_wait();
                        ++cases;
                    }
                }
            }
        }
    }
    if (rank == 0) say("pdl " + std::to_string(pdl) + ": " + std::to_string(cases) + " cases per rank");
}

void run_validation(Shared &sh, int rank, ar4j_context *ctx, cudaStream_t st, Buffers &bf) {
    const int bf16 = AR4J_DTYPE_BFLOAT16, push = AR4J_ALGO_ONE_SHOT_PUSH;
    struct Case {
        const char *what;
        int expected;
        int got;
    };
    char *in = static_cast<char *>(bf.in);
    std::vector<Case> cases = {
        {"one-stage", AR4J_ERROR_NOT_FUSED,
         ar4j_all_reduce_residual_rmsnorm(ctx, AR4J_ALGO_ONE_STAGE, bf16, bf.in, bf.residual, bf.weight, bf.out,
                                          bf.res_out, 3, 7168, 1e-6f, st)},
        {"two-stage", AR4J_ERROR_NOT_FUSED,
         ar4j_all_reduce_residual_rmsnorm(ctx, AR4J_ALGO_TWO_STAGE, bf16, bf.in, bf.residual, bf.weight, bf.out,
                                          bf.res_out, 3, 7168, 1e-6f, st)},
        {"algorithm 0", AR4J_ERROR_ALGORITHM,
         ar4j_all_reduce_residual_rmsnorm(ctx, 0, bf16, bf.in, bf.residual, bf.weight, bf.out, bf.res_out, 3, 7168,
                                          1e-6f, st)},
        {"dtype 7", AR4J_ERROR_DTYPE,
         ar4j_all_reduce_residual_rmsnorm(ctx, push, 7, bf.in, bf.residual, bf.weight, bf.out, bf.res_out, 3, 7168,
                                          1e-6f, st)},
        {"null residual", AR4J_ERROR_NULL_POINTER,
         ar4j_all_reduce_residual_rmsnorm(ctx, push, bf16, bf.in, nullptr, bf.weight, bf.out, bf.res_out, 3, 7168,
                                          1e-6f, st)},
        {"rows 0", AR4J_ERROR_EMPTY,
         ar4j_all_reduce_residual_rmsnorm(ctx, push, bf16, bf.in, bf.residual, bf.weight, bf.out, bf.res_out, 0, 7168,
                                          1e-6f, st)},
        {"hidden 65544", AR4J_ERROR_HIDDEN_TOO_LARGE,
         ar4j_all_reduce_residual_rmsnorm(ctx, push, bf16, bf.in, bf.residual, bf.weight, bf.out, bf.res_out, 1,
                                          65544, 1e-6f, st)},
        {"hidden 7 bf16", AR4J_ERROR_ROW_NOT_MULTIPLE_OF_16,
         ar4j_all_reduce_residual_rmsnorm(ctx, push, bf16, bf.in, bf.residual, bf.weight, bf.out, bf.res_out, 3, 7,
                                          1e-6f, st)},
        {"64 x 4096 fp32 (1 MiB)", AR4J_ERROR_TOO_LARGE,
         ar4j_all_reduce_residual_rmsnorm(ctx, push, AR4J_DTYPE_FLOAT32, bf.in, bf.residual, bf.weight, bf.out,
                                          bf.res_out, 64, 4096, 1e-6f, st)},
        {"eps 0", AR4J_ERROR_INVALID_ARGUMENT,
         ar4j_all_reduce_residual_rmsnorm(ctx, push, bf16, bf.in, bf.residual, bf.weight, bf.out, bf.res_out, 3, 7168,
                                          0.f, st)},
        {"eps NaN", AR4J_ERROR_INVALID_ARGUMENT,
         ar4j_all_reduce_residual_rmsnorm(ctx, push, bf16, bf.in, bf.residual, bf.weight, bf.out, bf.res_out, 3, 7168,
                                          NAN, st)},
        {"out == residual_out", AR4J_ERROR_INVALID_ARGUMENT,
         ar4j_all_reduce_residual_rmsnorm(ctx, push, bf16, bf.in, bf.residual, bf.weight, bf.out, bf.out, 3, 7168,
                                          1e-6f, st)},
        {"out == residual", AR4J_ERROR_INVALID_ARGUMENT,
         ar4j_all_reduce_residual_rmsnorm(ctx, push, bf16, bf.in, bf.residual, bf.weight, bf.residual, bf.res_out, 3,
                                          7168, 1e-6f, st)},
        {"out overlaps in by 16 B", AR4J_ERROR_INVALID_ARGUMENT,
         ar4j_all_reduce_residual_rmsnorm(ctx, push, bf16, bf.in, bf.residual, bf.weight, in + 16, bf.res_out, 3, 7168,
                                          1e-6f, st)},
        {"out overlaps weight", AR4J_ERROR_INVALID_ARGUMENT,
         ar4j_all_reduce_residual_rmsnorm(ctx, push, bf16, bf.in, bf.residual, bf.weight, bf.weight, bf.res_out, 3,
                                          7168, 1e-6f, st)},
        {"misaligned weight", AR4J_ERROR_MISALIGNED,
         ar4j_all_reduce_residual_rmsnorm(ctx, push, bf16, bf.in, bf.residual, static_cast<char *>(bf.weight) + 8,
                                          bf.out, bf.res_out, 3, 7168, 1e-6f, st)},
        {"null context", AR4J_ERROR_NULL_POINTER,
         ar4j_all_reduce_residual_rmsnorm(nullptr, push, bf16, bf.in, bf.residual, bf.weight, bf.out, bf.res_out, 3,
                                          7168, 1e-6f, st)},
    };
    for (const auto &c : cases) {
        record(c.got == c.expected, "rank " + std::to_string(rank) + " validation " + c.what + ": " +
                                        ar4j_status_name(c.got) + ", expected " + ar4j_status_name(c.expected));
    }
    (void)sh;
}

// Rank 0 poisons; its call is refused, the others' kernels find the poison at entry: all NaN.
void run_poison(Shared &sh, int rank, ar4j_context *ctx, cudaStream_t st, Buffers &bf, std::barrier<> &sync) {
    const int d = AR4J_DTYPE_BFLOAT16;
    const size_t rows = 3, hidden = 7168, n = rows * hidden, bytes = n * 2;
    CHECK_CUDA(cudaMemsetAsync(bf.out, 0x11, bytes, st));
    CHECK_CUDA(cudaMemsetAsync(bf.res_out, 0x11, bytes, st));
    CHECK_CUDA(cudaStreamSynchronize(st));
    sync.arrive_and_wait();
    if (rank == 0) CHECK_AR(ar4j_poison(ctx, AR4J_POISON_ABORT));
    sync.arrive_and_wait();
    const int status = ar4j_all_reduce_residual_rmsnorm(ctx, AR4J_ALGO_ONE_SHOT_PUSH, d, bf.in, bf.residual,
                                                        bf.weight, bf.out, bf.res_out, rows, hidden, 1e-6f, st);
    CHECK_CUDA(cudaStreamSynchronize(st));
    std::vector<uint8_t> o(bytes), ro(bytes);
    CHECK_CUDA(cudaMemcpy(o.data(), bf.out, bytes, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(ro.data(), bf.res_out, bytes, cudaMemcpyDeviceToHost));
    const size_t left = count_not_nan(d, o) + count_not_nan(d, ro);
    if (rank == 0) {
        record(status == AR4J_ERROR_POISONED, std::string("rank 0 poisoned call: ") + ar4j_status_name(status));
    } else {
        record(status == AR4J_SUCCESS && left == 0, "rank " + std::to_string(rank) + " poisoned fused call: " +
                                                        ar4j_status_name(status) + ", " + std::to_string(left) +
                                                        " non-NaN elements in out + residual_out");
    }
    (void)sh;
}

double replay_us(Shared &sh, int rank, cudaStream_t st, cudaGraphExec_t exec, int calls, std::barrier<> &sync) {
    cudaEvent_t a, b;
    CHECK_CUDA(cudaEventCreate(&a));
    CHECK_CUDA(cudaEventCreate(&b));
    std::vector<double> us;
    for (int k = 0; k < 11; ++k) {
        sync.arrive_and_wait();
        CHECK_CUDA(cudaEventRecord(a, st));
        CHECK_CUDA(cudaGraphLaunch(exec, st));
        CHECK_CUDA(cudaEventRecord(b, st));
        CHECK_CUDA(cudaStreamSynchronize(st));
        float ms = 0;
        CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
        if (k >= 2) us.push_back(ms * 1000.0 / calls);
    }
    CHECK_CUDA(cudaEventDestroy(a));
    CHECK_CUDA(cudaEventDestroy(b));
    std::sort(us.begin(), us.end());
    (void)sh;
    (void)rank;
    return us[us.size() / 2];
}

void run_timing(Shared &sh, int rank, ar4j_context *ctx, cudaStream_t st, Buffers &bf, std::barrier<> &sync) {
    const int d = AR4J_DTYPE_BFLOAT16, calls = 122;
    const size_t rows = 3, hidden = 7168, n = rows * hidden;
    std::vector<uint8_t> v;
    fill_random(d, 5, n, -1.f, 1.f, v);
    CHECK_CUDA(cudaMemcpy(bf.in, v.data(), n * 2, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(bf.residual, v.data(), n * 2, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(bf.weight, v.data(), hidden * 2, cudaMemcpyHostToDevice));
    for (int pdl = 0; pdl < 2; ++pdl) {
        CHECK_AR(ar4j_set_pdl(ctx, pdl));
        double t[2];
        for (int fused = 1; fused >= 0; --fused) {
            cudaGraph_t g;
            cudaGraphExec_t exec;
            CHECK_CUDA(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
            for (int i = 0; i < calls; ++i) {
                if (fused) {
                    CHECK_AR(ar4j_all_reduce_residual_rmsnorm(ctx, AR4J_ALGO_ONE_SHOT_PUSH, d, bf.in, bf.residual,
                                                              bf.weight, bf.out, bf.res_out, rows, hidden, 1e-6f, st));
                } else {
                    CHECK_AR(ar4j_all_reduce(ctx, AR4J_ALGO_ONE_SHOT_PUSH, d, bf.in, bf.tmp, n, st));
                    CHECK_AR(ar4j_residual_rmsnorm(d, bf.tmp, bf.residual, bf.weight, bf.out, bf.res_out, rows, hidden,
                                                   1e-6f, st));
                }
            }
            CHECK_CUDA(cudaStreamEndCapture(st, &g));
            CHECK_CUDA(cudaGraphInstantiate(&exec, g, 0));
            t[fused] = replay_us(sh, rank, st, exec, calls, sync);
            CHECK_CUDA(cudaGraphExecDestroy(exec));
            CHECK_CUDA(cudaGraphDestroy(g));
        }
        char line[300];
        std::snprintf(line, sizeof line,
                      "timing rank %d pdl %s: 3 x 7168 bf16, graph of 122: fused %.2f us per call, push + "
                      "residual_rmsnorm %.2f us per pair (median of 9 replays)",
                      rank, pdl ? "on" : "off", t[1], t[0]);
        say(line);
    }
    CHECK_AR(ar4j_set_pdl(ctx, 0));
}

}  // namespace

int main(int argc, char **argv) {
    Shared sh;
    int ranks = 2;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--ranks" && i + 1 < argc) ranks = std::atoi(argv[++i]);
        else if (a == "--gpus" && i + 1 < argc) sh.gpus = std::atoi(argv[++i]);
        else if (a == "--quick") sh.quick = true;
        else if (a == "--no-timing") sh.timing = false;
        else if (a == "--seed" && i + 1 < argc) sh.seed = std::strtoull(argv[++i], nullptr, 10);
        else {
            std::fprintf(stderr, "usage: %s [--ranks N] [--gpus G] [--quick] [--no-timing] [--seed S]\n", argv[0]);
            return 2;
        }
    }
    // Ranks sharing a GPU: a stream's work queued behind a kernel that spins for a peer (a kernel
    // or copy waiting for it to complete) blocks the hardware queue it shares with other streams;
    // with 8 ranks (16 streams, with the contexts' side streams) on the default 8 queues, a peer's
    // launch then waited behind it until the deadline. As many queues as the driver allows, and
    // every kernel loaded up front (lazy loading can wait for running kernels). Set before the
    // first CUDA call; a value in the environment is kept.
    setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
    setenv("CUDA_MODULE_LOADING", "EAGER", 0);
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count < sh.gpus) {
        std::fprintf(stderr, "need %d GPUs\n", sh.gpus);
        return 3;
    }
    sh.ws = ranks;
    std::printf("ar4j fused test: %d ranks on %d GPU(s), seed %" PRIu64 ", abi %d%s\n", ranks, sh.gpus, sh.seed,
                ar4j_abi_version(), sh.quick ? ", quick" : "");
    for (int d = 0; d < sh.gpus; ++d) {
        CHECK_CUDA(cudaSetDevice(d));
        for (int q = 0; q < sh.gpus; ++q)
            if (q != d) CHECK_CUDA(cudaDeviceEnablePeerAccess(q, 0));
    }
    sh.signals.resize(ranks);
    sh.host_out.resize(ranks);
    sh.host_res.resize(ranks);
    const size_t max_bytes = 1 << 20;
    for (int r = 0; r < ranks; ++r) {
        CHECK_CUDA(cudaSetDevice(sh.device_of(r)));
        const size_t sig = ar4j_signal_size(max_bytes);
        CHECK_CUDA(cudaMalloc(&sh.signals[r], sig));
        CHECK_CUDA(cudaMemset(sh.signals[r], 0, sig));
    }
    CHECK_CUDA(cudaDeviceSynchronize());
    std::barrier<> sync(ranks);
    std::vector<std::thread> threads;
    for (int rank = 0; rank < ranks; ++rank) {
        threads.emplace_back([&sh, &sync, rank, max_bytes]() {
            CHECK_CUDA(cudaSetDevice(sh.device_of(rank)));
            cudaStream_t st;
            CHECK_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
            ar4j_context *ctx = nullptr;
            CHECK_AR(ar4j_context_create(&ctx, sh.signals.data(), rank, sh.ws, max_bytes, 16,
                                         10ull * 1000 * 1000 * 1000));
            if (sh.gpus < sh.ws) CHECK_AR(ar4j_set_launch_config(ctx, 16, 512));
            Buffers bf;
            bf.in = dalloc(kMaxBytes);
            bf.residual = dalloc(kMaxBytes);
            bf.weight = dalloc(AR4J_FUSED_MAX_HIDDEN * 4);
            bf.out = dalloc(kMaxBytes);
            bf.res_out = dalloc(kMaxBytes);
            bf.tmp = dalloc(kMaxBytes);
            bf.ref_out = dalloc(kMaxBytes);
            bf.ref_res = dalloc(kMaxBytes);
            bf.a = dalloc(kMaxBytes);
            bf.b = dalloc(kMaxBytes);
            sync.arrive_and_wait();
            run_validation(sh, rank, ctx, st, bf);
            sync.arrive_and_wait();
            for (int pdl = 0; pdl < 2; ++pdl) {
                CHECK_AR(ar4j_set_pdl(ctx, pdl));
                run_correctness(sh, rank, ctx, st, bf, sync, pdl);
            }
            CHECK_AR(ar4j_set_pdl(ctx, 0));
            sync.arrive_and_wait();
            if (sh.timing) run_timing(sh, rank, ctx, st, bf, sync);
            sync.arrive_and_wait();
            run_poison(sh, rank, ctx, st, bf, sync);
            sync.arrive_and_wait();
            CHECK_AR(ar4j_context_destroy(ctx));
        });
    }
    for (auto &t : threads) t.join();
    std::printf("%d passed, %d failed\n", g_passed.load(), g_failed.load());
    return g_failed.load() == 0 ? 0 : 1;
}
