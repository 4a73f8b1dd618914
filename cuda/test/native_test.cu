// ar4j native test: drives libar4j_custom_ar's C ABI directly, one thread per GPU in one
// process (peer pointers), on 2, 4, 6 or 8 GPUs of one host.
//
//   ar4j_native_test [--gpus N] [--quick] [--no-timing] [--timing-only] [--seed S]
//                    [--blocks B --threads T] [--ranks N] [--call-overhead]
//
// --ranks N runs a world of N ranks on fewer GPUs (rank r on GPU r % gpus, several contexts per
// GPU): it exercises the world-size-4/6/8 code paths for correctness and the timeout on a
// 2-GPU machine. Timing is skipped then (the ranks share GPUs), and the 1-/2-stage grid is
// kept small so that every rank's blocks are resident together.
//
// 1. Correctness: 1-stage, 2-stage and push x fp32/fp16/bf16 x element counts 8 .. 2097152 (powers of
//    two and +376 tails) x out-of-place/in-place, random integer-valued inputs (exact sums),
//    outputs poisoned before each run, compared bitwise with a host reference.
// 2. Graph capture: unregistered inputs recorded during capture, registered afterwards in
//    capture order, replayed with fresh inputs.
// 3. Validation: bad arguments on a live context return the documented status.
// 4. Timeout: one rank never calls; the others must return within the deadline and name it.
// 5. Timing: both algorithms per size, CUDA graph of many all-reduces, CUDA events, median.
// Exit code 0 only if every check passed; the last line is "N passed, N failed".

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ar4j/custom_all_reduce.h"

namespace {

std::mutex g_print;
std::atomic<int> g_passed{0};
std::atomic<int> g_failed{0};

#define CHECK_CUDA(call)                                                                          \
    do {                                                                                          \
        cudaError_t e_ = (call);                                                                  \
        if (e_ != cudaSuccess) {                                                                  \
            std::fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, #call,        \
                         cudaGetErrorName(e_), cudaGetErrorString(e_));                           \
            std::exit(2);                                                                         \
        }                                                                                         \
    } while (0)

#define CHECK_AR(call)                                                                            \
    do {                                                                                          \
        int s_ = (call);                                                                          \
        if (s_ != AR4J_SUCCESS) {                                                                 \
            std::fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, #call,        \
                         ar4j_status_name(s_), ar4j_status_message(s_));                          \
            std::exit(2);                                                                         \
        }                                                                                         \
    } while (0)

void record(bool ok, const std::string &what) {
    if (ok) {
        g_passed++;
    } else {
        g_failed++;
        std::lock_guard<std::mutex> lock(g_print);
        std::printf("FAIL %s\n", what.c_str());
    }
}

const char *dtype_name(int d) {
    return d == AR4J_DTYPE_FLOAT32 ? "fp32" : d == AR4J_DTYPE_FLOAT16 ? "fp16" : "bf16";
}
const char *algo_name(int a) {
    return a == AR4J_ALGO_ONE_STAGE ? "1stage" : a == AR4J_ALGO_TWO_STAGE ? "2stage" : "push";
}
size_t esize(int d) { return d == AR4J_DTYPE_FLOAT32 ? 4 : 2; }

// Encodes an exactly representable float into the dtype's bits.
void encode(int dtype, const std::vector<float> &v, std::vector<uint8_t> &out) {
    out.resize(v.size() * esize(dtype));
    for (size_t i = 0; i < v.size(); ++i) {
        if (dtype == AR4J_DTYPE_FLOAT32) {
            std::memcpy(&out[i * 4], &v[i], 4);
        } else if (dtype == AR4J_DTYPE_FLOAT16) {
            __half h = __float2half_rn(v[i]);
            std::memcpy(&out[i * 2], &h, 2);
        } else {
            __nv_bfloat16 h = __float2bfloat16_rn(v[i]);
            std::memcpy(&out[i * 2], &h, 2);
        }
    }
}

// Integer-valued inputs in [-16, 16]: every partial sum of up to 8 ranks is exact in bf16.
void make_input(uint64_t seed, int rank, size_t count, std::vector<float> &v) {
    std::mt19937_64 rng(seed * 1000003ull + static_cast<uint64_t>(rank) * 7919ull + count);
    std::uniform_int_distribution<int> dist(-16, 16);
    v.resize(count);
    for (auto &x : v) x = static_cast<float>(dist(rng));
}

