// ar4j_native_test, group 7: the kernels' exit paths and the signal block's limits (the
// registration table's exits: native_slots.cu).
//
// Some tests play a peer's part from the host: they store into a rank's signal block exactly what
// that peer's kernel would have stored (its barrier flags, the poison word its timeout writes), so
// that a rank can be shown a peer that passed its barriers and then gave up, deterministically, on
// one GPU. The signal layout comes from the library's own header (src/kernel_interface.cuh).

#include <cstddef>

#include "native_test_harness.h"
#include "kernel_interface.cuh"

namespace native_test {

namespace {

using ar4j::Signal;

char *signal_of(Shared &sh, int r) { return static_cast<char *>(sh.timeout_signals[r]); }

void poke(void *dev, const void *src, size_t bytes, cudaStream_t aux) {
    CHECK_CUDA(cudaMemcpyAsync(dev, src, bytes, cudaMemcpyDefault, aux));
    CHECK_CUDA(cudaStreamSynchronize(aux));
}

uint64_t peek_u64(const void *dev, cudaStream_t aux) {
    uint64_t v = 0;
    CHECK_CUDA(cudaMemcpyAsync(&v, dev, sizeof v, cudaMemcpyDefault, aux));
    CHECK_CUDA(cudaStreamSynchronize(aux));
    return v;
}

// Stores `value` into flags[0][s] of rank `at`'s signal for every peer s: as if every peer's block 0
// had reached its barrier number `value` (1: the start barrier; 2: the next one).
void forge_peer_flags(Shared &sh, int at, uint32_t value, cudaStream_t aux) {
    for (int s = 0; s < sh.ws; ++s) {
        if (s == at) continue;
        poke(signal_of(sh, at) + offsetof(Signal, flags) + static_cast<size_t>(s) * sizeof(uint32_t), &value,
             sizeof value, aux);
    }
}

// Waits (at most 5 s) until rank r's block 0 took the ticket of its first launch: its entry checks ran.
bool wait_entered(Shared &sh, int r, cudaStream_t aux) {
    const auto t0 = std::chrono::steady_clock::now();
    while (ms_since(t0) < 5000.0) {
        if (peek_u64(signal_of(sh, r) + offsetof(Signal, blocks), aux) >= 1) return true;
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    return false;
}

// Elements of the fp32 output that are neither NaN nor `expected`.
size_t count_wrong_f32(const void *dev, size_t count, float expected) {
    std::vector<float> h(count);
    CHECK_CUDA(cudaMemcpy(h.data(), dev, count * 4, cudaMemcpyDeviceToHost));
    size_t wrong = 0;
    for (float v : h) wrong += !std::isnan(v) && v != expected;
    return wrong;
}

float f32_of_bytes(uint8_t b) {
    uint32_t w = 0x01010101u * b;
    float f;
    std::memcpy(&f, &w, 4);
    return f;
}

}  // namespace

// A peer passed its barriers and gave up after them (its flags are already in the victim's signal
// block), poisoned the group, and its producer overwrote its input right after its all-reduce
// returned, while the victim (rank 0, one block of 32 threads over 64 MiB: tens of milliseconds)
// was still reading it. The victim's waits all pass at once on those flags: it must find the
// poison after its last barrier and leave NaN, not a sum of the overwritten input, and know of
// the poison (its next call AR4J_ERROR_POISONED). algo: ONE_STAGE or TWO_STAGE; fused: the fused
// 1-stage all-reduce + residual + RMSNorm (one block of 512 threads over 64 MiB).
void run_overwritten_input(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync, int algo, bool fused) {
    const char *name = fused ? "fused 1stage" : algo_name(algo);
    ar4j_context *ctx = fresh_group(sh, rank, sync, 10ull * 1000 * 1000 * 1000, 1, 32);
    const int dtype = AR4J_DTYPE_FLOAT32;
    const size_t hidden = 65536, rows = sh.max_bytes / (hidden * 4);
    const size_t count = fused ? rows * hidden : sh.max_bytes / 4, bytes = count * 4;
    const uint8_t mine_byte = rank == 0 ? 0x3c : 0x3d, overwritten_byte = 0x41;
    CHECK_CUDA(cudaMemset(sh.inputs[rank], mine_byte, bytes));
    void *residual = nullptr, *residual_out = nullptr, *weight = nullptr;
    if (rank == 0 && fused) {
        CHECK_CUDA(cudaMalloc(&residual, bytes));
        CHECK_CUDA(cudaMalloc(&residual_out, bytes));
        CHECK_CUDA(cudaMalloc(&weight, hidden * 4));
        CHECK_CUDA(cudaMemset(residual, 0, bytes));
        CHECK_CUDA(cudaMemset(weight, 0x3f, hidden * 4));
    }
    CHECK_CUDA(cudaDeviceSynchronize());  // no kernel runs yet: every rank is here
    sync.arrive_and_wait();
    cudaStream_t aux;
    CHECK_CUDA(cudaStreamCreateWithFlags(&aux, cudaStreamNonBlocking));
    void *out = sh.outputs[rank];
    int st = AR4J_SUCCESS;
    bool entered = false;
    if (rank == 0) {
        forge_peer_flags(sh, 0, 2, aux);  // every peer passed its start barrier and its next one
        CHECK_CUDA(cudaMemsetAsync(out, 0x11, bytes, stream));
        if (fused) CHECK_CUDA(cudaMemsetAsync(residual_out, 0x11, bytes, stream));
        st = fused ? ar4j_all_reduce_residual_rmsnorm(ctx, AR4J_ALGO_ONE_STAGE, dtype, sh.inputs[0], residual, weight,
                                                      out, residual_out, rows, hidden, 1e-5f, stream)
                   : ar4j_all_reduce(ctx, algo, dtype, sh.inputs[0], out, count, stream);
        entered = wait_entered(sh, 0, aux);
        std::this_thread::sleep_for(std::chrono::microseconds(500));  // its entry's poison read is done
        // What a peer's kernel that gave up writes before it returns (record_timeout).
        const uint64_t word = ar4j::make_poison(1, AR4J_POISON_TIMEOUT, 0, 0);
        poke(signal_of(sh, 0) + offsetof(Signal, poison), &word, sizeof word, aux);
    }
    sync.arrive_and_wait();  // the peers "returned" after poisoning: their producers run
    if (rank != 0) {
        CHECK_CUDA(cudaMemsetAsync(sh.inputs[rank], overwritten_byte, bytes, stream));
        CHECK_CUDA(cudaStreamSynchronize(stream));
    }
    sync.arrive_and_wait();  // every peer's input is overwritten
    if (rank == 0) {
        const bool running = cudaStreamQuery(stream) == cudaErrorNotReady;
        const cudaError_t e = cudaStreamSynchronize(stream);
        size_t not_nan = count_not_nan(out, bytes, dtype);
        if (fused) not_nan += count_not_nan(residual_out, bytes, dtype);
        float exact = f32_of_bytes(0x3c);
        for (int r = 1; r < sh.ws; ++r) exact += f32_of_bytes(0x3d);
        const size_t wrong = fused ? 0 : count_wrong_f32(out, count, exact);
        ar4j_failure_info info;
        CHECK_AR(ar4j_read_failure(ctx, &info));
        const int next = ar4j_all_reduce(ctx, AR4J_ALGO_ONE_STAGE, dtype, sh.inputs[0], out, 4096, stream);
        CHECK_CUDA(cudaStreamSynchronize(stream));
        char what[480];
        std::snprintf(what, sizeof what,
                      "rank 0 %s, peers passed their barriers, gave up and overwrote their inputs mid-launch: launch %s, "
                      "ended %s, %zu non-NaN (%zu neither NaN nor the exact sum), %s, next call %s",
                      name, ar4j_status_name(st), cudaGetErrorName(e), not_nan, wrong, describe(info).c_str(),
                      ar4j_status_name(next));
        say(what);
        if (!entered || !running) {
            skip(std::string(what) + ": inconclusive, the launch " + (entered ? "ended before" : "had not started when") +
                 " the inputs were overwritten");
        } else {
            record(st == AR4J_SUCCESS && e == cudaSuccess && not_nan == 0 && info.poisoned == 1 &&
                       info.origin_rank == 1 && info.reason == AR4J_POISON_TIMEOUT && next == AR4J_ERROR_POISONED,
                   what);
        }
        if (fused) {
            CHECK_CUDA(cudaFree(residual));
            CHECK_CUDA(cudaFree(residual_out));
            CHECK_CUDA(cudaFree(weight));
        }
    }
    sync.arrive_and_wait();
    CHECK_CUDA(cudaStreamDestroy(aux));
    CHECK_AR(ar4j_context_destroy(ctx));
}

// Every peer passed the start barrier and stopped (killed): rank 0's final barrier gives up after
// its 100 ms deadline. It must leave NaN (not the sum it read, as if nothing had happened to the
// inputs) and name the timeout at barrier 1.
void run_final_barrier_gives_up(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync) {
    ar4j_context *ctx = fresh_group(sh, rank, sync, 100ull * 1000 * 1000, 1, 32);
    const int dtype = AR4J_DTYPE_BFLOAT16;
    const size_t count = 21504, bytes = count * 2;
    if (rank == 0) {
        cudaStream_t aux;
        CHECK_CUDA(cudaStreamCreateWithFlags(&aux, cudaStreamNonBlocking));
        forge_peer_flags(sh, 0, 1, aux);  // the start barrier's flags only
        CHECK_CUDA(cudaMemsetAsync(sh.outputs[0], 0x11, bytes, stream));
        const auto t0 = std::chrono::steady_clock::now();
        const int st = ar4j_all_reduce(ctx, AR4J_ALGO_ONE_STAGE, dtype, sh.inputs[0], sh.outputs[0], count, stream);
        const cudaError_t e = cudaStreamSynchronize(stream);
        const double ms = ms_since(t0);
        const size_t not_nan = count_not_nan(sh.outputs[0], bytes, dtype);
        ar4j_failure_info info;
        CHECK_AR(ar4j_read_failure(ctx, &info));
        char what[400];
        std::snprintf(what, sizeof what,
                      "rank 0 1stage, peers stopped after the start barrier: launch %s, ended %s after %.1f ms, %zu non-NaN, "
                      "%s, own timeout at barrier %d",
                      ar4j_status_name(st), cudaGetErrorName(e), ms, not_nan, describe(info).c_str(), info.timeout.barrier);
        say(what);
        record(st == AR4J_SUCCESS && e == cudaSuccess && not_nan == 0 && info.timeout.timed_out == 1 &&
                   info.timeout.barrier == 1 && info.poisoned == 1 && info.origin_rank == 0 &&
                   info.reason == AR4J_POISON_TIMEOUT && ms < 5000.0,
               what);
        CHECK_CUDA(cudaStreamDestroy(aux));
    }
    sync.arrive_and_wait();
    CHECK_AR(ar4j_context_destroy(ctx));
}

// Rank `missing` never calls; a poison reaches rank 0's signal block alone (as when the poisoning
// host could reach no other rank). Rank 0's waiting kernel must pass it on: every other running
// rank ends within 2 s (deadline 10 s) naming the original reason, and even the rank that runs no
// kernel has it in its signal block.
void run_poison_passed_on(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync) {
    const int missing = sh.ws - 1, reason = 77;
    ar4j_context *ctx = fresh_group(sh, rank, sync, 10ull * 1000 * 1000 * 1000, 1, 32);
    const int dtype = AR4J_DTYPE_BFLOAT16;
    const size_t count = 21504, bytes = count * 2;
    CHECK_CUDA(cudaMemsetAsync(sh.outputs[rank], 0x11, bytes, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    sync.arrive_and_wait();
    const auto t0 = std::chrono::steady_clock::now();
    int st = AR4J_SUCCESS;
    if (rank != missing) st = ar4j_all_reduce(ctx, AR4J_ALGO_ONE_STAGE, dtype, sh.inputs[rank], sh.outputs[rank], count, stream);
    sync.arrive_and_wait();  // launched
    if (rank == 0) {
        cudaStream_t aux;
        CHECK_CUDA(cudaStreamCreateWithFlags(&aux, cudaStreamNonBlocking));
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        const uint64_t word = ar4j::make_poison(missing, reason, 0xff, 0xffff);
        poke(signal_of(sh, 0) + offsetof(Signal, host_poison), &word, sizeof word, aux);
        CHECK_CUDA(cudaStreamDestroy(aux));
    }
    if (rank != missing) {
        const cudaError_t e = cudaStreamSynchronize(stream);
        const double ms = ms_since(t0);
        const size_t not_nan = count_not_nan(sh.outputs[rank], bytes, dtype);
        ar4j_failure_info info;
        CHECK_AR(ar4j_read_failure(ctx, &info));
        char what[400];
        std::snprintf(what, sizeof what,
                      "rank %d poison in rank 0's signal block only: launch %s, ended %s after %.1f ms (deadline 10 s), %zu "
                      "non-NaN, %s",
                      rank, ar4j_status_name(st), cudaGetErrorName(e), ms, not_nan, describe(info).c_str());
        say(what);
        record(st == AR4J_SUCCESS && e == cudaSuccess && ms < 2000.0 && not_nan == 0 && info.poisoned == 1 &&
                   info.origin_rank == missing && info.reason == reason,
               what);
    }
    sync.arrive_and_wait();
    if (rank == missing) {
        ar4j_failure_info info;
        CHECK_AR(ar4j_read_failure(ctx, &info));
        const std::string what = "rank " + std::to_string(rank) +
                                 " (runs no kernel) has the poison passed on by rank 0's kernel: " + describe(info);
        say(what);
        record(info.poisoned == 1 && info.origin_rank == missing && info.reason == reason, what);
    }
    sync.arrive_and_wait();
    CHECK_AR(ar4j_context_destroy(ctx));
}

// Rank 0 never calls and cannot be reached: rank 1's copies to it fail (fault injection). Rank 1's
// watchdog poisons the group while the others' kernels wait for rank 0: ar4j_poison must try the
// ranks after the failing one (AR4J_ERROR_CUDA naming the copy's error), every running rank ends
// within 2 s (deadline 10 s) with rank 1's reason, and the running kernels pass it on to rank 0.
void run_poison_failing_copy(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync) {
    const int unreachable = 0, poisoner = 1, reason = 78;
    ar4j_context *ctx = fresh_group(sh, rank, sync, 10ull * 1000 * 1000 * 1000, 1, 32);
    const int dtype = AR4J_DTYPE_BFLOAT16;
    const size_t count = 21504, bytes = count * 2;
    CHECK_CUDA(cudaMemsetAsync(sh.outputs[rank], 0x11, bytes, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    sync.arrive_and_wait();
    const auto t0 = std::chrono::steady_clock::now();
    int st = AR4J_SUCCESS;
    if (rank != unreachable) {
        st = ar4j_all_reduce(ctx, AR4J_ALGO_ONE_STAGE, dtype, sh.inputs[rank], sh.outputs[rank], count, stream);
    }
    sync.arrive_and_wait();  // launched
    if (rank == poisoner) {
        CHECK_AR(ar4j_debug_inject_faults(ctx, AR4J_DEBUG_FAIL_PEER_COPIES, 1u << unreachable));
        int pst = -1, cuda_error = -1;
        std::thread watchdog([&]() {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            pst = ar4j_poison(ctx, reason);
            cuda_error = ar4j_last_cuda_error(ctx);
        });
        watchdog.join();
        CHECK_AR(ar4j_debug_inject_faults(ctx, 0, 0));
        const std::string what = "rank 1 ar4j_poison with the copies to rank 0 failing: " +
                                 std::string(ar4j_status_name(pst)) + ", CUDA error " + std::to_string(cuda_error);
        say(what);
        record(pst == AR4J_ERROR_CUDA && cuda_error == static_cast<int>(cudaErrorInvalidValue), what);
    }
    if (rank != unreachable) {
        const cudaError_t e = cudaStreamSynchronize(stream);
        const double ms = ms_since(t0);
        const size_t not_nan = count_not_nan(sh.outputs[rank], bytes, dtype);
        ar4j_failure_info info;
        CHECK_AR(ar4j_read_failure(ctx, &info));
        char what[400];
        std::snprintf(what, sizeof what,
                      "rank %d poisoned by rank 1 past a failing copy to rank 0: launch %s, ended %s after %.1f ms (deadline "
                      "10 s), %zu non-NaN, %s",
                      rank, ar4j_status_name(st), cudaGetErrorName(e), ms, not_nan, describe(info).c_str());
        say(what);
        record(st == AR4J_SUCCESS && e == cudaSuccess && ms < 2000.0 && not_nan == 0 && info.poisoned == 1 &&
                   info.origin_rank == poisoner && info.reason == reason,
               what);
    }
    sync.arrive_and_wait();
    if (rank == unreachable) {
        ar4j_failure_info info;
        CHECK_AR(ar4j_read_failure(ctx, &info));
        const std::string what = "rank 0 (its copies failed) has rank 1's poison from the peers' kernels: " + describe(info);
        say(what);
        record(info.poisoned == 1 && info.origin_rank == poisoner && info.reason == reason, what);
    }
    sync.arrive_and_wait();
    CHECK_AR(ar4j_context_destroy(ctx));
}

// Sizes that would wrap the signal block's size are refused; the published geometry word carries
// the library's ABI version and the fused kernels' block size (sh.signals: the main group's).
void run_limits(Shared &sh, int rank, std::barrier<> &sync) {
    const std::string who = "rank " + std::to_string(rank) + " limits: ";
    const size_t huge = SIZE_MAX & ~static_cast<size_t>(15);
    const size_t edge = ar4j::kMaxSignalMaxBytes & ~static_cast<size_t>(15);
    size_t out = 1, at_edge = 0;
    const int huge_st = ar4j_signal_size_checked(huge, &out);
    const int edge_st = ar4j_signal_size_checked(edge, &at_edge);
    record(ar4j_signal_size(huge) == 0 && huge_st == AR4J_ERROR_TOO_LARGE && out == 0,
           who + "ar4j_signal_size(SIZE_MAX & ~15) = " + std::to_string(ar4j_signal_size(huge)) + ", checked " +
               ar4j_status_name(huge_st));
    record(edge_st == AR4J_SUCCESS && at_edge >= edge && ar4j_signal_size(edge) == at_edge,
           who + "the largest accepted max_bytes " + std::to_string(edge) + " gives " + std::to_string(at_edge) + " (" +
               ar4j_status_name(edge_st) + ")");
    ar4j_context *bad = nullptr;
    const int create = ar4j_context_create(&bad, sh.signals.data(), rank, sh.ws, huge, 4, 1000);
    record(create == AR4J_ERROR_TOO_LARGE && bad == nullptr,
           who + "ar4j_context_create with max_bytes SIZE_MAX & ~15: " + ar4j_status_name(create));
    cudaStream_t aux;
    CHECK_CUDA(cudaStreamCreateWithFlags(&aux, cudaStreamNonBlocking));
    const uint64_t g = peek_u64(static_cast<char *>(sh.signals[rank]) + offsetof(Signal, geometry), aux);
    CHECK_CUDA(cudaStreamDestroy(aux));
    char what[300];
    std::snprintf(what, sizeof what,
                  "published geometry 0x%016" PRIx64 ": tag 0x%02x, ABI %d (library %d), push %d x %d, norm block %d",
                  g, static_cast<unsigned>(g >> 56), static_cast<int>((g >> 40) & 0xffff), ar4j_abi_version(),
                  static_cast<int>((g >> 16) & 0xff), static_cast<int>(((g >> 8) & 0xff) * 32),
                  static_cast<int>((g & 0xff) * 32));
    record((g >> 56) == 0xA5 && static_cast<int>((g >> 40) & 0xffff) == ar4j_abi_version() &&
               static_cast<int>((g >> 16) & 0xff) == ar4j::kPushBlocks &&
               static_cast<int>(((g >> 8) & 0xff) * 32) == ar4j::kPushThreads &&
               static_cast<int>((g & 0xff) * 32) == ar4j::kNormThreads,
           who + what);
    sync.arrive_and_wait();
}

}  // namespace native_test
