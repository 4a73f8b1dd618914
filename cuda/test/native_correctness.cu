// ar4j_native_test, groups 1-3b: correctness against a host reference (1-stage, 2-stage, push;
// every dtype; out of place and in place), the push sentinels, graph capture with recorded
// inputs, validation of bad arguments, and PDL's dependent calls.

#include "native_test_harness.h"

namespace native_test {

namespace {

std::vector<size_t> correctness_counts(bool quick) {
    std::vector<size_t> counts;
    for (size_t n = 8; n <= 2097152; n *= (quick ? 8 : 2)) {
        counts.push_back(n);
        counts.push_back(n + 376);
    }
    return counts;
}

}  // namespace

void run_correctness(Shared &sh, int rank, ar4j_context *ctx, cudaStream_t stream, bool quick, const char *tag) {
    const int ws = sh.ws;
    std::vector<float> mine, other, ref;
    std::vector<uint8_t> in_bytes, ref_bytes, got;
    const int dtypes[] = {AR4J_DTYPE_FLOAT32, AR4J_DTYPE_FLOAT16, AR4J_DTYPE_BFLOAT16};
    const int algos[] = {AR4J_ALGO_ONE_STAGE, AR4J_ALGO_TWO_STAGE, AR4J_ALGO_PUSH};
    uint64_t case_id = 0;
    for (int dtype : dtypes) {
        for (int algo : algos) {
            for (int in_place = 0; in_place < 2; ++in_place) {
                for (size_t count : correctness_counts(quick)) {
                    ++case_id;
                    const size_t bytes = count * esize(dtype);
                    if ((bytes % 16) != 0 || bytes > sh.max_bytes) continue;
                    if (algo == AR4J_ALGO_PUSH && bytes > AR4J_PUSH_MAX_BYTES) continue;
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
                    void *in = algo == AR4J_ALGO_PUSH && !in_place ? sh.graph_inputs[rank] : sh.inputs[rank];
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
        int st = ar4j_all_reduce(ctx, AR4J_ALGO_PUSH, dtype, sh.graph_inputs[rank], sh.outputs[rank], count, stream);
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
                          {6 << 20, 43008 / 2, AR4J_ALGO_PUSH, false, 3 << 20}};
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
    for (int algo : {AR4J_ALGO_PUSH, AR4J_ALGO_ONE_STAGE, AR4J_ALGO_TWO_STAGE}) {
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

}  // namespace native_test
