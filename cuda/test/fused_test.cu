// ar4j fused all-reduce + residual add + RMSNorm test: drives ar4j_all_reduce_residual_rmsnorm
// through the C ABI, one thread per rank, ranks sharing GPUs (rank r on GPU r % gpus).
//
//   ar4j_fused_test [--ranks N] [--gpus G] [--quick] [--no-timing] [--seed S] [--variants MASK]
//
// --variants MASK: every context gets ar4j_set_variants(MASK) (AR4J_VARIANT_* flags, decimal or
// 0x hex) before its first call, so that the whole test (matrix, graph inputs, timing, poison) runs
// the variant kernels (e.g. 4: the fused push with a grid-wide push phase; 6: that and clear-on-read).
//
// It sets CUDA_DEVICE_MAX_CONNECTIONS=32 and CUDA_MODULE_LOADING=EAGER for itself (unless set): see
// main() for why ranks sharing one GPU need them.
//
// 1. Correctness, for PUSH and ONE_STAGE: fp32/fp16/bf16 x hidden {56, 64, 4096, 7168,
//    16384} x rows {1, 3, 17, 40, 150} (where rows * hidden * dtype size fits the push limit, for
//    ONE_STAGE 2 MiB) x out of place / in place (push: out == in, residual_out == residual;
//    ONE_STAGE: residual_out == residual, the input in a registered buffer at a 4 KiB offset) x
//    eager / CUDA graph x PDL off / on. Fresh random inputs, outputs poisoned with 0xff bytes (NaN)
//    before each run. Compared with the unfused reference on the same GPU (ar4j_all_reduce with the
//    same algorithm, then ar4j_residual_rmsnorm): residual_out and out bitwise equal; the reference
//    itself against a host computation (double norm) within 1e-5 (fp32), 2e-3 (fp16), 1.6e-2 (bf16)
//    relative to max(1, |ref|); every rank's bits equal rank 0's.
// 2. ONE_STAGE with an unregistered input captured into a graph (a recorded graph input, shared
//    with ar4j_register_graph_inputs), replayed twice with fresh data: as 1.
// 3. Validation: each refusal returns its named status (ONE_STAGE: an output over the input,
//    an unregistered input, past the registration; TWO_STAGE: AR4J_ERROR_NOT_FUSED).
// 4. Poison: rank 0 poisons the group; its calls are refused, every other rank's push kernel writes
//    NaN over all of out and residual_out, and a graph of a push and a ONE_STAGE fused call captured
//    before the poison writes NaN over all four outputs on every rank when replayed after it.
// 5. Timing: a CUDA graph of 122 fused calls against 122 x (all-reduce + ar4j_residual_rmsnorm),
//    median of 9 replays, PDL off and on: push on 3 x 7168 bf16, ONE_STAGE on 64 x 7168 bf16.
// Exit code 0 only if every check passed; the last line is "N passed, N failed".

#include "fused_test_harness.h"

