// ar4j graph timing: the same measurement against any libar4j_custom_ar of ABI 0.2 or later
// (it calls only entry points that 0.2 has), so that two builds can be compared in one run.
// N ranks share GPU 0 (one thread each, as the native test's --gpus 1 --ranks N), 1-/2-stage
// grid 16 x 512; bf16, out-of-place, registered input; CUDA graph of 50 all-reduces, median of
// 9 replays, microseconds per all-reduce as rank 0 sees it. Sharing a GPU distorts absolute times.
//
//   ar4j_graph_timing [--ranks N] [--label TEXT]
//
// Not built by the Makefile; next to a built library (as the device runs of 2026-12-01 did):
//   nvcc -O2 -std=c++20 -Iinclude -o DIR/ar4j_graph_timing test/graph_timing.cu -LDIR -lar4j_custom_ar \
//        -Xlinker -rpath -Xlinker '$ORIGIN' -lcudart -lpthread

#include <cuda_runtime.h>

#include <algorithm>
#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "ar4j/custom_all_reduce.h"

#define CK(call)                                                                                  \
    do {                                                                                          \
        long long s_ = (long long)(call);                                                         \
        if (s_ != 0) {                                                                            \
            std::fprintf(stderr, "%s:%d: %s failed: %lld\n", __FILE__, __LINE__, #call, s_);      \
            std::fflush(stderr);                                                                  \
            std::_Exit(2);                                                                        \
        }                                                                                         \
    } while (0)

int main(int argc, char **argv) {
    int ranks = 2;
    std::string label = "this build";
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--ranks" && i + 1 < argc) ranks = std::atoi(argv[++i]);
        else if (a == "--label" && i + 1 < argc) label = argv[++i];
    }
    const size_t max_bytes = 1 << 20;
    std::vector<void *> signals(ranks), inputs(ranks), outputs(ranks);
    CK(cudaSetDevice(0));
    for (int r = 0; r < ranks; ++r) {
        CK(cudaMalloc(&signals[r], ar4j_signal_size(max_bytes)));
        CK(cudaMemset(signals[r], 0, ar4j_signal_size(max_bytes)));
        CK(cudaMalloc(&inputs[r], max_bytes));
        CK(cudaMemset(inputs[r], 0, max_bytes));
        CK(cudaMalloc(&outputs[r], max_bytes));
    }
    CK(cudaDeviceSynchronize());
    const size_t sizes[] = {1024, 16384, 43008, 262144};
    const int algos[] = {AR4J_ALGO_PUSH, AR4J_ALGO_ONE_STAGE, AR4J_ALGO_TWO_STAGE};
    const char *names[] = {"", "1stage", "2stage", "push"};
    double result[4][4] = {};
    std::barrier<> sync(ranks);
    std::vector<std::thread> threads;
    for (int rank = 0; rank < ranks; ++rank) {
        threads.emplace_back([&, rank]() {
            CK(cudaSetDevice(0));
            cudaStream_t stream;
            CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
            ar4j_context *ctx = nullptr;
            CK(ar4j_context_create(&ctx, signals.data(), rank, ranks, max_bytes, 8, 10ull * 1000 * 1000 * 1000));
            CK(ar4j_register_buffer(ctx, inputs.data(), max_bytes));
            CK(ar4j_set_launch_config(ctx, 16, 512));
            sync.arrive_and_wait();
            cudaEvent_t start, stop;
            CK(cudaEventCreate(&start));
            CK(cudaEventCreate(&stop));
            for (int si = 0; si < 4; ++si) {
                for (int ai = 0; ai < 3; ++ai) {
                    cudaGraph_t graph;
                    cudaGraphExec_t exec;
                    CK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
                    for (int i = 0; i < 50; ++i) {
                        CK(ar4j_all_reduce(ctx, algos[ai], AR4J_DTYPE_BFLOAT16, inputs[rank], outputs[rank], sizes[si] / 2, stream));
                    }
                    CK(cudaStreamEndCapture(stream, &graph));
                    CK(cudaGraphInstantiate(&exec, graph, 0));
                    for (int w = 0; w < 3; ++w) CK(cudaGraphLaunch(exec, stream));
                    CK(cudaStreamSynchronize(stream));
                    std::vector<double> samples;
                    for (int rep = 0; rep < 9; ++rep) {
                        sync.arrive_and_wait();
                        CK(cudaEventRecord(start, stream));
                        CK(cudaGraphLaunch(exec, stream));
                        CK(cudaEventRecord(stop, stream));
                        CK(cudaEventSynchronize(stop));
                        float ms = 0;
                        CK(cudaEventElapsedTime(&ms, start, stop));
                        samples.push_back(ms * 1000.0 / 50);
                    }
                    std::sort(samples.begin(), samples.end());
                    if (rank == 0) result[si][ai] = samples[samples.size() / 2];
                    CK(cudaGraphExecDestroy(exec));
                    CK(cudaGraphDestroy(graph));
                }
            }
            sync.arrive_and_wait();
            CK(ar4j_context_destroy(ctx));
        });
    }
    for (auto &t : threads) t.join();
    std::printf("# graph timing (%s, abi %d): %d ranks sharing GPU 0, bf16, graph of 50, median of 9, us per all-reduce\n",
                label.c_str(), ar4j_abi_version(), ranks);
    std::printf("%10s %10s %10s %10s\n", "bytes", names[3], names[1], names[2]);
    for (int si = 0; si < 4; ++si) {
        std::printf("%10zu %10.2f %10.2f %10.2f\n", sizes[si], result[si][0], result[si][1], result[si][2]);
    }
    return 0;
}