struct Shared {
    int ws = 0;
    size_t max_bytes = 0;
    std::vector<void *> signals;      // per rank
    std::vector<void *> inputs;       // per rank, registered
    std::vector<void *> outputs;      // per rank
    std::vector<void *> graph_inputs; // per rank, never registered up front
    std::vector<void *> timeout_signals;
    std::vector<std::vector<void *>> pending;  // per rank, graph inputs recorded in capture
    std::vector<double> timing;       // rank 0's results
    uint64_t seed = 0;
    bool quick = false;
    bool timing_enabled = true;
    bool timing_only = false;
    int blocks = 0;   // 0: the library's default launch configuration
    int threads = 0;
    int gpus = 0;     // ranks are spread over the GPUs: rank r drives GPU r % gpus
    int device_of(int rank) const { return rank % gpus; }
};

std::vector<size_t> correctness_counts(bool quick) {
    std::vector<size_t> counts;
    for (size_t n = 8; n <= 2097152; n *= (quick ? 8 : 2)) {
        counts.push_back(n);
        counts.push_back(n + 376);
    }
    return counts;
}

void run_correctness(Shared &sh, int rank, ar4j_context *ctx, cudaStream_t stream) {
    const int ws = sh.ws;
    std::vector<float> mine, other, ref;
    std::vector<uint8_t> in_bytes, ref_bytes, got;
    const int dtypes[] = {AR4J_DTYPE_FLOAT32, AR4J_DTYPE_FLOAT16, AR4J_DTYPE_BFLOAT16};
    const int algos[] = {AR4J_ALGO_ONE_STAGE, AR4J_ALGO_TWO_STAGE, AR4J_ALGO_ONE_SHOT_PUSH};
    uint64_t case_id = 0;
    for (int dtype : dtypes) {
        for (int algo : algos) {
            for (int in_place = 0; in_place < 2; ++in_place) {
                for (size_t count : correctness_counts(sh.quick)) {
                    ++case_id;
                    const size_t bytes = count * esize(dtype);
                    if ((bytes % 16) != 0 || bytes > sh.max_bytes) continue;
                    if (algo == AR4J_ALGO_ONE_SHOT_PUSH && bytes > AR4J_PUSH_MAX_BYTES) continue;
                    const uint64_t seed = sh.seed + case_id;
                    make_input(seed, rank, count, mine);
                    ref.assign(count, 0.0f);
                    for (int r = 0; r < ws; ++r) {
                        make_input(seed, r, count, other);
                        for (size_t i = 0; i < count; ++i) ref[i] += other[i];
                    }
                    encode(dtype, mine, in_bytes);
                    encode(dtype, ref, ref_bytes);
                    // The push kernel needs no registration: out of place, it reads an unregistered buffer.
                    void *in = algo == AR4J_ALGO_ONE_SHOT_PUSH && !in_place ? sh.graph_inputs[rank] : sh.inputs[rank];
                    void *out = in_place ? in : sh.outputs[rank];
                    CHECK_CUDA(cudaMemcpyAsync(in, in_bytes.data(), bytes, cudaMemcpyHostToDevice, stream));
                    if (!in_place) CHECK_CUDA(cudaMemsetAsync(out, 0xff, bytes + 64, stream));  // NaN poison + guard
                    int st = ar4j_all_reduce(ctx, algo, dtype, in, out, count, stream);
                    CHECK_CUDA(cudaStreamSynchronize(stream));
                    char what[160];
                    std::snprintf(what, sizeof what, "rank %d %s %s %s count %zu", rank, algo_name(algo),
                                  dtype_name(dtype), in_place ? "in-place" : "out-of-place", count);
                    if (st != AR4J_SUCCESS) {
                        record(false, std::string(what) + ": " + ar4j_status_name(st));
                        continue;
                    }
                    got.resize(bytes + 64);
                    CHECK_CUDA(cudaMemcpy(got.data(), out, in_place ? bytes : bytes + 64, cudaMemcpyDeviceToHost));
                    size_t wrong = 0;
                    for (size_t b = 0; b < bytes; ++b) wrong += got[b] != ref_bytes[b];
                    bool guard_ok = true;
                    if (!in_place) {
                        for (size_t b = bytes; b < bytes + 64; ++b) guard_ok &= got[b] == 0xff;
                    }
                    record(wrong == 0 && guard_ok,
                           std::string(what) + ": " + std::to_string(wrong) + " wrong bytes" +
                               (guard_ok ? "" : ", wrote past the end"));
                }
            }
        }
    }
}

