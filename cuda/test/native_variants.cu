// ar4j_native_test, group 8: the kernel variants of ar4j_set_variants (ABI 0.7).
//
//  - API: unknown flags refused; the early trigger in effect only once the geometry check found no
//    rank sharing this rank's GPU (so, on one GPU, never without the test-only flag); the flags
//    frozen after the check; ranks that differ in a buffer-protocol flag refused on every rank
//    (AR4J_ERROR_GEOMETRY_MISMATCH, poisoned, no kernel launched); ranks that differ only in the
//    early trigger accepted (and exact).
//  - Matrix: for each variant alone and all of them together, PDL off and on: the correctness
//    matrix of group 1 (every algorithm x dtype x size incl. tails x in/out of place, against the host
//    reference, bitwise), the graph test of group 2 (recorded inputs, 5 replays), and with PDL on the
//    dependent calls allreduce(allreduce(x)) eagerly and in a graph (group 3b).
//  - Pass-on: with AR4J_VARIANT_PUSH_PASS_ON_POISON a push kernel (plain and fused) that finds a
//    poison only its own signal block holds passes it on: the other running ranks end within 2 s
//    (deadline 10 s) and the rank that runs no kernel has it in its signal block.
//  - Timing: each variant against the default, PDL on, CUDA graph of 50 calls, median of 9, µs per
//    call, rank 0: push (1 KiB .. 256 KiB), fused push all-reduce + residual + RMSNorm (3 x 7168
//    bf16) and 2-stage (256 KiB .. 32 MiB).
// The containment tests of groups 4, 6 and 7 run with variants when the whole program is given
// --variants MASK (every context it makes then uses MASK).

#include <cstddef>

#include "native_test_harness.h"
#include "kernel_interface.cuh"