namespace {

using namespace fused_test;

constexpr size_t kBufBytes = 2u << 20;      // every buffer; the largest ONE_STAGE case
constexpr size_t kRegOffset = 4096;         // the ONE_STAGE input's offset in the registered buffer
constexpr size_t kRegBytes = kRegOffset + kBufBytes;
constexpr int kPush = AR4J_ALGO_PUSH, kOneStage = AR4J_ALGO_ONE_STAGE;

const char *algo_name(int a) { return a == kPush ? "push" : "1-stage"; }

struct Shared {
    int ws = 0, gpus = 1;
    bool quick = false, timing = true;
    uint64_t seed = 1;
    uint32_t variants = 0;  // --variants
    std::vector<void *> signals;
    std::vector<void *> registered;  // each rank's registered buffer (kRegBytes)
    std::vector<std::vector<void *>> pending;  // each rank's recorded graph inputs
    std::vector<std::vector<uint8_t>> host_out, host_res;  // each rank's last fused result
    int device_of(int r) const { return r % gpus; }
};

struct Buffers {
    void *in, *residual, *weight, *out, *res_out, *tmp, *ref_out, *ref_res, *a, *b;
    char *reg;  // this rank's registered buffer
};

// One fused call and its unfused reference.
struct Case {
    int algo, d;
    size_t rows, hidden;
    uint64_t key;
    const void *ref_in;  // the reference all-reduce's input, holding this rank's input
    void *fin, *fres, *fout, *fro;  // the fused call's in, residual, out, residual_out
    std::string tag;
};

constexpr float kEps = 1e-6f;

// Writes the case's random data (inputs differ per rank; residual and weight are the same on every
// rank) into the device buffers, poisons every output with 0xff bytes, and returns the host copies.
void prepare(const Case &c, int rank, Buffers &bf, cudaStream_t st, std::vector<uint8_t> &res, std::vector<uint8_t> &w) {
    const size_t n = c.rows * c.hidden, bytes = n * esize(c.d);
    std::vector<uint8_t> in;
    fill_random(c.d, c.key * 131 + rank, n, -1.f, 1.f, in);
    fill_random(c.d, c.key * 137 + 99, n, -2.f, 2.f, res);
    fill_random(c.d, c.key * 139 + 77, c.hidden, 0.5f, 1.5f, w);
    CHECK_CUDA(cudaMemcpyAsync(const_cast<void *>(c.ref_in), in.data(), bytes, cudaMemcpyHostToDevice, st));
    CHECK_CUDA(cudaMemcpyAsync(bf.residual, res.data(), bytes, cudaMemcpyHostToDevice, st));
    CHECK_CUDA(cudaMemcpyAsync(bf.weight, w.data(), c.hidden * esize(c.d), cudaMemcpyHostToDevice, st));
    // Every copy and memset first, then a barrier, then only kernels: with ranks sharing a GPU, a
    // copy queued behind a spinning kernel can hold up a peer's copy on a shared hardware queue
    // (8 ranks deadlocked until the deadline).
    for (void *p : {bf.tmp, bf.ref_out, bf.ref_res}) CHECK_CUDA(cudaMemsetAsync(p, 0xff, bytes, st));
    if (c.fin != c.ref_in) CHECK_CUDA(cudaMemcpyAsync(c.fin, c.ref_in, bytes, cudaMemcpyDeviceToDevice, st));
    if (c.fres != bf.residual) CHECK_CUDA(cudaMemcpyAsync(c.fres, bf.residual, bytes, cudaMemcpyDeviceToDevice, st));
    if (c.fout != c.fin) CHECK_CUDA(cudaMemsetAsync(c.fout, 0xff, bytes, st));
    if (c.fro != c.fres) CHECK_CUDA(cudaMemsetAsync(c.fro, 0xff, bytes, st));
    CHECK_CUDA(cudaStreamSynchronize(st));
}

int fused_call(ar4j_context *ctx, const Case &c, const Buffers &bf, cudaStream_t st) {
    return ar4j_all_reduce_residual_rmsnorm(ctx, c.algo, c.d, c.fin, c.fres, bf.weight, c.fout, c.fro, c.rows,
                                            c.hidden, kEps, st);
}

// The unfused reference (a spinning all-reduce kernel alone between barriers: with more streams
// than hardware queues, CUDA_DEVICE_MAX_CONNECTIONS, a rank's fused kernel could otherwise be
// queued ahead of a peer's reference all-reduce in one queue), then the fused call (or graph).
void run_pair(ar4j_context *ctx, const Case &c, const Buffers &bf, cudaStream_t st, cudaGraphExec_t exec,
              std::barrier<> &sync) {
    const size_t n = c.rows * c.hidden;
    sync.arrive_and_wait();
    CHECK_AR(ar4j_all_reduce(ctx, c.algo, c.d, c.ref_in, bf.tmp, n, st));
    CHECK_CUDA(cudaStreamSynchronize(st));
    CHECK_AR(ar4j_residual_rmsnorm(c.d, bf.tmp, bf.residual, bf.weight, bf.ref_out, bf.ref_res, c.rows, c.hidden,
                                   kEps, st));
    CHECK_CUDA(cudaStreamSynchronize(st));
    sync.arrive_and_wait();
    if (exec != nullptr) {
        CHECK_CUDA(cudaGraphLaunch(exec, st));
    } else {
        CHECK_AR(fused_call(ctx, c, bf, st));
    }
    CHECK_CUDA(cudaStreamSynchronize(st));
}

// Every check of one case; every rank must call it (it meets the others at barriers).
void check_case(Shared &sh, int rank, ar4j_context *ctx, const Case &c, const Buffers &bf,
                const std::vector<uint8_t> &res, const std::vector<uint8_t> &w, std::barrier<> &sync) {
    const int d = c.d;
    const size_t n = c.rows * c.hidden, bytes = n * esize(d);
    const std::vector<uint8_t> o = to_host(c.fout, bytes), ro = to_host(c.fro, bytes);
    const std::vector<uint8_t> ref_o = to_host(bf.ref_out, bytes), ref_ro = to_host(bf.ref_res, bytes);
    const std::vector<uint8_t> tmp = to_host(bf.tmp, bytes);
    const size_t diff_res = count_differing(d, ro, ref_ro), diff_out = count_differing(d, o, ref_o);
    double worst = 0;
    const size_t ref_bad =
        reference_off_host(d, sh.ws, c.key * 131, c.rows, c.hidden, kEps, tmp, res, w, ref_o, ref_ro, &worst);
    const size_t nan_left = (n - count_not_nan(d, o)) + (n - count_not_nan(d, ro));
    record(diff_res == 0 && diff_out == 0 && ref_bad == 0 && nan_left == 0,
           c.tag + ": residual_out " + std::to_string(diff_res) + " and out " + std::to_string(diff_out) +
               " elements differ from the unfused reference; reference " + std::to_string(ref_bad) +
               " off the host (worst rel " + std::to_string(worst) + "; all-reduce included), " +
               std::to_string(nan_left) + " NaN left");
    if (!(diff_res == 0 && diff_out == 0 && ref_bad == 0 && nan_left == 0)) {
        ar4j_failure_info fi;
        if (ar4j_read_failure(ctx, &fi) == AR4J_SUCCESS) {
            char line[300];
            std::snprintf(line, sizeof line,
                          "  rank %d failure record: poisoned %d origin %d reason %d peer %d block %d timeout %d "
                          "(peer %d block %d)",
                          rank, fi.poisoned, fi.origin_rank, fi.reason, fi.peer, fi.block, fi.timeout.timed_out,
                          fi.timeout.peer, fi.timeout.block);
            say(line);
        }
    }
    sh.host_out[rank] = o;
    sh.host_res[rank] = ro;
    sync.arrive_and_wait();
    if (rank != 0) {
        record(sh.host_out[rank] == sh.host_out[0] && sh.host_res[rank] == sh.host_res[0],
               c.tag + ": bits equal rank 0's");
    }
    sync.arrive_and_wait();
}

void run_correctness(Shared &sh, int rank, ar4j_context *ctx, cudaStream_t st, Buffers &bf, std::barrier<> &sync,
                     int pdl) {
    const int dtypes[] = {AR4J_DTYPE_FLOAT32, AR4J_DTYPE_FLOAT16, AR4J_DTYPE_BFLOAT16};
    const size_t hiddens[] = {56, 64, 4096, 7168, 16384};
    const size_t rowss[] = {1, 3, 17, 40, 150};  // 40 > 32 push blocks, 150 > 132 SMs: a block owns several rows
    int cases = 0;
    for (int algo : {kPush, kOneStage}) {
        const size_t limit = algo == kPush ? static_cast<size_t>(AR4J_PUSH_MAX_BYTES) : kBufBytes;
        for (int d : dtypes) {
            for (size_t hidden : hiddens) {
                for (size_t rows : rowss) {
                    const size_t bytes = rows * hidden * esize(d);
                    if (bytes > limit) continue;
                    if (sh.quick && hidden != 7168 && hidden != 56) continue;
                    for (int inplace = 0; inplace < 2; ++inplace) {
                        for (int graph = 0; graph < 2; ++graph) {
                            Case c;
                            c.algo = algo;
                            c.d = d;
                            c.rows = rows;
                            c.hidden = hidden;
                            c.key = sh.seed * 1000003ull + (uint64_t)d * 7919 + hidden * 31 + rows * 7 + inplace * 3 +
                                    graph + pdl * 101 + (uint64_t)algo * 100003;
                            // Push reads any input; ONE_STAGE a registered one, which no output may overlap.
                            c.ref_in = algo == kPush ? bf.in : bf.reg + kRegOffset;
                            c.fin = const_cast<void *>(c.ref_in);
                            c.fres = bf.residual;
                            c.fout = bf.out;
                            c.fro = bf.res_out;
                            if (inplace) {
                                if (algo == kPush) c.fin = c.fout = bf.a;
                                c.fres = c.fro = bf.b;
                            }
                            char tag[200];
                            std::snprintf(tag, sizeof tag, "rank %d %s %s hidden %zu rows %zu %s %s pdl %d", rank,
                                          algo_name(algo), dtype_name(d), hidden, rows,
                                          inplace ? "in-place" : "out-of-place", graph ? "graph" : "eager", pdl);
                            c.tag = tag;
                            std::vector<uint8_t> res, w;
                            prepare(c, rank, bf, st, res, w);
                            cudaGraphExec_t exec = nullptr;
                            cudaGraph_t g = nullptr;
                            if (graph) {
                                CHECK_CUDA(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
                                CHECK_AR(fused_call(ctx, c, bf, st));
                                CHECK_CUDA(cudaStreamEndCapture(st, &g));
                                CHECK_CUDA(cudaGraphInstantiate(&exec, g, 0));
                            }
                            run_pair(ctx, c, bf, st, exec, sync);
                            if (graph) {
                                CHECK_CUDA(cudaGraphExecDestroy(exec));
                                CHECK_CUDA(cudaGraphDestroy(g));
                            }
                            check_case(sh, rank, ctx, c, bf, res, w, sync);
                            ++cases;
                        }
                    }
                }
            }
        }
    }
    if (rank == 0) say("pdl " + std::to_string(pdl) + ": " + std::to_string(cases) + " cases per rank");
}

// ONE_STAGE on an unregistered input inside a capture: recorded as a graph input, its peers'
// pointers registered after the capture, then two replays with fresh data (the reference reads a
// copy of the input in the registered buffer).
void run_graph_input(Shared &sh, int rank, ar4j_context *ctx, cudaStream_t st, Buffers &bf, std::barrier<> &sync) {
    Case c;
    c.algo = kOneStage;
    c.d = AR4J_DTYPE_BFLOAT16;
    c.rows = 5;
    c.hidden = 4096;
    c.ref_in = bf.reg + kRegOffset;
    c.fin = bf.in;
    c.fres = bf.residual;
    c.fout = bf.out;
    c.fro = bf.res_out;
    int32_t before = -1, after = -1;
    CHECK_AR(ar4j_graph_pending_count(ctx, &before));
    cudaGraph_t g = nullptr;
    cudaGraphExec_t exec = nullptr;
    CHECK_CUDA(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    CHECK_AR(fused_call(ctx, c, bf, st));
    CHECK_CUDA(cudaStreamEndCapture(st, &g));
    CHECK_CUDA(cudaGraphInstantiate(&exec, g, 0));
    CHECK_AR(ar4j_graph_pending_count(ctx, &after));
    record(before == 0 && after == 1, "rank " + std::to_string(rank) + " 1-stage graph input: " +
                                          std::to_string(after - before) + " recorded, expected 1");
    sh.pending[rank].assign(after, nullptr);
    CHECK_AR(ar4j_graph_pending_inputs(ctx, sh.pending[rank].data(), after));
    sync.arrive_and_wait();  // every rank published its recorded input
    std::vector<const void *> ptrs(sh.ws);
    for (int r = 0; r < sh.ws; ++r) ptrs[r] = sh.pending[r].empty() ? nullptr : sh.pending[r].back();
    CHECK_AR(ar4j_register_graph_inputs(ctx, ptrs.data(), 1));
    for (int replay = 0; replay < 2; ++replay) {
        c.key = sh.seed * 7777 + 17 + replay;
        c.tag = "rank " + std::to_string(rank) + " 1-stage bf16 hidden 4096 rows 5 graph input, replay " +
                std::to_string(replay);
        std::vector<uint8_t> res, w;
        prepare(c, rank, bf, st, res, w);  // also copies the input from the registered buffer
        run_pair(ctx, c, bf, st, exec, sync);
        check_case(sh, rank, ctx, c, bf, res, w, sync);
    }
    CHECK_CUDA(cudaGraphExecDestroy(exec));
    CHECK_CUDA(cudaGraphDestroy(g));
}

void run_validation(Shared &sh, int rank, ar4j_context *ctx, cudaStream_t st, Buffers &bf) {
    const int bf16 = AR4J_DTYPE_BFLOAT16, push = kPush;
    struct Refusal {
        const char *what;
        int expected;
        int got;
    };
    char *in = static_cast<char *>(bf.in);
    char *reg = bf.reg + kRegOffset;
    auto one_stage = [&](const void *i, void *o, void *ro, size_t rows) {
        return ar4j_all_reduce_residual_rmsnorm(ctx, kOneStage, bf16, i, bf.residual, bf.weight, o, ro, rows, 7168,
                                                1e-6f, st);
    };
    std::vector<Refusal> cases = {
        {"two-stage", AR4J_ERROR_NOT_FUSED,
         ar4j_all_reduce_residual_rmsnorm(ctx, AR4J_ALGO_TWO_STAGE, bf16, reg, bf.residual, bf.weight, bf.out,
                                          bf.res_out, 3, 7168, 1e-6f, st)},
        {"one-stage out == in", AR4J_ERROR_INVALID_ARGUMENT, one_stage(reg, reg, bf.res_out, 3)},
        {"one-stage residual_out == in", AR4J_ERROR_INVALID_ARGUMENT, one_stage(reg, bf.out, reg, 3)},
        {"one-stage out overlaps in by 16 B", AR4J_ERROR_INVALID_ARGUMENT,
         one_stage(reg, reg + 3 * 7168 * 2 - 16, bf.res_out, 3)},
        {"one-stage unregistered input, no capture", AR4J_ERROR_NOT_REGISTERED,
         one_stage(bf.in, bf.out, bf.res_out, 3)},
        {"one-stage past the registration's end", AR4J_ERROR_TOO_LARGE,
         one_stage(bf.reg + kRegBytes - 2 * 7168 * 2, bf.out, bf.res_out, 3)},
        {"algorithm 0", AR4J_ERROR_ALGORITHM,
         ar4j_all_reduce_residual_rmsnorm(ctx, 0, bf16, bf.in, bf.residual, bf.weight, bf.out, bf.res_out, 3, 7168,
                                          1e-6f, st)},
        {"dtype 7", AR4J_ERROR_DTYPE,
         ar4j_all_reduce_residual_rmsnorm(ctx, push, 7, bf.in, bf.residual, bf.weight, bf.out, bf.res_out, 3, 7168,
                                          1e-6f, st)},
        {"null residual", AR4J_ERROR_NULL_POINTER,
         ar4j_all_reduce_residual_rmsnorm(ctx, push, bf16, bf.in, nullptr, bf.weight, bf.out, bf.res_out, 3, 7168,
                                          1e-6f, st)},
        {"rows 0", AR4J_ERROR_EMPTY,
         ar4j_all_reduce_residual_rmsnorm(ctx, push, bf16, bf.in, bf.residual, bf.weight, bf.out, bf.res_out, 0, 7168,
                                          1e-6f, st)},
        {"hidden 65544", AR4J_ERROR_HIDDEN_TOO_LARGE,
         ar4j_all_reduce_residual_rmsnorm(ctx, push, bf16, bf.in, bf.residual, bf.weight, bf.out, bf.res_out, 1,
                                          65544, 1e-6f, st)},
        {"hidden 7 bf16", AR4J_ERROR_ROW_NOT_MULTIPLE_OF_16,
         ar4j_all_reduce_residual_rmsnorm(ctx, push, bf16, bf.in, bf.residual, bf.weight, bf.out, bf.res_out, 3, 7,
                                          1e-6f, st)},
        {"64 x 4096 fp32 (1 MiB)", AR4J_ERROR_TOO_LARGE,
         ar4j_all_reduce_residual_rmsnorm(ctx, push, AR4J_DTYPE_FLOAT32, bf.in, bf.residual, bf.weight, bf.out,
                                          bf.res_out, 64, 4096, 1e-6f, st)},
        {"eps 0", AR4J_ERROR_INVALID_ARGUMENT,
         ar4j_all_reduce_residual_rmsnorm(ctx, push, bf16, bf.in, bf.residual, bf.weight, bf.out, bf.res_out, 3, 7168,
                                          0.f, st)},
        {"eps NaN", AR4J_ERROR_INVALID_ARGUMENT,
         ar4j_all_reduce_residual_rmsnorm(ctx, push, bf16, bf.in, bf.residual, bf.weight, bf.out, bf.res_out, 3, 7168,
                                          NAN, st)},
        {"out == residual_out", AR4J_ERROR_INVALID_ARGUMENT,
         ar4j_all_reduce_residual_rmsnorm(ctx, push, bf16, bf.in, bf.residual, bf.weight, bf.out, bf.out, 3, 7168,
                                          1e-6f, st)},
        {"out == residual", AR4J_ERROR_INVALID_ARGUMENT,
         ar4j_all_reduce_residual_rmsnorm(ctx, push, bf16, bf.in, bf.residual, bf.weight, bf.residual, bf.res_out, 3,
                                          7168, 1e-6f, st)},
        {"out overlaps in by 16 B", AR4J_ERROR_INVALID_ARGUMENT,
         ar4j_all_reduce_residual_rmsnorm(ctx, push, bf16, bf.in, bf.residual, bf.weight, in + 16, bf.res_out, 3, 7168,
                                          1e-6f, st)},
        {"out overlaps weight", AR4J_ERROR_INVALID_ARGUMENT,
         ar4j_all_reduce_residual_rmsnorm(ctx, push, bf16, bf.in, bf.residual, bf.weight, bf.weight, bf.res_out, 3,
                                          7168, 1e-6f, st)},
        {"misaligned weight", AR4J_ERROR_MISALIGNED,
         ar4j_all_reduce_residual_rmsnorm(ctx, push, bf16, bf.in, bf.residual, static_cast<char *>(bf.weight) + 8,
                                          bf.out, bf.res_out, 3, 7168, 1e-6f, st)},
        {"null context", AR4J_ERROR_NULL_POINTER,
         ar4j_all_reduce_residual_rmsnorm(nullptr, push, bf16, bf.in, bf.residual, bf.weight, bf.out, bf.res_out, 3,
                                          7168, 1e-6f, st)},
    };
    for (const auto &c : cases) {
        record(c.got == c.expected, "rank " + std::to_string(rank) + " validation " + c.what + ": " +
                                        ar4j_status_name(c.got) + ", expected " + ar4j_status_name(c.expected));
    }
    int32_t pending = -1;
    CHECK_AR(ar4j_graph_pending_count(ctx, &pending));
    record(pending == 0, "rank " + std::to_string(rank) + " validation recorded no graph input: " +
                             std::to_string(pending));
    (void)sh;
}

// Rank 0 poisons. An eager push call: rank 0's is refused, the others' kernels find the poison at
// entry and write NaN (after which their hosts know too, and refuse further calls). A graph of a
// push and a ONE_STAGE fused call, captured before the poison, replayed after it on every rank:
// every output NaN.
void run_poison(Shared &sh, int rank, ar4j_context *ctx, cudaStream_t st, Buffers &bf, std::barrier<> &sync) {
    const int d = AR4J_DTYPE_BFLOAT16;
    const size_t rows = 3, hidden = 7168, n = rows * hidden, bytes = n * 2;
    void *outs[] = {bf.out, bf.res_out, bf.a, bf.b};  // push's out, residual_out; ONE_STAGE's
    auto poison_outputs = [&]() {
        for (void *p : outs) CHECK_CUDA(cudaMemsetAsync(p, 0x11, bytes, st));
        CHECK_CUDA(cudaStreamSynchronize(st));
    };
    auto nan_missing = [&](int first, int count) {
        size_t left = 0;
        for (int k = first; k < first + count; ++k) left += count_not_nan(d, to_host(outs[k], bytes));
        return left;
    };
    poison_outputs();
    cudaGraph_t g = nullptr;
    cudaGraphExec_t exec = nullptr;
    CHECK_CUDA(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    CHECK_AR(ar4j_all_reduce_residual_rmsnorm(ctx, kPush, d, bf.in, bf.residual, bf.weight, bf.out, bf.res_out, rows,
                                              hidden, 1e-6f, st));
    CHECK_AR(ar4j_all_reduce_residual_rmsnorm(ctx, kOneStage, d, bf.reg + kRegOffset, bf.residual, bf.weight, bf.a,
                                              bf.b, rows, hidden, 1e-6f, st));
    CHECK_CUDA(cudaStreamEndCapture(st, &g));
    CHECK_CUDA(cudaGraphInstantiate(&exec, g, 0));
    sync.arrive_and_wait();
    if (rank == 0) CHECK_AR(ar4j_poison(ctx, AR4J_POISON_ABORT));
    sync.arrive_and_wait();
    const int status = ar4j_all_reduce_residual_rmsnorm(ctx, kPush, d, bf.in, bf.residual, bf.weight, bf.out,
                                                        bf.res_out, rows, hidden, 1e-6f, st);
    CHECK_CUDA(cudaStreamSynchronize(st));
    const std::string who = "rank " + std::to_string(rank);
    if (rank == 0) {
        record(status == AR4J_ERROR_POISONED, who + " poisoned push fused call: " + ar4j_status_name(status));
    } else {
        const size_t left = nan_missing(0, 2);
        record(status == AR4J_SUCCESS && left == 0, who + " poisoned push fused call: " + ar4j_status_name(status) +
                                                        ", " + std::to_string(left) +
                                                        " non-NaN elements in out + residual_out");
    }
    const int again = ar4j_all_reduce_residual_rmsnorm(ctx, kOneStage, d, bf.reg + kRegOffset, bf.residual, bf.weight,
                                                       bf.a, bf.b, rows, hidden, 1e-6f, st);
    record(again == AR4J_ERROR_POISONED, who + " 1-stage fused call after the poison is known: " +
                                             ar4j_status_name(again));
    poison_outputs();
    sync.arrive_and_wait();
    CHECK_CUDA(cudaGraphLaunch(exec, st));
    CHECK_CUDA(cudaStreamSynchronize(st));
    const size_t push_left = nan_missing(0, 2), one_left = nan_missing(2, 2);
    record(push_left == 0 && one_left == 0, who + " graph replayed after the poison: " + std::to_string(push_left) +
                                                " (push) and " + std::to_string(one_left) +
                                                " (1-stage) non-NaN elements in out + residual_out");
    CHECK_CUDA(cudaGraphExecDestroy(exec));
    CHECK_CUDA(cudaGraphDestroy(g));
    (void)sh;
}

double replay_us(cudaStream_t st, cudaGraphExec_t exec, int calls, std::barrier<> &sync) {
    cudaEvent_t a, b;
    CHECK_CUDA(cudaEventCreate(&a));
    CHECK_CUDA(cudaEventCreate(&b));
    std::vector<double> us;
    for (int k = 0; k < 11; ++k) {
        sync.arrive_and_wait();
        CHECK_CUDA(cudaEventRecord(a, st));
        CHECK_CUDA(cudaGraphLaunch(exec, st));
        CHECK_CUDA(cudaEventRecord(b, st));
        CHECK_CUDA(cudaStreamSynchronize(st));
        float ms = 0;
        CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
        if (k >= 2) us.push_back(ms * 1000.0 / calls);
    }
    CHECK_CUDA(cudaEventDestroy(a));
    CHECK_CUDA(cudaEventDestroy(b));
    std::sort(us.begin(), us.end());
    return us[us.size() / 2];
}

void run_timing(int rank, ar4j_context *ctx, cudaStream_t st, Buffers &bf, std::barrier<> &sync) {
    const int d = AR4J_DTYPE_BFLOAT16, calls = 122;
    const size_t hidden = 7168;
    for (int algo : {kPush, kOneStage}) {
        const size_t rows = algo == kPush ? 3 : 64, n = rows * hidden;
        void *in = algo == kPush ? bf.in : bf.reg + kRegOffset;
        std::vector<uint8_t> v;
        fill_random(d, 5, n, -1.f, 1.f, v);
        CHECK_CUDA(cudaMemcpy(in, v.data(), n * 2, cudaMemcpyHostToDevice));
        CHECK_CUDA(cudaMemcpy(bf.residual, v.data(), n * 2, cudaMemcpyHostToDevice));
        CHECK_CUDA(cudaMemcpy(bf.weight, v.data(), hidden * 2, cudaMemcpyHostToDevice));
        for (int pdl = 0; pdl < 2; ++pdl) {
            CHECK_AR(ar4j_set_pdl(ctx, pdl));
            double t[2];
            for (int fused = 1; fused >= 0; --fused) {
                cudaGraph_t g;
                cudaGraphExec_t exec;
                CHECK_CUDA(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
                for (int i = 0; i < calls; ++i) {
                    if (fused) {
                        CHECK_AR(ar4j_all_reduce_residual_rmsnorm(ctx, algo, d, in, bf.residual, bf.weight, bf.out,
                                                                  bf.res_out, rows, hidden, 1e-6f, st));
                    } else {
                        CHECK_AR(ar4j_all_reduce(ctx, algo, d, in, bf.tmp, n, st));
                        CHECK_AR(ar4j_residual_rmsnorm(d, bf.tmp, bf.residual, bf.weight, bf.out, bf.res_out, rows,
                                                       hidden, 1e-6f, st));
                    }
                }
                CHECK_CUDA(cudaStreamEndCapture(st, &g));
                CHECK_CUDA(cudaGraphInstantiate(&exec, g, 0));
                t[fused] = replay_us(st, exec, calls, sync);
                CHECK_CUDA(cudaGraphExecDestroy(exec));
                CHECK_CUDA(cudaGraphDestroy(g));
            }
            char line[300];
            std::snprintf(line, sizeof line,
                          "timing rank %d %s pdl %s: %zu x 7168 bf16, graph of 122: fused %.2f us per call, "
                          "all-reduce + residual_rmsnorm %.2f us per pair (median of 9 replays)",
                          rank, algo_name(algo), pdl ? "on" : "off", rows, t[1], t[0]);
            say(line);
        }
    }
    CHECK_AR(ar4j_set_pdl(ctx, 0));
}

}  // namespace

int main(int argc, char **argv) {
    Shared sh;
    int ranks = 2;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--ranks" && i + 1 < argc) ranks = std::atoi(argv[++i]);
        else if (a == "--gpus" && i + 1 < argc) sh.gpus = std::atoi(argv[++i]);
        else if (a == "--quick") sh.quick = true;
        else if (a == "--no-timing") sh.timing = false;
        else if (a == "--seed" && i + 1 < argc) sh.seed = std::strtoull(argv[++i], nullptr, 10);
        else if (a == "--variants" && i + 1 < argc) sh.variants = static_cast<uint32_t>(std::strtoul(argv[++i], nullptr, 0));
        else {
            std::fprintf(stderr, "usage: %s [--ranks N] [--gpus G] [--quick] [--no-timing] [--seed S] [--variants MASK]\n", argv[0]);
            return 2;
        }
    }
    // Ranks sharing a GPU: a stream's work queued behind a kernel that spins for a peer (a kernel
    // or copy waiting for it to complete) blocks the hardware queue it shares with other streams;
    // with 8 ranks (16 streams, with the contexts' side streams) on the default 8 queues, a peer's
    // launch then waited behind it until the deadline. As many queues as the driver allows, and
    // every kernel loaded up front (lazy loading can wait for running kernels). Set before the
    // first CUDA call; a value in the environment is kept.
    setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
    setenv("CUDA_MODULE_LOADING", "EAGER", 0);
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count < sh.gpus) {
        std::fprintf(stderr, "need %d GPUs\n", sh.gpus);
        return 3;
    }
    sh.ws = ranks;
    std::printf("ar4j fused test: %d ranks on %d GPU(s), seed %" PRIu64 ", abi %d%s, variants 0x%x\n", ranks, sh.gpus,
                sh.seed, ar4j_abi_version(), sh.quick ? ", quick" : "", sh.variants);
    for (int d = 0; d < sh.gpus; ++d) {
        CHECK_CUDA(cudaSetDevice(d));
        for (int q = 0; q < sh.gpus; ++q)
            if (q != d) CHECK_CUDA(cudaDeviceEnablePeerAccess(q, 0));
    }
    sh.signals.resize(ranks);
    sh.registered.resize(ranks);
    sh.pending.resize(ranks);
    sh.host_out.resize(ranks);
    sh.host_res.resize(ranks);
    const size_t max_bytes = 1 << 20;
    for (int r = 0; r < ranks; ++r) {
        CHECK_CUDA(cudaSetDevice(sh.device_of(r)));
        const size_t sig = ar4j_signal_size(max_bytes);
        CHECK_CUDA(cudaMalloc(&sh.signals[r], sig));
        CHECK_CUDA(cudaMemset(sh.signals[r], 0, sig));
        sh.registered[r] = dalloc(kRegBytes);
    }
    CHECK_CUDA(cudaDeviceSynchronize());
    std::barrier<> sync(ranks);
    std::vector<std::thread> threads;
    for (int rank = 0; rank < ranks; ++rank) {
        threads.emplace_back([&sh, &sync, rank, max_bytes]() {
            CHECK_CUDA(cudaSetDevice(sh.device_of(rank)));
            cudaStream_t st;
            CHECK_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
            ar4j_context *ctx = nullptr;
            CHECK_AR(ar4j_context_create(&ctx, sh.signals.data(), rank, sh.ws, max_bytes, 16,
                                         10ull * 1000 * 1000 * 1000));
            if (sh.gpus < sh.ws) CHECK_AR(ar4j_set_launch_config(ctx, 16, 512));
            if (sh.variants != 0) CHECK_AR(ar4j_set_variants(ctx, sh.variants));
            CHECK_AR(ar4j_register_buffer(ctx, sh.registered.data(), kRegBytes));
            Buffers bf;
            bf.reg = static_cast<char *>(sh.registered[rank]);
            bf.in = dalloc(kBufBytes);
            bf.residual = dalloc(kBufBytes);
            bf.weight = dalloc(AR4J_FUSED_MAX_HIDDEN * 4);
            bf.out = dalloc(kBufBytes);
            bf.res_out = dalloc(kBufBytes);
            bf.tmp = dalloc(kBufBytes);
            bf.ref_out = dalloc(kBufBytes);
            bf.ref_res = dalloc(kBufBytes);
            bf.a = dalloc(kBufBytes);
            bf.b = dalloc(kBufBytes);
            sync.arrive_and_wait();
            run_validation(sh, rank, ctx, st, bf);
            sync.arrive_and_wait();
            for (int pdl = 0; pdl < 2; ++pdl) {
                CHECK_AR(ar4j_set_pdl(ctx, pdl));
                run_correctness(sh, rank, ctx, st, bf, sync, pdl);
            }
            CHECK_AR(ar4j_set_pdl(ctx, 0));
            sync.arrive_and_wait();
            run_graph_input(sh, rank, ctx, st, bf, sync);
            sync.arrive_and_wait();
            if (sh.timing) run_timing(rank, ctx, st, bf, sync);
            sync.arrive_and_wait();
            run_poison(sh, rank, ctx, st, bf, sync);
            sync.arrive_and_wait();
            CHECK_AR(ar4j_context_destroy(ctx));
        });
    }
    for (auto &t : threads) t.join();
    std::printf("%d passed, %d failed\n", g_passed.load(), g_failed.load());
    return g_failed.load() == 0 ? 0 : 1;
}