// Push: inputs of -0.0 (the half types' sentinel) and the fp32 sentinel word must still
// arrive; -0.0 halves are sent as +0.0, so every output element must be a zero.
void run_push_sentinels(Shared &sh, int rank, ar4j_context *ctx, cudaStream_t stream) {
    const size_t words = 4096;
    std::vector<uint32_t> host(words);
    for (int dtype : {AR4J_DTYPE_FLOAT32, AR4J_DTYPE_FLOAT16, AR4J_DTYPE_BFLOAT16}) {
        const uint32_t pattern = dtype == AR4J_DTYPE_FLOAT32 ? (rank == 0 ? 0x80008000u : 0x80000000u) : 0x80008000u;
        std::fill(host.begin(), host.end(), pattern);
        CHECK_CUDA(cudaMemcpyAsync(sh.graph_inputs[rank], host.data(), words * 4, cudaMemcpyHostToDevice, stream));
        CHECK_CUDA(cudaMemsetAsync(sh.outputs[rank], 0xff, words * 4, stream));
        const size_t count = words * 4 / esize(dtype);
        int st = ar4j_all_reduce(ctx, AR4J_ALGO_ONE_SHOT_PUSH, dtype, sh.graph_inputs[rank], sh.outputs[rank], count, stream);
        CHECK_CUDA(cudaStreamSynchronize(stream));
        CHECK_CUDA(cudaMemcpy(host.data(), sh.outputs[rank], words * 4, cudaMemcpyDeviceToHost));
        size_t nonzero = 0;
        for (uint32_t w : host) {
            if (dtype == AR4J_DTYPE_FLOAT32) {
                nonzero += (w & 0x7fffffffu) > 0x8000u;  // at most the sentinel's denormal magnitude
            } else {
                nonzero += (w & 0x7fff7fffu) != 0;
            }
        }
        record(st == AR4J_SUCCESS && nonzero == 0,
               std::string("rank ") + std::to_string(rank) + " push sentinel inputs " + dtype_name(dtype) + ": " +
                   ar4j_status_name(st) + ", " + std::to_string(nonzero) + " non-zero words");
    }
}

void run_graph(Shared &sh, int rank, ar4j_context *ctx, cudaStream_t stream, std::barrier<> &sync) {
    const int ws = sh.ws;
    const int dtype = AR4J_DTYPE_BFLOAT16;
    // Three inputs at different offsets of an unregistered buffer, one of each algorithm and an in-place.
    struct Call { size_t offset; size_t count; int algo; bool in_place; size_t out_offset; };
    const Call calls[] = {{0, 43008 / 2, AR4J_ALGO_ONE_STAGE, false, 0},
                          {1 << 20, 262144 + 376, AR4J_ALGO_TWO_STAGE, false, 1 << 20},
                          {4 << 20, 8192, AR4J_ALGO_ONE_STAGE, true, 0},
                          {6 << 20, 43008 / 2, AR4J_ALGO_ONE_SHOT_PUSH, false, 3 << 20}};
    const size_t ncalls = sizeof(calls) / sizeof(calls[0]);
    const int recorded = 3;  // the push call needs no registration
    char *gin = static_cast<char *>(sh.graph_inputs[rank]);
    char *out = static_cast<char *>(sh.outputs[rank]);

    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    for (const Call &c : calls) {
        void *o = c.in_place ? gin + c.offset : out + c.out_offset;
        CHECK_AR(ar4j_all_reduce(ctx, c.algo, dtype, gin + c.offset, o, c.count, stream));
    }
    CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
    CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    int32_t n = 0;
    CHECK_AR(ar4j_graph_pending_count(ctx, &n));
    record(n == recorded, "rank " + std::to_string(rank) + " graph: 3 inputs recorded, got " + std::to_string(n));
    sh.pending[rank].assign(n, nullptr);
    CHECK_AR(ar4j_graph_pending_inputs(ctx, sh.pending[rank].data(), n));
    sync.arrive_and_wait();  // every rank published its recorded inputs
    std::vector<const void *> rows(static_cast<size_t>(n) * ws);
    for (int i = 0; i < n; ++i) {
        for (int r = 0; r < ws; ++r) rows[static_cast<size_t>(i) * ws + r] = sh.pending[r][i];
    }
    int wrong_count = ar4j_register_graph_inputs(ctx, rows.data(), n + 1);
    record(wrong_count == AR4J_ERROR_GRAPH_COUNT, "graph: wrong count rejected with AR4J_ERROR_GRAPH_COUNT");
    CHECK_AR(ar4j_register_graph_inputs(ctx, rows.data(), n));
    sync.arrive_and_wait();  // every rank registered before anyone replays

    std::vector<float> mine, other, ref;
    std::vector<uint8_t> bytes_in, ref_bytes, got;
    for (int replay = 0; replay < 5; ++replay) {
        for (size_t k = 0; k < ncalls; ++k) {
            const Call &c = calls[k];
            make_input(sh.seed + 777 + replay * 10 + k, rank, c.count, mine);
            encode(dtype, mine, bytes_in);
            CHECK_CUDA(cudaMemcpyAsync(gin + c.offset, bytes_in.data(), bytes_in.size(), cudaMemcpyHostToDevice, stream));
            if (!c.in_place) CHECK_CUDA(cudaMemsetAsync(out + c.out_offset, 0xff, bytes_in.size(), stream));
        }
        CHECK_CUDA(cudaGraphLaunch(exec, stream));
        CHECK_CUDA(cudaStreamSynchronize(stream));
        for (size_t k = 0; k < ncalls; ++k) {
            const Call &c = calls[k];
            ref.assign(c.count, 0.0f);
            for (int r = 0; r < ws; ++r) {
                make_input(sh.seed + 777 + replay * 10 + k, r, c.count, other);
                for (size_t i = 0; i < c.count; ++i) ref[i] += other[i];
            }
            encode(dtype, ref, ref_bytes);
            got.resize(ref_bytes.size());
            const char *o = c.in_place ? gin + c.offset : out + c.out_offset;
            CHECK_CUDA(cudaMemcpy(got.data(), o, got.size(), cudaMemcpyDeviceToHost));
            size_t wrong = 0;
            for (size_t b = 0; b < got.size(); ++b) wrong += got[b] != ref_bytes[b];
            record(wrong == 0, "rank " + std::to_string(rank) + " graph replay " + std::to_string(replay) +
                                   " call " + std::to_string(k) + ": " + std::to_string(wrong) + " wrong bytes");
        }
        // The peers overwrite their inputs for the next replay only after everyone checked.
        sync.arrive_and_wait();
    }
    CHECK_CUDA(cudaGraphExecDestroy(exec));
    CHECK_CUDA(cudaGraphDestroy(graph));
}