namespace native_test {

namespace {

// Flags that keep the early trigger on with ranks sharing a GPU (TEST ONLY), for the checks of its
// memory safety on one GPU; harmless where no rank shares.
constexpr uint32_t kForceEarly = AR4J_VARIANT_PUSH_EARLY_TRIGGER | AR4J_VARIANT_DEBUG_IGNORE_SHARED_GPU;

std::string hex(uint32_t v) {
    char b[16];
    std::snprintf(b, sizeof b, "0x%x", v);
    return b;
}

// True if some other rank of the test drives rank's GPU.
bool shares_gpu(const Shared &sh, int rank) {
    for (int r = 0; r < sh.ws; ++r) {
        if (r != rank && sh.device_of(r) == sh.device_of(rank)) return true;
    }
    return false;
}

// One exact push all-reduce of 4096 fp32 on ctx (inputs make_input(seed)); true if exact.
bool exact_push(Shared &sh, int rank, ar4j_context *ctx, cudaStream_t stream, uint64_t seed, int *status) {
    const size_t count = 4096, bytes = count * 4;
    std::vector<float> mine, other, ref(count, 0.0f), got(count);
    make_input(seed, rank, count, mine);
    for (int r = 0; r < sh.ws; ++r) {
        make_input(seed, r, count, other);
        for (size_t i = 0; i < count; ++i) ref[i] += other[i];
    }
    CHECK_CUDA(cudaMemcpyAsync(sh.graph_inputs[rank], mine.data(), bytes, cudaMemcpyHostToDevice, stream));
    CHECK_CUDA(cudaMemsetAsync(sh.outputs[rank], 0xff, bytes, stream));
    *status = ar4j_all_reduce(ctx, AR4J_ALGO_PUSH, AR4J_DTYPE_FLOAT32, sh.graph_inputs[rank], sh.outputs[rank],
                              count, stream);
    CHECK_CUDA(cudaStreamSynchronize(stream));
    CHECK_CUDA(cudaMemcpy(got.data(), sh.outputs[rank], bytes, cudaMemcpyDeviceToHost));
    return *status == AR4J_SUCCESS && std::memcmp(got.data(), ref.data(), bytes) == 0;
}

}  // namespace

void run_variant_api(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync) {
    const std::string who = "rank " + std::to_string(rank) + " variants";
    const bool shared = shares_gpu(sh, rank);
    {
        // The early trigger alone, asked on every rank.
        ar4j_context *ctx = fresh_group(sh, rank, sync, 10ull * 1000 * 1000 * 1000, 0, 0, 0);
        const int bad = ar4j_set_variants(ctx, 0x100);
        const int null_ctx = ar4j_set_variants(nullptr, 0);
        CHECK_AR(ar4j_set_variants(ctx, AR4J_VARIANT_PUSH_EARLY_TRIGGER));
        uint32_t before = 0xffffffffu, after = 0xffffffffu;
        CHECK_AR(ar4j_variants_active(ctx, &before));
        sync.arrive_and_wait();  // every rank published its flags
        const int check = ar4j_check_geometry(ctx);
        CHECK_AR(ar4j_variants_active(ctx, &after));
        const int late = ar4j_set_variants(ctx, 0);
        const uint32_t want = shared ? 0u : static_cast<uint32_t>(AR4J_VARIANT_PUSH_EARLY_TRIGGER);
        record(bad == AR4J_ERROR_INVALID_ARGUMENT && null_ctx == AR4J_ERROR_NULL_POINTER && before == 0 &&
                   check == AR4J_SUCCESS && after == want && late == AR4J_ERROR_ALREADY_LAUNCHED,
               who + " API: unknown flag " + ar4j_status_name(bad) + ", null context " + ar4j_status_name(null_ctx) +
                   ", early trigger in effect before the check " + hex(before) + " (want 0x0), after it " + hex(after) +
                   " (want " + hex(want) + (shared ? ": ranks share this GPU" : ": no rank shares this GPU") +
                   "), check " + ar4j_status_name(check) + ", set after the check " + ar4j_status_name(late));
        int st = 0;
        const bool exact = exact_push(sh, rank, ctx, stream, sh.seed + 8100, &st);
        record(exact, who + " API: push with the early trigger asked: " + ar4j_status_name(st) + (exact ? ", exact" : ", WRONG"));
        sync.arrive_and_wait();
        CHECK_AR(ar4j_context_destroy(ctx));
    }
    {
        // Ranks differing only in the early trigger: accepted, exact.
        ar4j_context *ctx = fresh_group(sh, rank, sync, 10ull * 1000 * 1000 * 1000, 0, 0, rank == 0 ? kForceEarly : 0);
        int st = 0;
        const bool exact = exact_push(sh, rank, ctx, stream, sh.seed + 8200, &st);
        record(exact, who + " API: only rank 0 asks for the early trigger: push " + ar4j_status_name(st) +
                          (exact ? ", exact" : ", WRONG"));
        sync.arrive_and_wait();
        CHECK_AR(ar4j_context_destroy(ctx));
    }
    for (uint32_t flag : {static_cast<uint32_t>(AR4J_VARIANT_PUSH_CLEAR_ON_READ),
                          static_cast<uint32_t>(AR4J_VARIANT_FUSED_GRID_PUSH),
                          static_cast<uint32_t>(AR4J_VARIANT_TWO_STAGE_PUSH)}) {
        // Rank 0 alone with a buffer-protocol flag: refused on every rank before any kernel runs.
        ar4j_context *ctx = fresh_group(sh, rank, sync, 10ull * 1000 * 1000 * 1000, 0, 0, rank == 0 ? flag : 0);
        CHECK_CUDA(cudaMemsetAsync(sh.outputs[rank], 0x11, 4096 * 4, stream));
        const int st1 = ar4j_all_reduce(ctx, AR4J_ALGO_PUSH, AR4J_DTYPE_FLOAT32, sh.graph_inputs[rank],
                                        sh.outputs[rank], 4096, stream);
        const int st2 = ar4j_all_reduce(ctx, AR4J_ALGO_TWO_STAGE, AR4J_DTYPE_FLOAT32, sh.inputs[rank], sh.outputs[rank],
                                        4096, stream);
        CHECK_CUDA(cudaStreamSynchronize(stream));
        ar4j_failure_info info;
        CHECK_AR(ar4j_read_failure(ctx, &info));
        std::vector<uint32_t> got(4096);
        CHECK_CUDA(cudaMemcpy(got.data(), sh.outputs[rank], 4096 * 4, cudaMemcpyDeviceToHost));
        size_t touched = 0;
        for (uint32_t w : got) touched += w != 0x11111111u;
        const int expected_peer = rank == 0 ? 1 : 0;
        record(st1 == AR4J_ERROR_GEOMETRY_MISMATCH && st2 == AR4J_ERROR_GEOMETRY_MISMATCH && touched == 0 &&
                   info.geometry_mismatch == 1 && info.geometry_peer == expected_peer && info.poisoned == 1 &&
                   info.reason == AR4J_POISON_GEOMETRY,
               who + " API: only rank 0 sets " + hex(flag) + ": calls " + ar4j_status_name(st1) + ", " +
                   ar4j_status_name(st2) + ", output words touched " + std::to_string(touched) + ", mismatch " +
                   std::to_string(info.geometry_mismatch) + " peer " + std::to_string(info.geometry_peer) + ", " +
                   describe(info));
        sync.arrive_and_wait();
        CHECK_AR(ar4j_context_destroy(ctx));
    }
}

// Rank `missing` never calls; a poison reaches rank 0's signal block alone (the host word, as a
// host that could reach no other rank leaves it). Rank 0's polling push kernel must pass it on.
void run_push_poison_passed_on(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync, bool fused) {
    const int missing = sh.ws - 1, reason = 78;
    ar4j_context *ctx = fresh_group(sh, rank, sync, 10ull * 1000 * 1000 * 1000, 0, 0, AR4J_VARIANT_PUSH_PASS_ON_POISON);
    const int dtype = AR4J_DTYPE_BFLOAT16;
    const size_t hidden = 7168, rows = 3, count = rows * hidden, bytes = count * 2;
    void *residual = nullptr, *weight = nullptr, *res_out = nullptr;
    if (fused) {
        CHECK_CUDA(cudaMalloc(&residual, bytes));
        CHECK_CUDA(cudaMalloc(&res_out, bytes));
        CHECK_CUDA(cudaMalloc(&weight, hidden * 2));
        CHECK_CUDA(cudaMemset(residual, 0, bytes));
        CHECK_CUDA(cudaMemset(weight, 0x3f, hidden * 2));
        CHECK_CUDA(cudaMemset(res_out, 0x11, bytes));
    }
    CHECK_CUDA(cudaMemset(sh.graph_inputs[rank], 0, bytes));
    CHECK_CUDA(cudaMemsetAsync(sh.outputs[rank], 0x11, bytes, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    sync.arrive_and_wait();
    const auto t0 = std::chrono::steady_clock::now();
    int st = AR4J_SUCCESS;
    if (rank != missing) {
        st = fused ? ar4j_all_reduce_residual_rmsnorm(ctx, AR4J_ALGO_PUSH, dtype, sh.graph_inputs[rank], residual,
                                                      weight, sh.outputs[rank], res_out, rows, hidden, 1e-5f, stream)
                   : ar4j_all_reduce(ctx, AR4J_ALGO_PUSH, dtype, sh.graph_inputs[rank], sh.outputs[rank], count,
                                     stream);
    }
    sync.arrive_and_wait();  // launched
    cudaStream_t aux;
    CHECK_CUDA(cudaStreamCreateWithFlags(&aux, cudaStreamNonBlocking));
    if (rank == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        const uint64_t word = ar4j::make_poison(missing, reason, 0xff, 0xffff);
        CHECK_CUDA(cudaMemcpyAsync(static_cast<char *>(sh.timeout_signals[0]) + offsetof(ar4j::Signal, host_poison), &word,
                                   sizeof word, cudaMemcpyDefault, aux));
        CHECK_CUDA(cudaStreamSynchronize(aux));
    }
    const char *name = fused ? "fused push" : "push";
    if (rank != missing) {
        const cudaError_t e = cudaStreamSynchronize(stream);
        const double ms = ms_since(t0);
        size_t not_nan = count_not_nan(sh.outputs[rank], bytes, dtype);
        if (fused) not_nan += count_not_nan(res_out, bytes, dtype);
        ar4j_failure_info info;
        CHECK_AR(ar4j_read_failure(ctx, &info));
        char what[400];
        std::snprintf(what, sizeof what,
                      "rank %d variants pass-on, %s, poison in rank 0's signal block only: launch %s, ended %s after %.1f ms "
                      "(deadline 10 s), %zu non-NaN, %s",
                      rank, name, ar4j_status_name(st), cudaGetErrorName(e), ms, not_nan, describe(info).c_str());
        say(what);
        record(st == AR4J_SUCCESS && e == cudaSuccess && ms < 2000.0 && not_nan == 0 && info.poisoned == 1 &&
                   info.origin_rank == missing && info.reason == reason,
               what);
    }
    sync.arrive_and_wait();
    if (rank == missing) {
        // Its own signal block, read directly (its context ran no kernel; read_failure reads the same).
        ar4j_failure_info info;
        CHECK_AR(ar4j_read_failure(ctx, &info));
        const std::string what = "rank " + std::to_string(rank) + " variants pass-on, " + name +
                                 " (runs no kernel) has the poison passed on by rank 0's kernel: " + describe(info);
        say(what);
        record(info.poisoned == 1 && info.origin_rank == missing && info.reason == reason, what);
    }
    sync.arrive_and_wait();
    CHECK_CUDA(cudaStreamDestroy(aux));
    if (fused) {
        CHECK_CUDA(cudaFree(residual));
        CHECK_CUDA(cudaFree(res_out));
        CHECK_CUDA(cudaFree(weight));
    }
    CHECK_AR(ar4j_context_destroy(ctx));
}

void run_variant_matrix(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync) {
    run_push_poison_passed_on(sh, rank, stream, sync, false);
    run_push_poison_passed_on(sh, rank, stream, sync, true);
    const uint32_t configs[] = {kForceEarly, AR4J_VARIANT_PUSH_CLEAR_ON_READ, AR4J_VARIANT_FUSED_GRID_PUSH,
                                AR4J_VARIANT_TWO_STAGE_PUSH, AR4J_VARIANT_PUSH_PASS_ON_POISON,
                                kForceEarly | AR4J_VARIANTS_ALL};
    for (uint32_t v : configs) {
        for (int pdl = 0; pdl < 2; ++pdl) {
            auto t0 = std::chrono::steady_clock::now();
            ar4j_context *ctx = fresh_group(sh, rank, sync, 10ull * 1000 * 1000 * 1000, 0, 0, v);
            CHECK_AR(ar4j_set_pdl(ctx, pdl));
            const std::string tag = " variants " + hex(v) + (pdl ? " pdl" : "");
            run_correctness(sh, rank, ctx, stream, true, tag.c_str());
            uint32_t active = 0;
            CHECK_AR(ar4j_variants_active(ctx, &active));
            record(active == (v & AR4J_VARIANTS_ALL),
                   "rank " + std::to_string(rank) + tag + ": in effect " + hex(active) + ", want " +
                       hex(v & AR4J_VARIANTS_ALL));
            sync.arrive_and_wait();
            run_graph(sh, rank, ctx, stream, sync);
            if (pdl) {
                sync.arrive_and_wait();
                run_pdl_chain(sh, rank, ctx, stream, sync);
            }
            ar4j_failure_info info;
            CHECK_AR(ar4j_read_failure(ctx, &info));
            record(info.poisoned == 0 && info.timeout.timed_out == 0,
                   "rank " + std::to_string(rank) + tag + ": no failure recorded (" + describe(info) + ")");
            sync.arrive_and_wait();
            CHECK_AR(ar4j_context_destroy(ctx));
            if (rank == 0) {
                std::printf("variant matrix%s done in %.1f s: %d passed, %d failed so far\n", tag.c_str(),
                            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                            g_passed.load(), g_failed.load());
                std::fflush(stdout);
            }
        }
    }
}

void run_variant_timing(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync) {
    const int iters = 50, reps = 9;
    const bool shared = sh.ws > sh.gpus;
    // With ranks sharing a GPU the early trigger is off unless forced (test-only flag): forced here,
    // so that its cost or gain shows; on separate GPUs the flag is the plain one.
    const uint32_t early = shared ? kForceEarly : static_cast<uint32_t>(AR4J_VARIANT_PUSH_EARLY_TRIGGER);
    struct Config { const char *name; uint32_t flags; };
    const Config configs[] = {{"default", 0},
                              {"early", early},
                              {"clear", AR4J_VARIANT_PUSH_CLEAR_ON_READ},
                              {"early+clear", early | AR4J_VARIANT_PUSH_CLEAR_ON_READ},
                              {"fusedgrid", AR4J_VARIANT_FUSED_GRID_PUSH},
                              {"all", early | AR4J_VARIANTS_ALL},
                              {"2push", AR4J_VARIANT_TWO_STAGE_PUSH}};
    enum Kind { kPush, kFused, kTwoStage };
    struct Cell { Kind kind; size_t bytes; };
    const Cell cells[] = {{kPush, 1024},          {kPush, 16384},          {kPush, 43008},          {kPush, 262144},
                          {kFused, 43008},        {kTwoStage, 262144},     {kTwoStage, 1u << 20},   {kTwoStage, 8u << 20},
                          {kTwoStage, 32u << 20}};
    const size_t ncells = sizeof(cells) / sizeof(cells[0]);
    const size_t hidden = 7168, rows = 3;  // the fused cell: 3 x 7168 bf16 = 43008 bytes
    void *residual = nullptr, *weight = nullptr, *res_out = nullptr;
    CHECK_CUDA(cudaMalloc(&residual, rows * hidden * 2));
    CHECK_CUDA(cudaMalloc(&res_out, rows * hidden * 2));
    CHECK_CUDA(cudaMalloc(&weight, hidden * 2));
    CHECK_CUDA(cudaMemset(residual, 0, rows * hidden * 2));
    CHECK_CUDA(cudaMemset(weight, 0x3f, hidden * 2));
    CHECK_CUDA(cudaMemset(sh.inputs[rank], 0, 32u << 20));  // finite inputs: zeros
    CHECK_CUDA(cudaMemset(sh.graph_inputs[rank], 0, rows * hidden * 2));
    CHECK_CUDA(cudaDeviceSynchronize());
    cudaEvent_t start, stop;
    CHECK_CUDA(cudaEventCreate(&start));
    CHECK_CUDA(cudaEventCreate(&stop));
    std::vector<double> base(ncells, NAN);
    if (rank == 0) {
        std::printf("\n# variant timing: bf16, out of place, PDL on, %d calls per CUDA graph, median of %d, us per call, "
                    "rank 0; %d ranks on %d GPU(s)%s\n", iters, reps, sh.ws, sh.gpus,
                    shared ? " (ranks share a GPU: absolute times are distorted; 'early' forced with the test-only flag)"
                           : "");
        std::printf("# fused = ar4j_all_reduce_residual_rmsnorm push, %zu x %zu; 2stage above its push scratch limit runs the pull kernel\n",
                    rows, hidden);
        std::printf("%12s %8s %10s %10s %10s %8s\n", "variant", "kernel", "bytes", "us", "default", "ratio");
    }
    for (const Config &c : configs) {
        ar4j_context *ctx = fresh_group(sh, rank, sync, 10ull * 1000 * 1000 * 1000, 0, 0, c.flags);
        CHECK_AR(ar4j_set_pdl(ctx, 1));
        for (size_t k = 0; k < ncells; ++k) {
            const Cell &cell = cells[k];
            // A variant that does not change this kernel is not timed again.
            const bool relevant = c.flags == 0 ||
                                  (cell.kind == kPush && (c.flags & (AR4J_VARIANT_PUSH_EARLY_TRIGGER | AR4J_VARIANT_PUSH_CLEAR_ON_READ))) ||
                                  (cell.kind == kFused && (c.flags & (AR4J_VARIANT_PUSH_EARLY_TRIGGER | AR4J_VARIANT_PUSH_CLEAR_ON_READ |
                                                                      AR4J_VARIANT_FUSED_GRID_PUSH))) ||
                                  (cell.kind == kTwoStage && (c.flags & AR4J_VARIANT_TWO_STAGE_PUSH));
            if (!relevant || cell.bytes > sh.max_bytes / 2) continue;
            const size_t count = cell.bytes / 2;
            cudaGraph_t graph;
            cudaGraphExec_t exec;
            CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
            for (int i = 0; i < iters; ++i) {
                if (cell.kind == kFused) {
                    CHECK_AR(ar4j_all_reduce_residual_rmsnorm(ctx, AR4J_ALGO_PUSH, AR4J_DTYPE_BFLOAT16,
                                                              sh.graph_inputs[rank], residual, weight, sh.outputs[rank],
                                                              res_out, rows, hidden, 1e-5f, stream));
                } else {
                    const int algo = cell.kind == kPush ? AR4J_ALGO_PUSH : AR4J_ALGO_TWO_STAGE;
                    CHECK_AR(ar4j_all_reduce(ctx, algo, AR4J_DTYPE_BFLOAT16, sh.inputs[rank], sh.outputs[rank], count,
                                             stream));
                }
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
            const double us = median(samples);
            if (c.flags == 0) base[k] = us;
            CHECK_CUDA(cudaGraphExecDestroy(exec));
            CHECK_CUDA(cudaGraphDestroy(graph));
            if (rank == 0) {
                const char *kind = cell.kind == kPush ? "push" : cell.kind == kFused ? "fused" : "2stage";
                std::printf("%12s %8s %10zu %10.2f %10.2f %8.3f\n", c.name, kind, cell.bytes, us, base[k], us / base[k]);
                std::fflush(stdout);
            }
        }
        ar4j_failure_info info;
        CHECK_AR(ar4j_read_failure(ctx, &info));
        record(info.poisoned == 0 && info.timeout.timed_out == 0,
               "rank " + std::to_string(rank) + " variant timing " + c.name + " ran without failures (" + describe(info) + ")");
        sync.arrive_and_wait();
        CHECK_AR(ar4j_context_destroy(ctx));
    }
    CHECK_CUDA(cudaEventDestroy(start));
    CHECK_CUDA(cudaEventDestroy(stop));
    CHECK_CUDA(cudaFree(residual));
    CHECK_CUDA(cudaFree(res_out));
    CHECK_CUDA(cudaFree(weight));
}

}  // namespace native_test
