// ar4j_native_test, group 7 (continued): the registration table's exits: a captured call whose
// launch fails records nothing, ar4j_unregister_buffer against live graphs, and a graph replayed
// before its inputs were registered.

#include "native_test_harness.h"

namespace native_test {

// A call inside a capture whose launch fails (fault injection) records no graph input and keeps
// no slot; on several GPUs, a call from the wrong device records nothing either.
void run_failed_launch_records_nothing(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync) {
    ar4j_context *ctx = fresh_group(sh, rank, sync, 10ull * 1000 * 1000 * 1000);
    const int dtype = AR4J_DTYPE_BFLOAT16;
    const size_t count = 21504;
    char *gin = static_cast<char *>(sh.graph_inputs[rank]);
    int32_t slots_before = -1, slots_after = -1, pending = -1;
    CHECK_AR(ar4j_registered_count(ctx, &slots_before));
    CHECK_AR(ar4j_debug_inject_faults(ctx, AR4J_DEBUG_FAIL_LAUNCHES, 0));
    cudaGraph_t graph;
    CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    const int st = ar4j_all_reduce(ctx, AR4J_ALGO_ONE_STAGE, dtype, gin, sh.outputs[rank], count, stream);
    const int cuda_error = ar4j_last_cuda_error(ctx);
    CHECK_AR(ar4j_graph_pending_count(ctx, &pending));
    CHECK_AR(ar4j_registered_count(ctx, &slots_after));
    CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
    CHECK_CUDA(cudaGraphDestroy(graph));
    CHECK_AR(ar4j_debug_inject_faults(ctx, 0, 0));
    char what[300];
    std::snprintf(what, sizeof what,
                  "rank %d a captured call whose launch fails: %s (CUDA error %d), %d pending graph inputs, slots %d -> %d",
                  rank, ar4j_status_name(st), cuda_error, pending, slots_before, slots_after);
    say(what);
    record(st == AR4J_ERROR_CUDA && cuda_error == static_cast<int>(cudaErrorInvalidConfiguration) && pending == 0 &&
               slots_after == slots_before,
           what);
    if (sh.gpus > 1) {
        CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
        CHECK_CUDA(cudaSetDevice((sh.device_of(rank) + 1) % sh.gpus));
        const int wrong = ar4j_all_reduce(ctx, AR4J_ALGO_ONE_STAGE, dtype, gin, sh.outputs[rank], count, stream);
        CHECK_CUDA(cudaSetDevice(sh.device_of(rank)));
        CHECK_AR(ar4j_graph_pending_count(ctx, &pending));
        CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
        CHECK_CUDA(cudaGraphDestroy(graph));
        record(wrong == AR4J_ERROR_WRONG_DEVICE && pending == 0,
               "rank " + std::to_string(rank) + " a captured call from the wrong device: " + ar4j_status_name(wrong) +
                   ", " + std::to_string(pending) + " pending graph inputs");
    } else {
        skip("rank " + std::to_string(rank) + " a captured call from the wrong device: one GPU, there is no other device");
    }
    sync.arrive_and_wait();
    CHECK_AR(ar4j_context_destroy(ctx));
}

namespace {

// bf16 inputs of every rank for `seed`, this rank's written to dev; the exact sum's bytes into ref.
void stage_input(Shared &sh, int rank, uint64_t seed, size_t count, void *dev, std::vector<uint8_t> &ref) {
    std::vector<float> mine, other, sum(count, 0.0f);
    std::vector<uint8_t> bytes;
    make_input(seed, rank, count, mine);
    for (int r = 0; r < sh.ws; ++r) {
        make_input(seed, r, count, other);
        for (size_t i = 0; i < count; ++i) sum[i] += other[i];
    }
    encode(AR4J_DTYPE_BFLOAT16, mine, bytes);
    encode(AR4J_DTYPE_BFLOAT16, sum, ref);
    CHECK_CUDA(cudaMemcpy(dev, bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
}

size_t wrong_bytes(const void *dev, const std::vector<uint8_t> &ref) {
    std::vector<uint8_t> got(ref.size());
    CHECK_CUDA(cudaMemcpy(got.data(), dev, got.size(), cudaMemcpyDeviceToHost));
    size_t wrong = 0;
    for (size_t b = 0; b < got.size(); ++b) wrong += got[b] != ref[b];
    return wrong;
}

}  // namespace

// ar4j_unregister_buffer against a live graph: refused (AR4J_ERROR_SLOT_IN_USE) while the graph or
// its executable exists, accepted once both are destroyed (CUDA runs the hold's destructor shortly
// after), and the freed slot is reused by the next registration.
void run_unregister(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync) {
    ar4j_context *ctx = fresh_group(sh, rank, sync, 10ull * 1000 * 1000 * 1000);
    const size_t bytes = 1u << 20, count = 21504;
    CHECK_CUDA(cudaMalloc(&sh.extra[rank], bytes));
    sync.arrive_and_wait();  // every rank's buffer exists
    const std::string who = "rank " + std::to_string(rank) + " unregister: ";
    int32_t slots0 = -1, slots1 = -1, slots2 = -1;
    CHECK_AR(ar4j_register_buffer(ctx, sh.extra.data(), bytes));
    CHECK_AR(ar4j_registered_count(ctx, &slots0));
    std::vector<uint8_t> ref;
    stage_input(sh, rank, sh.seed + 5151, count, sh.extra[rank], ref);
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    CHECK_AR(ar4j_all_reduce(ctx, AR4J_ALGO_ONE_STAGE, AR4J_DTYPE_BFLOAT16, sh.extra[rank], sh.outputs[rank], count, stream));
    CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
    CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    const int in_use = ar4j_unregister_buffer(ctx, sh.extra[rank]);
    record(in_use == AR4J_ERROR_SLOT_IN_USE && std::strcmp(ar4j_status_name(in_use), "AR4J_ERROR_SLOT_IN_USE") == 0,
           who + "while a graph names the buffer: " + ar4j_status_name(in_use) + " (" + ar4j_status_message(in_use) + ")");
    sync.arrive_and_wait();  // everyone staged its input
    CHECK_CUDA(cudaGraphLaunch(exec, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    const size_t replay_wrong = wrong_bytes(sh.outputs[rank], ref);
    record(replay_wrong == 0, who + "the graph still replays exactly after the refusal (" + std::to_string(replay_wrong) +
                                  " wrong bytes)");
    CHECK_CUDA(cudaGraphExecDestroy(exec));
    const int exec_gone = ar4j_unregister_buffer(ctx, sh.extra[rank]);
    record(exec_gone == AR4J_ERROR_SLOT_IN_USE, who + "with the executable destroyed but the graph alive: " +
                                                    ar4j_status_name(exec_gone));
    CHECK_CUDA(cudaGraphDestroy(graph));
    const auto t0 = std::chrono::steady_clock::now();
    int freed = AR4J_ERROR_SLOT_IN_USE;
    while (freed == AR4J_ERROR_SLOT_IN_USE && ms_since(t0) < 2000.0) {
        freed = ar4j_unregister_buffer(ctx, sh.extra[rank]);
        if (freed == AR4J_ERROR_SLOT_IN_USE) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const double ms = ms_since(t0);
    CHECK_AR(ar4j_registered_count(ctx, &slots1));
    const int again = ar4j_unregister_buffer(ctx, sh.extra[rank]);
    const int eager = ar4j_all_reduce(ctx, AR4J_ALGO_ONE_STAGE, AR4J_DTYPE_BFLOAT16, sh.extra[rank], sh.outputs[rank], count,
                                      stream);
    char what[300];
    std::snprintf(what, sizeof what,
                  "graph and executable destroyed: %s after %.1f ms, slots %d -> %d, again %s, a call on it %s", ar4j_status_name(freed),
                  ms, slots0, slots1, ar4j_status_name(again), ar4j_status_name(eager));
    record(freed == AR4J_SUCCESS && slots1 == slots0 - 1 && again == AR4J_ERROR_NOT_REGISTERED &&
               eager == AR4J_ERROR_NOT_REGISTERED,
           who + what);
    sync.arrive_and_wait();  // every rank unregistered
    CHECK_AR(ar4j_register_buffer(ctx, sh.extra.data(), bytes));  // takes the freed slot
    CHECK_AR(ar4j_registered_count(ctx, &slots2));
    stage_input(sh, rank, sh.seed + 5252, count, sh.extra[rank], ref);
    sync.arrive_and_wait();
    const int st = ar4j_all_reduce(ctx, AR4J_ALGO_ONE_STAGE, AR4J_DTYPE_BFLOAT16, sh.extra[rank], sh.outputs[rank], count,
                                   stream);
    CHECK_CUDA(cudaStreamSynchronize(stream));
    const size_t wrong = wrong_bytes(sh.outputs[rank], ref);
    record(st == AR4J_SUCCESS && wrong == 0 && slots2 == slots0,
           who + "registered again into the freed slot (slots " + std::to_string(slots2) + "): " + ar4j_status_name(st) +
               ", " + std::to_string(wrong) + " wrong bytes");
    sync.arrive_and_wait();
    CHECK_AR(ar4j_unregister_buffer(ctx, sh.extra[rank]));
    CHECK_AR(ar4j_context_destroy(ctx));
    CHECK_CUDA(cudaFree(sh.extra[rank]));
    sh.extra[rank] = nullptr;
}

// A graph with 1-stage and 2-stage calls on unregistered inputs, replayed before
// ar4j_register_graph_inputs (the first input in a slot an unregistered buffer gave back): the
// kernels find NULL pointers and poison the group, the replay ends without a CUDA error, with NaN,
// naming AR4J_POISON_UNREGISTERED. (A fault here would be sticky and end the process: kept last.)
void run_replay_before_registration(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync) {
    ar4j_context *ctx = fresh_group(sh, rank, sync, 10ull * 1000 * 1000 * 1000);
    const size_t bytes = 1u << 20;
    CHECK_CUDA(cudaMalloc(&sh.extra[rank], bytes));
    sync.arrive_and_wait();
    CHECK_AR(ar4j_register_buffer(ctx, sh.extra.data(), bytes));
    CHECK_AR(ar4j_unregister_buffer(ctx, sh.extra[rank]));  // its slot (pointers to real buffers) is given back
    const int dtype = AR4J_DTYPE_BFLOAT16;
    const size_t count = 21504, two_count = 131072 + 376;
    char *gin = static_cast<char *>(sh.graph_inputs[rank]);
    char *out = static_cast<char *>(sh.outputs[rank]);
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    CHECK_AR(ar4j_all_reduce(ctx, AR4J_ALGO_ONE_STAGE, dtype, gin, out, count, stream));
    CHECK_AR(ar4j_all_reduce(ctx, AR4J_ALGO_TWO_STAGE, dtype, gin + (1 << 20), out + (1 << 20), two_count, stream));
    CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
    CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    int32_t pending = -1;
    CHECK_AR(ar4j_graph_pending_count(ctx, &pending));
    CHECK_CUDA(cudaMemsetAsync(out, 0x11, 2u << 20, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    sync.arrive_and_wait();
    const auto t0 = std::chrono::steady_clock::now();
    CHECK_CUDA(cudaGraphLaunch(exec, stream));  // before ar4j_register_graph_inputs
    const cudaError_t e = cudaStreamSynchronize(stream);
    const double ms = ms_since(t0);
    const size_t not_nan = count_not_nan(out, count * 2, dtype) + count_not_nan(out + (1 << 20), two_count * 2, dtype);
    ar4j_failure_info info;
    CHECK_AR(ar4j_read_failure(ctx, &info));
    char what[400];
    std::snprintf(what, sizeof what,
                  "rank %d graph replayed before its %d inputs were registered: ended %s after %.1f ms, %zu non-NaN, %s", rank,
                  pending, cudaGetErrorName(e), ms, not_nan, describe(info).c_str());
    say(what);
    record(pending == 2 && e == cudaSuccess && not_nan == 0 && info.poisoned == 1 &&
               info.reason == AR4J_POISON_UNREGISTERED && ms < 5000.0,
           what);
    sync.arrive_and_wait();
    CHECK_CUDA(cudaGraphExecDestroy(exec));
    CHECK_CUDA(cudaGraphDestroy(graph));
    CHECK_AR(ar4j_context_destroy(ctx));
    CHECK_CUDA(cudaFree(sh.extra[rank]));
    sh.extra[rank] = nullptr;
}

}  // namespace native_test