void run_validation(Shared &sh, int rank, ar4j_context *ctx, cudaStream_t stream) {
    auto expect = [&](int got, int want, const char *what) {
        record(got == want, std::string("rank ") + std::to_string(rank) + " validation " + what + ": got " +
                                ar4j_status_name(got) + ", want " + ar4j_status_name(want));
    };
    char *in = static_cast<char *>(sh.inputs[rank]);
    char *out = static_cast<char *>(sh.outputs[rank]);
    expect(ar4j_all_reduce(nullptr, 1, 0, in, out, 4, stream), AR4J_ERROR_NULL_POINTER, "null context");
    expect(ar4j_all_reduce(ctx, 1, 0, nullptr, out, 4, stream), AR4J_ERROR_NULL_POINTER, "null input");
    expect(ar4j_all_reduce(ctx, 0, 0, in, out, 4, stream), AR4J_ERROR_ALGORITHM, "algorithm 0");
    expect(ar4j_all_reduce(ctx, 1, 7, in, out, 4, stream), AR4J_ERROR_DTYPE, "dtype 7");
    expect(ar4j_all_reduce(ctx, 1, 0, in, out, 0, stream), AR4J_ERROR_EMPTY, "count 0");
    expect(ar4j_all_reduce(ctx, 1, 0, in, out, 5, stream), AR4J_ERROR_SIZE_NOT_MULTIPLE_OF_16, "20 bytes");
    expect(ar4j_all_reduce(ctx, 1, 2, in, out, 12, stream), AR4J_ERROR_SIZE_NOT_MULTIPLE_OF_16, "24 bytes bf16");
    expect(ar4j_all_reduce(ctx, 1, 0, in + 4, out, 4, stream), AR4J_ERROR_MISALIGNED, "misaligned input");
    expect(ar4j_all_reduce(ctx, 1, 0, in, out + 8, 4, stream), AR4J_ERROR_MISALIGNED, "misaligned output");
    expect(ar4j_all_reduce(ctx, 1, 0, in, in + 16, 8, stream), AR4J_ERROR_INVALID_ARGUMENT, "overlapping output");
    expect(ar4j_all_reduce(ctx, 1, 0, out, in, 4, stream), AR4J_ERROR_NOT_REGISTERED, "unregistered input");
    expect(ar4j_all_reduce(ctx, 1, 0, in + sh.max_bytes - 16, out, 8, stream), AR4J_ERROR_TOO_LARGE,
           "past the registered end");
    expect(ar4j_all_reduce(ctx, 2, 0, in, out, sh.max_bytes / 4 + 4, stream), AR4J_ERROR_TOO_LARGE,
           "2-stage above max_bytes");
    expect(ar4j_all_reduce(ctx, 3, 0, in, out, AR4J_PUSH_MAX_BYTES / 4 + 4, stream), AR4J_ERROR_TOO_LARGE,
           "push above AR4J_PUSH_MAX_BYTES");
    expect(ar4j_all_reduce(ctx, 4, 0, in, out, 4, stream), AR4J_ERROR_ALGORITHM, "algorithm 4");
    expect(ar4j_set_launch_config(ctx, 0, 512), AR4J_ERROR_LAUNCH_CONFIG, "0 blocks");
    expect(ar4j_set_launch_config(ctx, 36, 500), AR4J_ERROR_LAUNCH_CONFIG, "500 threads");
    const void *ptrs[8] = {in, in, in, in, in, in, in, in};
    expect(ar4j_register_buffer(ctx, ptrs, 1024), AR4J_ERROR_ALREADY_REGISTERED, "overlapping registration");
    const int other = (sh.device_of(rank) + 1) % sh.gpus;
    CHECK_CUDA(cudaSetDevice(other));
    expect(ar4j_all_reduce(ctx, 1, 0, in, out, 4, stream), AR4J_ERROR_WRONG_DEVICE, "wrong device");
    CHECK_CUDA(cudaSetDevice(sh.device_of(rank)));
    ar4j_context *bad = nullptr;
    expect(ar4j_context_create(&bad, sh.signals.data(), 0, 3, sh.max_bytes, 4, 1000), AR4J_ERROR_WORLD_SIZE, "world size 3");
    expect(ar4j_context_create(&bad, sh.signals.data(), sh.ws, sh.ws, sh.max_bytes, 4, 1000), AR4J_ERROR_RANK, "rank == ws");
    expect(ar4j_context_create(&bad, sh.signals.data(), 0, sh.ws, sh.max_bytes, 4, 0), AR4J_ERROR_DEADLINE, "deadline 0");
}

