// ar4j_native_test, group 5: CUDA-graph timing per algorithm and size, PDL off against on, and
// the host cost of a call into the library (--call-overhead).

#include "native_test_harness.h"

namespace native_test {

// PDL off and on: CUDA graph of `iters` all-reduces, median of `reps`, per algorithm and size.
// Runs also with ranks sharing a GPU (then the absolute times are distorted by the sharing).
void run_pdl_timing(Shared &sh, int rank, ar4j_context *ctx, cudaStream_t stream, std::barrier<> &sync) {
    const int iters = 50, reps = 9;
    const size_t sizes[] = {1024, 16384, 43008, 262144};
    const int algos[] = {AR4J_ALGO_PUSH, AR4J_ALGO_ONE_STAGE, AR4J_ALGO_TWO_STAGE};
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
            const int algo = a == 0 ? AR4J_ALGO_ONE_STAGE : a == 1 ? AR4J_ALGO_TWO_STAGE : AR4J_ALGO_PUSH;
            if (algo == AR4J_ALGO_PUSH && bytes > AR4J_PUSH_MAX_BYTES) continue;
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

}  // namespace native_test
