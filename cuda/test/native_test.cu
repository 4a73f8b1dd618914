// ar4j native test: drives libar4j_custom_ar's C ABI directly, one thread per GPU in one
// process (peer pointers), on 2, 4, 6 or 8 GPUs of one host.
//
//   ar4j_native_test [--gpus N] [--quick] [--no-timing] [--timing-only] [--seed S]
//                    [--blocks B --threads T] [--ranks N] [--no-pdl-timing] [--call-overhead]
//
// --ranks N runs a world of N ranks on fewer GPUs (rank r on GPU r % gpus, several contexts per
// GPU): it exercises the world-size-4/6/8 code paths for correctness and the timeout on a
// 2-GPU machine, or on one GPU (--gpus 1). Timing is skipped then (the ranks share GPUs), except
// the PDL on/off comparison, and the 1-/2-stage grid is kept small so that every rank's blocks
// are resident together. Checks that cannot run there (the wrong-device check on one GPU) are
// reported as SKIP, never as passed or failed.
//
// 1. Correctness: 1-stage, 2-stage and push x fp32/fp16/bf16 x element counts 8 .. 2097152 (powers of
//    two and +376 tails) x out-of-place/in-place, random integer-valued inputs (exact sums),
//    outputs poisoned before each run, compared bitwise with a host reference.
// 2. Graph capture: unregistered inputs recorded during capture, registered afterwards in
//    capture order, replayed with fresh inputs.
// 3. Validation: bad arguments on a live context return the documented status.
// 3b. PDL: a quick correctness matrix and the graph test again with programmatic dependent launch,
//     and dependent calls (allreduce(allreduce(x))) eagerly and in a graph.
// 4. Timeout: one rank never calls; the others must return within the deadline, name it and
//    leave NaN in the output.
// 5. Timing: both algorithms per size, CUDA graph of many all-reduces, CUDA events, median;
//    then PDL off against on (also with ranks sharing a GPU).
// 6. Failure containment: the push generation seeded below 2^32 with a late rank (exact across
//    the wrap); launch geometry mismatch refused; ar4j_poison from a watchdog thread while
//    kernels run; a rank that stops inside a graph (NaN for every later replay, naming it); one
//    context on two streams at once (detected, NaN).
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
std::atomic<int> g_skipped{0};

#define CHECK_CUDA(call)                                                                          \
    do {                                                                                          \
        cudaError_t e_ = (call);                                                                  \
        if (e_ != cudaSuccess) {                                                                  \
            std::fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, #call,        \
                         cudaGetErrorName(e_), cudaGetErrorString(e_));                           \
            std::fflush(stdout);                                                                  \
            std::_Exit(2);  /* other threads keep running: no exit handlers */                \
        }                                                                                         \
    } while (0)