// Rank `missing` never calls; everyone else must return within the deadline and name it.
void run_timeout(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync, int algo) {
    const int missing = sh.ws - 1;
    const uint64_t deadline_ns = 200ull * 1000 * 1000;  // 200 ms
    ar4j_context *ctx = nullptr;
    // Fresh signal blocks so the main context's flags are untouched.
    if (rank == 0) {
        for (int r = 0; r < sh.ws; ++r) {
            CHECK_CUDA(cudaSetDevice(sh.device_of(r)));
            CHECK_CUDA(cudaMemset(sh.timeout_signals[r], 0, ar4j_signal_size(sh.max_bytes)));
            CHECK_CUDA(cudaDeviceSynchronize());
        }
        CHECK_CUDA(cudaSetDevice(sh.device_of(rank)));
    }
    sync.arrive_and_wait();
    CHECK_AR(ar4j_context_create(&ctx, sh.timeout_signals.data(), rank, sh.ws, sh.max_bytes, 4, deadline_ns));
    const void *ptrs[8];
    for (int r = 0; r < sh.ws; ++r) ptrs[r] = sh.inputs[r];
    CHECK_AR(ar4j_register_buffer(ctx, ptrs, sh.max_bytes));
    if (sh.blocks > 0) CHECK_AR(ar4j_set_launch_config(ctx, sh.blocks, sh.threads > 0 ? sh.threads : 512));
    sync.arrive_and_wait();  // every context exists (push buffers filled) before anyone launches
    if (rank != missing) {
        auto t0 = std::chrono::steady_clock::now();
        CHECK_AR(ar4j_all_reduce(ctx, algo, AR4J_DTYPE_BFLOAT16, sh.inputs[rank], sh.outputs[rank], 21504, stream));
        cudaError_t e = cudaStreamSynchronize(stream);
        double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        ar4j_timeout_info info;
        CHECK_AR(ar4j_read_timeout(ctx, &info, 0));
        int next = ar4j_all_reduce(ctx, algo, AR4J_DTYPE_BFLOAT16, sh.inputs[rank], sh.outputs[rank], 21504, stream);
        char what[256];
        std::snprintf(what, sizeof what,
                      "rank %d %s timeout: stream sync %s after %.1f ms, timed_out=%d peer=%d block=%d barrier=%d, next call %s",
                      rank, algo_name(algo), cudaGetErrorName(e), ms, info.timed_out, info.peer, info.block,
                      info.barrier, ar4j_status_name(next));
        {
            std::lock_guard<std::mutex> lock(g_print);
            std::printf("%s\n", what);
        }
        record(e == cudaSuccess && info.timed_out == 1 && info.peer == missing && ms < 5000.0 &&
                   next == AR4J_ERROR_PEER_TIMEOUT,
               what);
    }
    sync.arrive_and_wait();
    CHECK_AR(ar4j_context_destroy(ctx));
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// Times `iters` all-reduces captured in one graph; returns microseconds per all-reduce.
void run_timing(Shared &sh, int rank, ar4j_context *ctx, cudaStream_t stream, std::barrier<> &sync) {
    const int iters = 50, reps = 7;
    std::vector<size_t> sizes;
    for (size_t b = 1024; b <= sh.max_bytes; b *= 2) {
        sizes.push_back(b);
        if (b == 32768) sizes.push_back(43008);
    }
    cudaEvent_t start, stop;
    CHECK_CUDA(cudaEventCreate(&start));
    CHECK_CUDA(cudaEventCreate(&stop));
    if (rank == 0) {
        std::printf("\n# timing: bf16, out-of-place, registered input, %d all-reduces per CUDA graph, median of %d;"
                    " 1/2-stage launch: %s\n", iters, reps,
                    sh.blocks > 0 ? (std::to_string(sh.blocks) + " blocks x " + std::to_string(sh.threads > 0 ? sh.threads : 512)
                                     + " threads").c_str() : "library default (one block per SM, at most 128, x 512)");
        std::printf("# eager: device time per call between events; host: time of one ar4j_all_reduce call on the host\n");
        std::printf("%12s %10s %10s %10s | %10s %10s %10s | %9s %9s %9s\n", "bytes", "1stage", "2stage", "push",
                    "1st_eager", "2st_eager", "push_eager", "1st_host", "2st_host", "push_host");
    }
    for (size_t bytes : sizes) {
        double us[3] = {NAN, NAN, NAN}, eager_us[3] = {NAN, NAN, NAN}, host_us[3] = {NAN, NAN, NAN};
        const size_t count = bytes / 2;
        for (int a = 0; a < 3; ++a) {
            const int algo = a == 0 ? AR4J_ALGO_ONE_STAGE : a == 1 ? AR4J_ALGO_TWO_STAGE : AR4J_ALGO_ONE_SHOT_PUSH;
            if (algo == AR4J_ALGO_ONE_SHOT_PUSH && bytes > AR4J_PUSH_MAX_BYTES) continue;
            cudaGraph_t graph;
            cudaGraphExec_t exec;
            CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
            for (int i = 0; i < iters; ++i) {
                CHECK_AR(ar4j_all_reduce(ctx, algo, AR4J_DTYPE_BFLOAT16, sh.inputs[rank], sh.outputs[rank], count, stream));
            }
            CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
            CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
            std::vector<double> samples, eager;
            for (int w = 0; w < 3; ++w) CHECK_CUDA(cudaGraphLaunch(exec, stream));
            CHECK_CUDA(cudaStreamSynchronize(stream));
            for (int r = 0; r < reps; ++r) {
                sync.arrive_and_wait();
                CHECK_CUDA(cudaEventRecord(start, stream));
                CHECK_CUDA(cudaGraphLaunch(exec, stream));
                CHECK_CUDA(cudaEventRecord(stop, stream));
                CHECK_CUDA(cudaEventSynchronize(stop));
                float ms = 0;
                CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
                samples.push_back(ms * 1000.0 / iters);
            }
            std::vector<double> host;
            for (int r = 0; r < reps; ++r) {
                sync.arrive_and_wait();
                CHECK_CUDA(cudaEventRecord(start, stream));
                auto h0 = std::chrono::steady_clock::now();
                for (int i = 0; i < iters; ++i) {
                    CHECK_AR(ar4j_all_reduce(ctx, algo, AR4J_DTYPE_BFLOAT16, sh.inputs[rank], sh.outputs[rank], count, stream));
                }
                host.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - h0).count() /
                               iters);
                CHECK_CUDA(cudaEventRecord(stop, stream));
                CHECK_CUDA(cudaEventSynchronize(stop));
                float ms = 0;
                CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
                eager.push_back(ms * 1000.0 / iters);
            }
            us[a] = median(samples);
            eager_us[a] = median(eager);
            host_us[a] = median(host);
            CHECK_CUDA(cudaGraphExecDestroy(exec));
            CHECK_CUDA(cudaGraphDestroy(graph));
        }
        if (rank == 0) {
            std::printf("%12zu %10.2f %10.2f %10.2f | %10.2f %10.2f %10.2f | %9.2f %9.2f %9.2f\n", bytes, us[0], us[1],
                        us[2], eager_us[0], eager_us[1], eager_us[2], host_us[0], host_us[1], host_us[2]);
            std::fflush(stdout);
        }
    }
    ar4j_timeout_info info;
    CHECK_AR(ar4j_read_timeout(ctx, &info, 0));
    record(info.timed_out == 0, "rank " + std::to_string(rank) + " timing ran without timeouts");
    CHECK_CUDA(cudaEventDestroy(start));
    CHECK_CUDA(cudaEventDestroy(stop));
}

}  // namespace

