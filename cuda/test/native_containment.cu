// ar4j_native_test, groups 4 and 6: the timeout (a rank that never calls), the push generation's
// wrap past 2^32, launch geometry mismatch, ar4j_poison from a watchdog thread, a rank that stops
// inside a graph, and one context on two streams at once.

#include "native_test_harness.h"

namespace native_test {

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
        int st = ar4j_all_reduce(ctx, AR4J_ALGO_PUSH, dtype, sh.graph_inputs[rank], sh.outputs[rank], count, stream);
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
    const int st2 = ar4j_all_reduce(ctx, AR4J_ALGO_PUSH, AR4J_DTYPE_BFLOAT16, sh.inputs[rank], sh.outputs[rank], 21504, stream);
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
        CHECK_AR(ar4j_all_reduce(ctx, AR4J_ALGO_PUSH, dtype, sh.graph_inputs[rank], out + (1 << 20), count, stream));
        sync.arrive_and_wait();  // launched
        cudaError_t e = cudaStreamSynchronize(stream);
        const double ms = ms_since(t0);
        ar4j_failure_info info;
        CHECK_AR(ar4j_read_failure(ctx, &info));
        const int next = ar4j_all_reduce(ctx, AR4J_ALGO_PUSH, dtype, sh.graph_inputs[rank], out, count, stream);
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
        const int next = ar4j_all_reduce(ctx, AR4J_ALGO_PUSH, dtype, sh.graph_inputs[rank], out, count, stream);
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
                          {AR4J_ALGO_PUSH, 2 << 20, 21504, 2 << 20}};
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
        const int next = ar4j_all_reduce(ctx, AR4J_ALGO_PUSH, dtype, in, out, 21504, stream);
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
    char *in = static_cast<char *>(algo == AR4J_ALGO_PUSH ? sh.graph_inputs[rank] : sh.inputs[rank]);
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

}  // namespace native_test