#define CHECK_AR(call)                                                                            \
    do {                                                                                          \
        int s_ = (call);                                                                          \
        if (s_ != AR4J_SUCCESS) {                                                                 \
            std::fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, #call,        \
                         ar4j_status_name(s_), ar4j_status_message(s_));                          \
            std::fflush(stdout);                                                                  \
            std::_Exit(2);  /* other threads keep running: no exit handlers */                \
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

void skip(const std::string &what) {
    g_skipped++;
    std::lock_guard<std::mutex> lock(g_print);
    std::printf("SKIP %s\n", what.c_str());
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
    bool pdl_timing = true;
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

void run_correctness(Shared &sh, int rank, ar4j_context *ctx, cudaStream_t stream, bool quick, const char *tag) {
    const int ws = sh.ws;
    std::vector<float> mine, other, ref;
    std::vector<uint8_t> in_bytes, ref_bytes, got;
    const int dtypes[] = {AR4J_DTYPE_FLOAT32, AR4J_DTYPE_FLOAT16, AR4J_DTYPE_BFLOAT16};
    const int algos[] = {AR4J_ALGO_ONE_STAGE, AR4J_ALGO_TWO_STAGE, AR4J_ALGO_ONE_SHOT_PUSH};
    uint64_t case_id = 0;
    for (int dtype : dtypes) {
        for (int algo : algos) {
            for (int in_place = 0; in_place < 2; ++in_place) {
                for (size_t count : correctness_counts(quick)) {
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
                    std::snprintf(what, sizeof what, "rank %d%s %s %s %s count %zu", rank, tag, algo_name(algo),
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
    if (sh.gpus > 1) {
        const int other = (sh.device_of(rank) + 1) % sh.gpus;
        CHECK_CUDA(cudaSetDevice(other));
        expect(ar4j_all_reduce(ctx, 1, 0, in, out, 4, stream), AR4J_ERROR_WRONG_DEVICE, "wrong device");
        CHECK_CUDA(cudaSetDevice(sh.device_of(rank)));
    } else {
        skip("rank " + std::to_string(rank) + " validation wrong device: one GPU, there is no other device to be on");
    }
    // Entry points of ABI 0.3 (the context has launched by now).
    expect(ar4j_set_launch_config(ctx, 16, 512), AR4J_ERROR_ALREADY_LAUNCHED, "launch config after the first call");
    expect(ar4j_debug_seed_push_generation(ctx, 5), AR4J_ERROR_ALREADY_LAUNCHED, "debug seed after the first call");
    expect(ar4j_check_geometry(ctx), AR4J_SUCCESS, "geometry agreed");
    expect(ar4j_poison(ctx, 0), AR4J_ERROR_INVALID_ARGUMENT, "poison reason 0");
    expect(ar4j_poison(ctx, 256), AR4J_ERROR_INVALID_ARGUMENT, "poison reason 256");
    expect(ar4j_poison(nullptr, AR4J_POISON_ABORT), AR4J_ERROR_NULL_POINTER, "poison null context");
    expect(ar4j_set_pdl(ctx, 2), AR4J_ERROR_INVALID_ARGUMENT, "pdl 2");
    expect(ar4j_read_failure(ctx, nullptr), AR4J_ERROR_NULL_POINTER, "read failure into null");
    ar4j_failure_info healthy;
    expect(ar4j_read_failure(ctx, &healthy), AR4J_SUCCESS, "read failure");
    record(healthy.poisoned == 0 && healthy.origin_rank == -1 && healthy.timeout.timed_out == 0 &&
               healthy.geometry_mismatch == 0 && healthy.poison_word == 0,
           "rank " + std::to_string(rank) + " validation: a healthy context reads no failure");
    ar4j_context *bad = nullptr;
    expect(ar4j_context_create(&bad, sh.signals.data(), 0, 3, sh.max_bytes, 4, 1000), AR4J_ERROR_WORLD_SIZE, "world size 3");
    expect(ar4j_context_create(&bad, sh.signals.data(), sh.ws, sh.ws, sh.max_bytes, 4, 1000), AR4J_ERROR_RANK, "rank == ws");
    expect(ar4j_context_create(&bad, sh.signals.data(), 0, sh.ws, sh.max_bytes, 4, 0), AR4J_ERROR_DEADLINE, "deadline 0");
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// ---- failure containment (ABI 0.3) ------------------------------------------------------

// A fresh group on sh.timeout_signals (zeroed), one context per rank with the given deadline,
// sh.inputs registered, launch geometry `blocks` (0: the test's default). Every rank's context
// exists (and is configured) when this returns.
ar4j_context *fresh_group(Shared &sh, int rank, std::barrier<> &sync, uint64_t deadline_ns, int blocks = 0) {
    if (rank == 0) {
        for (int r = 0; r < sh.ws; ++r) {
            CHECK_CUDA(cudaSetDevice(sh.device_of(r)));
            CHECK_CUDA(cudaMemset(sh.timeout_signals[r], 0, ar4j_signal_size(sh.max_bytes)));
            CHECK_CUDA(cudaDeviceSynchronize());
        }
        CHECK_CUDA(cudaSetDevice(sh.device_of(rank)));
    }
    sync.arrive_and_wait();
    ar4j_context *ctx = nullptr;
    CHECK_AR(ar4j_context_create(&ctx, sh.timeout_signals.data(), rank, sh.ws, sh.max_bytes, 8, deadline_ns));
    CHECK_AR(ar4j_register_buffer(ctx, sh.inputs.data(), sh.max_bytes));
    if (blocks == 0) blocks = sh.blocks;
    if (blocks > 0) CHECK_AR(ar4j_set_launch_config(ctx, blocks, sh.threads > 0 ? sh.threads : 512));
    sync.arrive_and_wait();  // every context exists (push buffers filled) before anyone launches
    return ctx;
}

uint16_t nan_half(int dtype) { return dtype == AR4J_DTYPE_FLOAT16 ? 0x7e00 : 0x7fc0; }

// Number of elements of `bytes` at dev that are not the kernels' NaN for dtype.
size_t count_not_nan(const void *dev, size_t bytes, int dtype) {
    std::vector<uint8_t> h(bytes);
    CHECK_CUDA(cudaMemcpy(h.data(), dev, bytes, cudaMemcpyDeviceToHost));
    size_t bad = 0;
    if (dtype == AR4J_DTYPE_FLOAT32) {
        for (size_t i = 0; i + 4 <= bytes; i += 4) {
            uint32_t w;
            std::memcpy(&w, &h[i], 4);
            bad += w != 0x7fc00000u;
        }
    } else {
        for (size_t i = 0; i + 2 <= bytes; i += 2) {
            uint16_t w;
            std::memcpy(&w, &h[i], 2);
            bad += w != nan_half(dtype);
        }
    }
    return bad;
}

std::string describe(const ar4j_failure_info &f) {
    char b[256];
    std::snprintf(b, sizeof b, "poisoned=%d origin=%d reason=%d peer=%d block=%d own-timeout=%d (peer %d)", f.poisoned,
                  f.origin_rank, f.reason, f.peer, f.block, f.timeout.timed_out, f.timeout.peer);
    return b;
}

void say(const std::string &line) {
    std::lock_guard<std::mutex> lock(g_print);
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
}

double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Rank `missing` never calls; everyone else must return within the deadline, name it, and
// leave NaN in the output; the next call fails.
void run_timeout(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync, int algo) {
    const int missing = sh.ws - 1;
    const uint64_t deadline_ns = 200ull * 1000 * 1000;  // 200 ms
    ar4j_context *ctx = fresh_group(sh, rank, sync, deadline_ns);
    const int dtype = AR4J_DTYPE_BFLOAT16;
    const size_t count = 21504, bytes = count * 2;
    if (rank != missing) {
        CHECK_CUDA(cudaMemsetAsync(sh.outputs[rank], 0x11, bytes, stream));
        auto t0 = std::chrono::steady_clock::now();
        CHECK_AR(ar4j_all_reduce(ctx, algo, dtype, sh.inputs[rank], sh.outputs[rank], count, stream));
        cudaError_t e = cudaStreamSynchronize(stream);
        double ms = ms_since(t0);
        ar4j_failure_info info;
        CHECK_AR(ar4j_read_failure(ctx, &info));
        int next = ar4j_all_reduce(ctx, algo, dtype, sh.inputs[rank], sh.outputs[rank], count, stream);
        const size_t not_nan = count_not_nan(sh.outputs[rank], bytes, dtype);
        char what[400];
        std::snprintf(what, sizeof what, "rank %d %s timeout: stream sync %s after %.1f ms, %s, %zu non-NaN, next call %s",
                      rank, algo_name(algo), cudaGetErrorName(e), ms, describe(info).c_str(), not_nan,
                      ar4j_status_name(next));
        say(what);
        record(e == cudaSuccess && info.poisoned == 1 && info.reason == AR4J_POISON_TIMEOUT && info.peer == missing &&
                   ms < 5000.0 && not_nan == 0 && (next == AR4J_ERROR_PEER_TIMEOUT || next == AR4J_ERROR_POISONED),
               what);
    }
    sync.arrive_and_wait();
    CHECK_AR(ar4j_context_destroy(ctx));
}

// The push generation seeded just below 2^32 (2^32 is not a multiple of the 3 buffer
// generations: a 32-bit counter returned the previous call's data at the wrap), one rank
// launching each call 0.5 ms late: every call across the wrap must be exact.
void run_wrap(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync) {
    ar4j_context *ctx = fresh_group(sh, rank, sync, 10ull * 1000 * 1000 * 1000);
    const uint64_t first = (1ull << 32) - 6;
    CHECK_AR(ar4j_debug_seed_push_generation(ctx, first));
    sync.arrive_and_wait();
    const int late = sh.ws - 1;
    const int calls = 14;
    int exact = 0;
    std::vector<float> mine, other, ref;
    std::vector<uint8_t> in_bytes, ref_bytes, got;
    for (int k = 0; k < calls; ++k) {
        const int dtype = (k % 2) == 0 ? AR4J_DTYPE_BFLOAT16 : AR4J_DTYPE_FLOAT32;
        const size_t count = 4096, bytes = count * esize(dtype);
        make_input(sh.seed + 9000 + k, rank, count, mine);
        ref.assign(count, 0.0f);
        for (int r = 0; r < sh.ws; ++r) {
            make_input(sh.seed + 9000 + k, r, count, other);
            for (size_t i = 0; i < count; ++i) ref[i] += other[i];
        }
        encode(dtype, mine, in_bytes);
        encode(dtype, ref, ref_bytes);
        CHECK_CUDA(cudaMemcpyAsync(sh.graph_inputs[rank], in_bytes.data(), bytes, cudaMemcpyHostToDevice, stream));
        CHECK_CUDA(cudaMemsetAsync(sh.outputs[rank], 0x11, bytes, stream));
        CHECK_CUDA(cudaStreamSynchronize(stream));
        if (rank == late) std::this_thread::sleep_for(std::chrono::microseconds(500));
        int st = ar4j_all_reduce(ctx, AR4J_ALGO_ONE_SHOT_PUSH, dtype, sh.graph_inputs[rank], sh.outputs[rank], count, stream);
        CHECK_CUDA(cudaStreamSynchronize(stream));
        got.resize(bytes);
        CHECK_CUDA(cudaMemcpy(got.data(), sh.outputs[rank], bytes, cudaMemcpyDeviceToHost));
        size_t wrong = 0;
        for (size_t b = 0; b < bytes; b += esize(dtype)) wrong += std::memcmp(&got[b], &ref_bytes[b], esize(dtype)) != 0;
        exact += st == AR4J_SUCCESS && wrong == 0;
        record(st == AR4J_SUCCESS && wrong == 0,
               "rank " + std::to_string(rank) + " push wrap: call at generation " + std::to_string(first + k) + " " +
                   dtype_name(dtype) + ": " + ar4j_status_name(st) + ", " + std::to_string(wrong) + " of " +
                   std::to_string(count) + " elements wrong");
    }
    say("rank " + std::to_string(rank) + " push wrap: generations " + std::to_string(first) + ".." +
        std::to_string(first + calls - 1) + " (2^32 = " + std::to_string(1ull << 32) + "), rank " + std::to_string(late) +
        " 0.5 ms late each call: " + std::to_string(exact) + " of " + std::to_string(calls) + " calls exact");
    sync.arrive_and_wait();
    CHECK_AR(ar4j_context_destroy(ctx));
}

// Even ranks configure 16 blocks, odd ranks 8: the first call is refused on every rank with
// AR4J_ERROR_GEOMETRY_MISMATCH (no kernel launched), and so is every later one.
void run_geometry(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync) {
    const int blocks = (rank % 2) == 0 ? 16 : 8;
    ar4j_context *ctx = fresh_group(sh, rank, sync, 10ull * 1000 * 1000 * 1000, blocks);
    const int st1 = ar4j_all_reduce(ctx, AR4J_ALGO_ONE_STAGE, AR4J_DTYPE_BFLOAT16, sh.inputs[rank], sh.outputs[rank], 21504, stream);
    const int st2 = ar4j_all_reduce(ctx, AR4J_ALGO_ONE_SHOT_PUSH, AR4J_DTYPE_BFLOAT16, sh.inputs[rank], sh.outputs[rank], 21504, stream);
    const int st3 = ar4j_check_geometry(ctx);
    const int st4 = ar4j_set_launch_config(ctx, 16, 512);
    CHECK_CUDA(cudaStreamSynchronize(stream));
    ar4j_failure_info info;
    CHECK_AR(ar4j_read_failure(ctx, &info));
    const int expected_peer = (rank % 2) == 0 ? 1 : 0;
    char what[400];
    std::snprintf(what, sizeof what,
                  "rank %d geometry %d blocks against peers': calls %s, %s, check %s, reconfigure %s; mismatch=%d peer=%d "
                  "(%d x %d against local %d x %d), %s",
                  rank, blocks, ar4j_status_name(st1), ar4j_status_name(st2), ar4j_status_name(st3), ar4j_status_name(st4),
                  info.geometry_mismatch, info.geometry_peer, info.peer_max_blocks, info.peer_threads,
                  info.local_max_blocks, info.local_threads, describe(info).c_str());
    say(what);
    record(st1 == AR4J_ERROR_GEOMETRY_MISMATCH && st2 == AR4J_ERROR_GEOMETRY_MISMATCH &&
               st3 == AR4J_ERROR_GEOMETRY_MISMATCH && st4 == AR4J_ERROR_ALREADY_LAUNCHED && info.geometry_mismatch == 1 &&
               info.geometry_peer == expected_peer && info.peer_max_blocks == (expected_peer % 2 == 0 ? 16 : 8) &&
               info.local_max_blocks == blocks && info.poisoned == 1 && info.reason == AR4J_POISON_GEOMETRY,
           what);
    sync.arrive_and_wait();
    CHECK_AR(ar4j_context_destroy(ctx));
}

// Rank 1 never launches; its watchdog thread poisons the group 50 ms after the others launched
// (a 10 s deadline): the others' running kernels end with NaN at once and name rank 1.
void run_host_poison(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync) {
    ar4j_context *ctx = fresh_group(sh, rank, sync, 10ull * 1000 * 1000 * 1000);
    const int aborter = 1;
    const int dtype = AR4J_DTYPE_BFLOAT16;
    const size_t count = 21504, bytes = count * 2;
    char *out = static_cast<char *>(sh.outputs[rank]);
    CHECK_CUDA(cudaMemset(out, 0x11, (2u << 20)));
    CHECK_CUDA(cudaDeviceSynchronize());
    sync.arrive_and_wait();
    if (rank != aborter) {
        auto t0 = std::chrono::steady_clock::now();
        CHECK_AR(ar4j_all_reduce(ctx, AR4J_ALGO_ONE_STAGE, dtype, sh.inputs[rank], out, count, stream));
        CHECK_AR(ar4j_all_reduce(ctx, AR4J_ALGO_ONE_SHOT_PUSH, dtype, sh.graph_inputs[rank], out + (1 << 20), count, stream));
        sync.arrive_and_wait();  // launched
        cudaError_t e = cudaStreamSynchronize(stream);
        const double ms = ms_since(t0);
        ar4j_failure_info info;
        CHECK_AR(ar4j_read_failure(ctx, &info));
        const int next = ar4j_all_reduce(ctx, AR4J_ALGO_ONE_SHOT_PUSH, dtype, sh.graph_inputs[rank], out, count, stream);
        const size_t a = count_not_nan(out, bytes, dtype), b = count_not_nan(out + (1 << 20), bytes, dtype);
        char what[400];
        std::snprintf(what, sizeof what,
                      "rank %d host poison by rank %d: kernels ended %s after %.1f ms (deadline 10 s), %s, non-NaN %zu + %zu, "
                      "next call %s",
                      rank, aborter, cudaGetErrorName(e), ms, describe(info).c_str(), a, b, ar4j_status_name(next));
        say(what);
        record(e == cudaSuccess && ms < 2000.0 && info.poisoned == 1 && info.origin_rank == aborter &&
                   info.reason == AR4J_POISON_ABORT && a == 0 && b == 0 && next == AR4J_ERROR_POISONED,
               what);
    } else {
        sync.arrive_and_wait();  // the others launched
        int st = -1;
        double poison_ms = 0;
        std::thread watchdog([&]() {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            auto t0 = std::chrono::steady_clock::now();
            st = ar4j_poison(ctx, AR4J_POISON_ABORT);  // while the peers' kernels spin
            poison_ms = ms_since(t0);
        });
        watchdog.join();
        const int again = ar4j_poison(ctx, AR4J_POISON_PEER_LOST);
        const int next = ar4j_all_reduce(ctx, AR4J_ALGO_ONE_SHOT_PUSH, dtype, sh.graph_inputs[rank], out, count, stream);
        CHECK_CUDA(cudaStreamSynchronize(stream));
        ar4j_failure_info info;
        CHECK_AR(ar4j_read_failure(ctx, &info));
        char what[400];
        std::snprintf(what, sizeof what,
                      "rank %d ar4j_poison from a watchdog thread while peers' kernels run: %s in %.2f ms; again %s; next "
                      "call %s; %s",
                      rank, ar4j_status_name(st), poison_ms, ar4j_status_name(again), ar4j_status_name(next),
                      describe(info).c_str());
        say(what);
        record(st == AR4J_SUCCESS && poison_ms < 1000.0 && again == AR4J_SUCCESS && next == AR4J_ERROR_POISONED &&
                   info.poisoned == 1 && info.origin_rank == aborter && info.reason == AR4J_POISON_ABORT,
               what);
    }
    sync.arrive_and_wait();
    CHECK_AR(ar4j_context_destroy(ctx));
}

// A graph of 1-stage, 2-stage and push, replayed exactly once; then rank `missing` stops: the
// others' replay times out in its first kernel and every kernel after it (and every later
// replay, on every rank, the missing one's too) writes NaN, naming the missing rank.
void run_poison_graph(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync) {
    const int missing = sh.ws - 1;
    ar4j_context *ctx = fresh_group(sh, rank, sync, 200ull * 1000 * 1000);
    const int dtype = AR4J_DTYPE_BFLOAT16;
    struct Call { int algo; size_t in_off; size_t count; size_t out_off; };
    const Call calls[] = {{AR4J_ALGO_ONE_STAGE, 0, 21504, 0},
                          {AR4J_ALGO_TWO_STAGE, 1 << 20, 131072 + 376, 1 << 20},
                          {AR4J_ALGO_ONE_SHOT_PUSH, 2 << 20, 21504, 2 << 20}};
    char *in = static_cast<char *>(sh.inputs[rank]);
    char *out = static_cast<char *>(sh.outputs[rank]);
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    for (const Call &c : calls) CHECK_AR(ar4j_all_reduce(ctx, c.algo, dtype, in + c.in_off, out + c.out_off, c.count, stream));
    CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
    CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    std::vector<float> mine, other, ref;
    std::vector<uint8_t> bytes_in, ref_bytes, got;
    size_t wrong = 0;
    for (const Call &c : calls) {
        make_input(sh.seed + 4242 + c.algo, rank, c.count, mine);
        encode(dtype, mine, bytes_in);
        CHECK_CUDA(cudaMemcpy(in + c.in_off, bytes_in.data(), bytes_in.size(), cudaMemcpyHostToDevice));
    }
    sync.arrive_and_wait();
    CHECK_CUDA(cudaGraphLaunch(exec, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    for (const Call &c : calls) {
        ref.assign(c.count, 0.0f);
        for (int r = 0; r < sh.ws; ++r) {
            make_input(sh.seed + 4242 + c.algo, r, c.count, other);
            for (size_t i = 0; i < c.count; ++i) ref[i] += other[i];
        }
        encode(dtype, ref, ref_bytes);
        got.resize(ref_bytes.size());
        CHECK_CUDA(cudaMemcpy(got.data(), out + c.out_off, got.size(), cudaMemcpyDeviceToHost));
        for (size_t b = 0; b < got.size(); ++b) wrong += got[b] != ref_bytes[b];
    }
    record(wrong == 0, "rank " + std::to_string(rank) + " poison graph: healthy replay exact (" + std::to_string(wrong) +
                           " wrong bytes)");
    sync.arrive_and_wait();  // everyone checked before inputs or outputs change

    auto replay_nan = [&](const char *which) {
        // Stream-ordered, no device-wide synchronisation: on a shared GPU that would wait for the
        // other ranks' (spinning) replays and make this rank the late one.
        CHECK_CUDA(cudaMemsetAsync(out, 0x11, 4u << 20, stream));
        auto t0 = std::chrono::steady_clock::now();
        CHECK_CUDA(cudaGraphLaunch(exec, stream));
        cudaError_t e = cudaStreamSynchronize(stream);
        const double ms = ms_since(t0);
        size_t not_nan = 0;
        for (const Call &c : calls) not_nan += count_not_nan(out + c.out_off, c.count * 2, dtype);
        ar4j_failure_info info;
        CHECK_AR(ar4j_read_failure(ctx, &info));
        char what[400];
        std::snprintf(what, sizeof what, "rank %d poison graph, %s: replay ended %s after %.1f ms, %zu non-NaN elements, %s",
                      rank, which, cudaGetErrorName(e), ms, not_nan, describe(info).c_str());
        say(what);
        record(e == cudaSuccess && not_nan == 0 && info.poisoned == 1 && info.reason == AR4J_POISON_TIMEOUT &&
                   info.peer == missing && ms < 5000.0,
               what);
        return ms;
    };
    if (rank != missing) {
        replay_nan("rank stopped (deadline 200 ms)");
        const double again = replay_nan("replay after the failure");
        record(again < 100.0, "rank " + std::to_string(rank) + " poison graph: a replay of a poisoned group ends at once (" +
                                  std::to_string(again) + " ms)");
        const int next = ar4j_all_reduce(ctx, AR4J_ALGO_ONE_SHOT_PUSH, dtype, in, out, 21504, stream);
        record(next == AR4J_ERROR_PEER_TIMEOUT || next == AR4J_ERROR_POISONED,
               "rank " + std::to_string(rank) + " poison graph: next eager call " + ar4j_status_name(next));
    }
    sync.arrive_and_wait();
    if (rank == missing) replay_nan("the stopped rank replays late");
    sync.arrive_and_wait();
    CHECK_CUDA(cudaGraphExecDestroy(exec));
    CHECK_CUDA(cudaGraphDestroy(graph));
    CHECK_AR(ar4j_context_destroy(ctx));
}

// Rank 0 launches on two streams at once (its first launch waits for the peers, which launch
// 100 ms later): the overlap is found by the kernels, poisons the group, and every output is NaN.
void run_concurrent(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync, int algo) {
    ar4j_context *ctx = fresh_group(sh, rank, sync, 10ull * 1000 * 1000 * 1000);
    cudaStream_t second;
    CHECK_CUDA(cudaStreamCreateWithFlags(&second, cudaStreamNonBlocking));
    const int dtype = AR4J_DTYPE_BFLOAT16;
    const size_t count = 21504, bytes = count * 2;
    char *in = static_cast<char *>(algo == AR4J_ALGO_ONE_SHOT_PUSH ? sh.graph_inputs[rank] : sh.inputs[rank]);
    char *out = static_cast<char *>(sh.outputs[rank]);
    CHECK_CUDA(cudaMemset(out, 0x11, 2u << 20));
    CHECK_CUDA(cudaDeviceSynchronize());
    sync.arrive_and_wait();
    size_t not_nan = 0;
    int st1 = AR4J_SUCCESS, st2 = AR4J_SUCCESS;
    auto t0 = std::chrono::steady_clock::now();
    if (rank == 0) {
        st1 = ar4j_all_reduce(ctx, algo, dtype, in, out, count, stream);
        st2 = ar4j_all_reduce(ctx, algo, dtype, in + (1 << 20), out + (1 << 20), count, second);
        CHECK_CUDA(cudaStreamSynchronize(stream));
        CHECK_CUDA(cudaStreamSynchronize(second));
        not_nan = count_not_nan(out, bytes, dtype) + count_not_nan(out + (1 << 20), bytes, dtype);
    } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        st1 = ar4j_all_reduce(ctx, algo, dtype, in, out, count, stream);
        CHECK_CUDA(cudaStreamSynchronize(stream));
        not_nan = count_not_nan(out, bytes, dtype);
    }
    const double ms = ms_since(t0);
    ar4j_failure_info info;
    CHECK_AR(ar4j_read_failure(ctx, &info));
    char what[400];
    std::snprintf(what, sizeof what, "rank %d %s on two streams at once (rank 0): launches %s/%s, done in %.1f ms, %zu non-NaN, %s",
                  rank, algo_name(algo), ar4j_status_name(st1), ar4j_status_name(st2), ms, not_nan, describe(info).c_str());
    say(what);
    record(st1 == AR4J_SUCCESS && st2 == AR4J_SUCCESS && not_nan == 0 && info.poisoned == 1 && info.origin_rank == 0 &&
               info.reason == AR4J_POISON_CONCURRENT_USE && ms < 3000.0,
           what);
    sync.arrive_and_wait();
    CHECK_CUDA(cudaStreamDestroy(second));
    CHECK_AR(ar4j_context_destroy(ctx));
}

// PDL on, dependent calls: y = allreduce(x), z = allreduce(y), z must be ws * sum(x), eagerly
// and in a graph. The second kernel reads what the first wrote, so this fails if a kernel
// touched its input before griddepcontrol.wait. fp32 keeps ws * 8 * 16 exact.
void run_pdl_chain(Shared &sh, int rank, ar4j_context *ctx, cudaStream_t stream, std::barrier<> &sync) {
    CHECK_AR(ar4j_set_pdl(ctx, 1));
    const int dtype = AR4J_DTYPE_FLOAT32;
    const size_t count = 21504 + 376, bytes = count * 4;
    char *x = static_cast<char *>(sh.inputs[rank]);
    char *y = x + (8u << 20);  // registered too: 1-/2-stage read it from every rank
    char *z = static_cast<char *>(sh.outputs[rank]);
    std::vector<float> mine, other, ref;
    std::vector<uint8_t> in_bytes, ref_bytes, got(bytes);
    for (int algo : {AR4J_ALGO_ONE_SHOT_PUSH, AR4J_ALGO_ONE_STAGE, AR4J_ALGO_TWO_STAGE}) {
        for (int graph = 0; graph < 2; ++graph) {
            const uint64_t seed = sh.seed + 7100 + algo * 2 + graph;
            make_input(seed, rank, count, mine);
            ref.assign(count, 0.0f);
            for (int r = 0; r < sh.ws; ++r) {
                make_input(seed, r, count, other);
                for (size_t i = 0; i < count; ++i) ref[i] += other[i];
            }
            for (float &v : ref) v *= static_cast<float>(sh.ws);
            encode(dtype, mine, in_bytes);
            encode(dtype, ref, ref_bytes);
            CHECK_CUDA(cudaMemcpyAsync(x, in_bytes.data(), bytes, cudaMemcpyHostToDevice, stream));
            CHECK_CUDA(cudaMemsetAsync(y, 0x11, bytes, stream));
            CHECK_CUDA(cudaMemsetAsync(z, 0x11, bytes, stream));
            CHECK_CUDA(cudaStreamSynchronize(stream));
            sync.arrive_and_wait();  // every rank's x is in place
            if (graph == 0) {
                CHECK_AR(ar4j_all_reduce(ctx, algo, dtype, x, y, count, stream));
                CHECK_AR(ar4j_all_reduce(ctx, algo, dtype, y, z, count, stream));
                CHECK_CUDA(cudaStreamSynchronize(stream));
            } else {
                cudaGraph_t g;
                cudaGraphExec_t exec;
                CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
                CHECK_AR(ar4j_all_reduce(ctx, algo, dtype, x, y, count, stream));
                CHECK_AR(ar4j_all_reduce(ctx, algo, dtype, y, z, count, stream));
                CHECK_CUDA(cudaStreamEndCapture(stream, &g));
                CHECK_CUDA(cudaGraphInstantiate(&exec, g, 0));
                CHECK_CUDA(cudaGraphLaunch(exec, stream));
                CHECK_CUDA(cudaStreamSynchronize(stream));
                CHECK_CUDA(cudaGraphExecDestroy(exec));
                CHECK_CUDA(cudaGraphDestroy(g));
            }
            CHECK_CUDA(cudaMemcpy(got.data(), z, bytes, cudaMemcpyDeviceToHost));
            size_t wrong = 0;
            for (size_t b = 0; b < bytes; b += 4) wrong += std::memcmp(&got[b], &ref_bytes[b], 4) != 0;
            record(wrong == 0, "rank " + std::to_string(rank) + " pdl chain " + algo_name(algo) +
                                   (graph ? " graph" : " eager") + ": allreduce(allreduce(x)) " + std::to_string(wrong) +
                                   " of " + std::to_string(count) + " elements wrong");
            sync.arrive_and_wait();  // nobody rewrites x or y while a peer still reads them
        }
    }
    CHECK_AR(ar4j_set_pdl(ctx, 0));
}

// PDL off and on: CUDA graph of `iters` all-reduces, median of `reps`, per algorithm and size.
// Runs also with ranks sharing a GPU (then the absolute times are distorted by the sharing).
void run_pdl_timing(Shared &sh, int rank, ar4j_context *ctx, cudaStream_t stream, std::barrier<> &sync) {
    const int iters = 50, reps = 9;
    const size_t sizes[] = {1024, 16384, 43008, 262144};
    const int algos[] = {AR4J_ALGO_ONE_SHOT_PUSH, AR4J_ALGO_ONE_STAGE, AR4J_ALGO_TWO_STAGE};
    cudaEvent_t start, stop;
    CHECK_CUDA(cudaEventCreate(&start));
    CHECK_CUDA(cudaEventCreate(&stop));
    if (rank == 0) {
        std::printf("\n# PDL timing: bf16, out-of-place, %d all-reduces per CUDA graph, median of %d, us per all-reduce, rank 0;"
                    " %d ranks on %d GPU(s)%s\n", iters, reps, sh.ws, sh.gpus,
                    sh.ws > sh.gpus ? " (ranks share a GPU: absolute times are distorted)" : "");
        std::printf("%10s %8s %10s %10s %8s\n", "bytes", "algo", "pdl_off", "pdl_on", "on/off");
    }
    for (size_t bytes : sizes) {
        for (int algo : algos) {
            double us[2];
            for (int pdl = 0; pdl < 2; ++pdl) {
                CHECK_AR(ar4j_set_pdl(ctx, pdl));
                cudaGraph_t graph;
                cudaGraphExec_t exec;
                CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
                for (int i = 0; i < iters; ++i) {
                    CHECK_AR(ar4j_all_reduce(ctx, algo, AR4J_DTYPE_BFLOAT16, sh.inputs[rank], sh.outputs[rank], bytes / 2, stream));
                }
                CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
                CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
                for (int w = 0; w < 3; ++w) CHECK_CUDA(cudaGraphLaunch(exec, stream));
                CHECK_CUDA(cudaStreamSynchronize(stream));
                std::vector<double> samples;
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
                us[pdl] = median(samples);
                CHECK_CUDA(cudaGraphExecDestroy(exec));
                CHECK_CUDA(cudaGraphDestroy(graph));
            }
            if (rank == 0) {
                std::printf("%10zu %8s %10.2f %10.2f %8.3f\n", bytes, algo_name(algo), us[0], us[1], us[1] / us[0]);
                std::fflush(stdout);
            }
        }
    }
    CHECK_AR(ar4j_set_pdl(ctx, 0));
    ar4j_failure_info info;
    CHECK_AR(ar4j_read_failure(ctx, &info));
    record(info.poisoned == 0 && info.timeout.timed_out == 0, "rank " + std::to_string(rank) + " PDL timing ran without failures");
    CHECK_CUDA(cudaEventDestroy(start));
    CHECK_CUDA(cudaEventDestroy(stop));
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
        else if (a == "--no-pdl-timing") sh.pdl_timing = false;
        else if (a == "--seed" && i + 1 < argc) sh.seed = std::strtoull(argv[++i], nullptr, 10);
        else if (a == "--call-overhead") return run_call_overhead();
        else if (a == "--blocks" && i + 1 < argc) sh.blocks = std::atoi(argv[++i]);
        else if (a == "--threads" && i + 1 < argc) sh.threads = std::atoi(argv[++i]);
        else {
            std::fprintf(stderr,
                         "usage: %s [--gpus N] [--quick] [--no-timing] [--timing-only] [--seed S] [--blocks B --threads T] [--ranks N] [--no-pdl-timing] [--call-overhead]\n",
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
                run_correctness(sh, rank, ctx, stream, sh.quick, "");
                sync.arrive_and_wait();
                run_push_sentinels(sh, rank, ctx, stream);
                sync.arrive_and_wait();
                run_graph(sh, rank, ctx, stream, sync);
                run_validation(sh, rank, ctx, stream);
                sync.arrive_and_wait();
                // The same with programmatic dependent launch, eager and in a graph.
                CHECK_AR(ar4j_set_pdl(ctx, 1));
                int32_t active = -1;
                CHECK_AR(ar4j_pdl_active(ctx, &active));
                cudaDeviceProp prop;
                CHECK_CUDA(cudaGetDeviceProperties(&prop, sh.device_of(rank)));
                record(active == (prop.major >= 9 ? 1 : 0),
                       "rank " + std::to_string(rank) + " PDL active " + std::to_string(active) + " on sm_" +
                           std::to_string(prop.major) + std::to_string(prop.minor));
                run_correctness(sh, rank, ctx, stream, true, " pdl");
                sync.arrive_and_wait();
                run_graph(sh, rank, ctx, stream, sync);
                CHECK_AR(ar4j_set_pdl(ctx, 0));
                sync.arrive_and_wait();
                run_pdl_chain(sh, rank, ctx, stream, sync);
                if (rank == 0) {
                    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                    std::printf("correctness, graph and validation done in %.1f s: %d passed, %d failed so far\n", s,
                                g_passed.load(), g_failed.load());
                    std::fflush(stdout);
                }
            }
            if (sh.timing_enabled) run_timing(sh, rank, ctx, stream, sync);
            sync.arrive_and_wait();
            if (sh.pdl_timing) run_pdl_timing(sh, rank, ctx, stream, sync);
            sync.arrive_and_wait();
            if (!sh.timing_only) {
                run_timeout(sh, rank, stream, sync, AR4J_ALGO_ONE_STAGE);
                run_timeout(sh, rank, stream, sync, AR4J_ALGO_TWO_STAGE);
                run_timeout(sh, rank, stream, sync, AR4J_ALGO_ONE_SHOT_PUSH);
                run_wrap(sh, rank, stream, sync);
                run_geometry(sh, rank, stream, sync);
                run_host_poison(sh, rank, stream, sync);
                run_poison_graph(sh, rank, stream, sync);
                run_concurrent(sh, rank, stream, sync, AR4J_ALGO_ONE_SHOT_PUSH);
                run_concurrent(sh, rank, stream, sync, AR4J_ALGO_ONE_STAGE);
            }
            CHECK_AR(ar4j_context_destroy(ctx));
            CHECK_CUDA(cudaStreamDestroy(stream));
        });
    }
    for (auto &t : threads) t.join();
    if (g_skipped.load() > 0) std::printf("%d skipped (see SKIP lines)\n", g_skipped.load());
    std::printf("%d passed, %d failed\n", g_passed.load(), g_failed.load());
    return g_failed.load() == 0 ? 0 : 1;
}