// Host cost of calling into the library without launching: the C++ side of the JMH downcall
// benchmark (same calls, same .so). Needs no GPU.
int run_call_overhead() {
    const long n = 20'000'000;
    volatile int sink = 0;
    double best_null = 1e30, best_name = 1e30;
    for (int rep = 0; rep < 5; ++rep) {
        auto t0 = std::chrono::steady_clock::now();
        for (long i = 0; i < n; ++i) sink = sink + ar4j_all_reduce(nullptr, 1, 2, nullptr, nullptr, 8, nullptr);
        auto t1 = std::chrono::steady_clock::now();
        for (long i = 0; i < n; ++i) sink = sink + (ar4j_status_name(static_cast<int>(i & 15))[5] != 0);
        auto t2 = std::chrono::steady_clock::now();
        best_null = std::min(best_null, std::chrono::duration<double, std::nano>(t1 - t0).count() / n);
        best_name = std::min(best_name, std::chrono::duration<double, std::nano>(t2 - t1).count() / n);
    }
    std::printf("call overhead (best of 5 x %ld calls): ar4j_all_reduce(NULL ctx) %.2f ns, ar4j_status_name %.2f ns\n",
                n, best_null, best_name);
    return sink == 42 ? 1 : 0;  // keeps the calls alive
}

