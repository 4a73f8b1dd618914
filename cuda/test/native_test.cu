// ar4j native test: drives libar4j_custom_ar's C ABI directly, one thread per GPU in one
// process (peer pointers), on 2, 4, 6 or 8 GPUs of one host.
//
//   ar4j_native_test [--gpus N] [--quick] [--no-timing] [--timing-only] [--exits-only] [--seed S]
//                    [--blocks B --threads T] [--ranks N] [--no-pdl-timing] [--call-overhead]
//                    [--variants MASK] [--variant-matrix] [--variant-matrix-only] [--no-variant-timing]
//
// --variants MASK: every context the program makes gets ar4j_set_variants(MASK) (AR4J_VARIANT_*
// flags, decimal or 0x hex; 0x4000001f = all of them, the early trigger forced on with ranks sharing
// a GPU) before its first call: every group below then checks the variant kernels, the containment
// tests of groups 4, 6 and 7 included. --variant-matrix adds group 8 (the variants' API, their
// correctness matrix one by one and their timing against the default); --variant-matrix-only runs
// group 8 alone.
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
// 7. Exit paths (also alone: --exits-only): peers that passed their barriers, gave up and
//    overwrote their inputs while rank 0 still read them (1-stage, 2-stage, fused 1-stage: NaN,
//    never the overwritten sum); a final barrier that gives up (NaN); a poison in one rank's signal
//    block passed on by its kernel to every rank; ar4j_poison past a failing copy; a captured call
//    whose launch fails records nothing; ar4j_unregister_buffer refused while a graph names the
//    buffer; a graph replayed before its inputs were registered (poison, not a fault: kept last);
//    signal sizes that would wrap refused; the geometry word's ABI version and norm block.
// 8. Kernel variants (--variant-matrix, native_variants.cu): ar4j_set_variants' checks and the ranks'
//    agreement; per variant (and all together), PDL off and on, the quick correctness matrix, the
//    graph test and the PDL chain; the timing of each variant against the default (CUDA graphs of 50,
//    medians), also with ranks sharing a GPU.
// Exit code 0 only if every check passed; the last line is "N passed, N failed".
//
// The harness is native_test_harness.h; the groups are in native_correctness.cu,
// native_containment.cu, native_timing.cu, native_exits.cu and native_slots.cu.

#include "native_test_harness.h"

using namespace native_test;

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
        else if (a == "--exits-only") sh.exits_only = true;
        else if (a == "--no-pdl-timing") sh.pdl_timing = false;
        else if (a == "--seed" && i + 1 < argc) sh.seed = std::strtoull(argv[++i], nullptr, 10);
        else if (a == "--call-overhead") return run_call_overhead();
        else if (a == "--blocks" && i + 1 < argc) sh.blocks = std::atoi(argv[++i]);
        else if (a == "--threads" && i + 1 < argc) sh.threads = std::atoi(argv[++i]);
        else if (a == "--variants" && i + 1 < argc) sh.variants = static_cast<uint32_t>(std::strtoul(argv[++i], nullptr, 0));
        else if (a == "--variant-matrix") sh.variant_matrix = true;
        else if (a == "--variant-matrix-only") sh.variant_matrix = sh.variant_matrix_only = true;
        else if (a == "--no-variant-timing") sh.variant_timing = false;
        else {
            std::fprintf(stderr,
                         "usage: %s [--gpus N] [--quick] [--no-timing] [--timing-only] [--exits-only] [--seed S] [--blocks B --threads T] [--ranks N] [--no-pdl-timing] [--call-overhead] [--variants MASK] [--variant-matrix] [--variant-matrix-only] [--no-variant-timing]\n",
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
    if (sh.exits_only) sh.timing_enabled = sh.pdl_timing = false;
    if (ranks > gpus) {
        sh.timing_enabled = false;
        if (sh.blocks == 0) sh.blocks = 16;
    }
    sh.max_bytes = 64ull << 20;  // 64 MiB: correctness up to 8 MiB, timing up to 64 MiB
    std::printf("ar4j native test: %d ranks on %d GPUs, seed %" PRIu64 ", abi %d, variants 0x%x%s\n", ranks, gpus,
                sh.seed, ar4j_abi_version(), sh.variants, sh.variant_matrix ? ", variant matrix" : "");
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
    sh.extra.resize(ranks);
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
            if (sh.variants != 0) CHECK_AR(ar4j_set_variants(ctx, sh.variants));
            sync.arrive_and_wait();  // every context exists (push buffers filled) before anyone launches
            if (sh.variant_matrix_only) {
                run_variant_api(sh, rank, stream, sync);
                run_variant_matrix(sh, rank, stream, sync);
                if (sh.variant_timing) run_variant_timing(sh, rank, stream, sync);
                CHECK_AR(ar4j_context_destroy(ctx));
                CHECK_CUDA(cudaStreamDestroy(stream));
                return;
            }
            if (!sh.timing_only && !sh.exits_only) {
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
            if (sh.variant_matrix && !sh.timing_only && !sh.exits_only) {
                run_variant_api(sh, rank, stream, sync);
                run_variant_matrix(sh, rank, stream, sync);
            }
            if (sh.variant_matrix && sh.variant_timing && !sh.exits_only) run_variant_timing(sh, rank, stream, sync);
            if (!sh.timing_only && !sh.exits_only) {
                run_timeout(sh, rank, stream, sync, AR4J_ALGO_ONE_STAGE);
                run_timeout(sh, rank, stream, sync, AR4J_ALGO_TWO_STAGE);
                run_timeout(sh, rank, stream, sync, AR4J_ALGO_PUSH);
                run_wrap(sh, rank, stream, sync);
                run_geometry(sh, rank, stream, sync);
                run_host_poison(sh, rank, stream, sync);
                run_poison_graph(sh, rank, stream, sync);
                run_concurrent(sh, rank, stream, sync, AR4J_ALGO_PUSH);
                run_concurrent(sh, rank, stream, sync, AR4J_ALGO_ONE_STAGE);
            }
            if (!sh.timing_only) {
                run_limits(sh, rank, sync);
                run_overwritten_input(sh, rank, stream, sync, AR4J_ALGO_ONE_STAGE, false);
                run_overwritten_input(sh, rank, stream, sync, AR4J_ALGO_TWO_STAGE, false);
                run_overwritten_input(sh, rank, stream, sync, AR4J_ALGO_ONE_STAGE, true);
                run_final_barrier_gives_up(sh, rank, stream, sync);
                run_poison_passed_on(sh, rank, stream, sync);
                run_poison_failing_copy(sh, rank, stream, sync);
                run_failed_launch_records_nothing(sh, rank, stream, sync);
                run_unregister(sh, rank, stream, sync);
                run_replay_before_registration(sh, rank, stream, sync);  // last: on a fault the process ends
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