int main(int argc, char **argv) {
    Shared sh;
    int gpus = 0;
    int ranks = 0;
    sh.seed = std::random_device{}();
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--gpus" && i + 1 < argc) gpus = std::atoi(argv[++i]);
        else if (a == "--ranks" && i + 1 < argc) ranks = std::atoi(argv[++i]);
        else if (a == "--quick") sh.quick = true;
        else if (a == "--no-timing") sh.timing_enabled = false;
        else if (a == "--timing-only") sh.timing_only = true;
        else if (a == "--seed" && i + 1 < argc) sh.seed = std::strtoull(argv[++i], nullptr, 10);
        else if (a == "--call-overhead") return run_call_overhead();
        else if (a == "--blocks" && i + 1 < argc) sh.blocks = std::atoi(argv[++i]);
        else if (a == "--threads" && i + 1 < argc) sh.threads = std::atoi(argv[++i]);
        else {
            std::fprintf(stderr,
                         "usage: %s [--gpus N] [--quick] [--no-timing] [--timing-only] [--seed S] [--blocks B --threads T] [--ranks N] [--call-overhead]\n",
                         argv[0]);
            return 2;
        }
    }
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        std::fprintf(stderr, "no usable GPU: cudaGetDeviceCount: %s (%s)\n", cudaGetErrorName(e), cudaGetErrorString(e));
        return 3;
    }
    if (gpus == 0) gpus = count >= 8 ? 8 : count >= 6 ? 6 : count >= 4 ? 4 : count;
    if (ranks == 0) ranks = gpus;
    if (gpus > count || gpus < 1 || ranks < gpus || (ranks != 2 && ranks != 4 && ranks != 6 && ranks != 8)) {
        std::fprintf(stderr, "need a world of 2, 4, 6 or 8 ranks on at most the %d visible GPUs; asked %d ranks on %d GPUs\n",
                     count, ranks, gpus);
        return 3;
    }
    sh.gpus = gpus;
    sh.ws = ranks;
    if (ranks > gpus) {
        sh.timing_enabled = false;
        if (sh.blocks == 0) sh.blocks = 16;
    }
    sh.max_bytes = 64ull << 20;  // 64 MiB: correctness up to 8 MiB, timing up to 64 MiB
    std::printf("ar4j native test: %d ranks on %d GPUs, seed %" PRIu64 ", abi %d\n", ranks, gpus, sh.seed,
                ar4j_abi_version());
    for (int r = 0; r < gpus; ++r) {
        cudaDeviceProp prop;
        CHECK_CUDA(cudaGetDeviceProperties(&prop, r));
        std::printf("  GPU %d: %s, sm_%d%d, %d SMs\n", r, prop.name, prop.major, prop.minor, prop.multiProcessorCount);
    }
    sh.signals.resize(ranks);
    sh.timeout_signals.resize(ranks);
    sh.inputs.resize(ranks);
    sh.outputs.resize(ranks);
    sh.graph_inputs.resize(ranks);
    sh.pending.resize(ranks);
    for (int d = 0; d < gpus; ++d) {
        CHECK_CUDA(cudaSetDevice(d));
        for (int q = 0; q < gpus; ++q) {
            if (q == d) continue;
            int can = 0;
            CHECK_CUDA(cudaDeviceCanAccessPeer(&can, d, q));
            if (!can) {
                std::fprintf(stderr, "GPU %d cannot access GPU %d as a peer\n", d, q);
                return 3;
            }
            CHECK_CUDA(cudaDeviceEnablePeerAccess(q, 0));
        }
    }
    for (int r = 0; r < ranks; ++r) {
        CHECK_CUDA(cudaSetDevice(sh.device_of(r)));
        const size_t sig = ar4j_signal_size(sh.max_bytes);
        CHECK_CUDA(cudaMalloc(&sh.signals[r], sig));
        CHECK_CUDA(cudaMemset(sh.signals[r], 0, sig));
        CHECK_CUDA(cudaMalloc(&sh.timeout_signals[r], sig));
        CHECK_CUDA(cudaMalloc(&sh.inputs[r], sh.max_bytes));
        CHECK_CUDA(cudaMalloc(&sh.outputs[r], sh.max_bytes + 4096));
        CHECK_CUDA(cudaMalloc(&sh.graph_inputs[r], 8u << 20));
        CHECK_CUDA(cudaDeviceSynchronize());
    }

    std::barrier<> sync(ranks);
    std::vector<std::thread> threads;
    for (int rank = 0; rank < ranks; ++rank) {
        threads.emplace_back([&sh, &sync, rank]() {
            CHECK_CUDA(cudaSetDevice(sh.device_of(rank)));
            cudaStream_t stream;
            CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
            ar4j_context *ctx = nullptr;
            CHECK_AR(ar4j_context_create(&ctx, sh.signals.data(), rank, sh.ws, sh.max_bytes, 64,
                                         10ull * 1000 * 1000 * 1000));
            CHECK_AR(ar4j_register_buffer(ctx, sh.inputs.data(), sh.max_bytes));
            if (sh.blocks > 0) CHECK_AR(ar4j_set_launch_config(ctx, sh.blocks, sh.threads > 0 ? sh.threads : 512));
            sync.arrive_and_wait();  // every context exists (push buffers filled) before anyone launches
            if (!sh.timing_only) {
                auto t0 = std::chrono::steady_clock::now();
                run_correctness(sh, rank, ctx, stream);
                sync.arrive_and_wait();
                run_push_sentinels(sh, rank, ctx, stream);
                sync.arrive_and_wait();
                run_graph(sh, rank, ctx, stream, sync);
                run_validation(sh, rank, ctx, stream);
                sync.arrive_and_wait();
                if (rank == 0) {
                    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                    std::printf("correctness, graph and validation done in %.1f s: %d passed, %d failed so far\n", s,
                                g_passed.load(), g_failed.load());
                    std::fflush(stdout);
                }
            }
            if (sh.timing_enabled) run_timing(sh, rank, ctx, stream, sync);
            sync.arrive_and_wait();
            if (!sh.timing_only) {
                run_timeout(sh, rank, stream, sync, AR4J_ALGO_ONE_STAGE);
                run_timeout(sh, rank, stream, sync, AR4J_ALGO_TWO_STAGE);
                run_timeout(sh, rank, stream, sync, AR4J_ALGO_ONE_SHOT_PUSH);
            }
            CHECK_AR(ar4j_context_destroy(ctx));
            CHECK_CUDA(cudaStreamDestroy(stream));
        });
    }
    for (auto &t : threads) t.join();
    std::printf("%d passed, %d failed\n", g_passed.load(), g_failed.load());
    return g_failed.load() == 0 ? 0 : 1;
}
