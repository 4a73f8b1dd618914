// The launches: ar4j_all_reduce and ar4j_all_reduce_residual_rmsnorm (argument checks, then the
// kernel for the algorithm, dtype and world size from one instance table, and one launch tail),
// and the preload of every kernel in that table. The only
// translation unit that includes the kernels, so that each kernel is instantiated once.
// No policy: the caller names the algorithm.

#include <cmath>
#include <cstdint>

#include "context_internal.h"
#include "kernels.cuh"
#include "fused_kernels.cuh"
#include "fused_one_stage.cuh"
#include "kernel_launch.cuh"

// The oldest toolkit the launches compile with: cudaLaunchKernelEx with the programmatic stream
// serialization attribute (PDL) and griddepcontrol are in CUDA 12.0 (the cu12 variant is built
// with 12.4, which has all of it, so neither variant lacks a feature the other has).
#if !defined(CUDART_VERSION) || CUDART_VERSION < 12000
#error "ar4j's kernels need a CUDA 12.0 or newer toolkit (cudaLaunchKernelEx, programmatic stream serialization)"
#endif

using namespace ar4j::host;

namespace {

using AllReduceKernel = void (*)(Params);
using FusedKernel = void (*)(ar4j::FusedParams);

// Every kernel instance of one element type and world size, in one table: the launches pick their
// kernel from it and the preload loads every entry, so an instance is added in one place.
struct Instances {
    AllReduceKernel one_stage[2];  // [in place]
    AllReduceKernel two_stage[2];  // [kVariantTwoStagePush]
    AllReduceKernel push[8];       // [push_index(variants)]: clear-on-read, pass-on-poison, early trigger
    FusedKernel fused_one_stage;
    FusedKernel fused_push[4];     // [kVariantFusedGridPush + 2 * kVariantPushClearOnRead]
};

// One push instance per variant combination: the default one has no variant code at all.
int push_index(uint32_t variants) {
    return ((variants & ar4j::kVariantPushClearOnRead) != 0 ? 1 : 0) +
           ((variants & ar4j::kVariantPushPassOnPoison) != 0 ? 2 : 0) +
           ((variants & ar4j::kVariantPushEarlyTrigger) != 0 ? 4 : 0);
}

int fused_push_index(uint32_t variants) {
    return ((variants & ar4j::kVariantFusedGridPush) != 0 ? 1 : 0) +
           ((variants & ar4j::kVariantPushClearOnRead) != 0 ? 2 : 0);
}

template <typename T, int WS>
const Instances &instances() {
    using namespace ar4j;
    static const Instances table = {
        {one_stage_kernel<T, WS, false>, one_stage_kernel<T, WS, true>},
        {two_stage_kernel<T, WS>, two_stage_push_kernel<T, WS>},
        {push_kernel<T, WS, false, false, false>, push_kernel<T, WS, true, false, false>,
         push_kernel<T, WS, false, true, false>, push_kernel<T, WS, true, true, false>,
         push_kernel<T, WS, false, false, true>, push_kernel<T, WS, true, false, true>,
         push_kernel<T, WS, false, true, true>, push_kernel<T, WS, true, true, true>},
        one_stage_rmsnorm_kernel<T, WS>,
        {push_rmsnorm_kernel<T, WS, false, false>, push_rmsnorm_kernel<T, WS, true, false>,
         push_rmsnorm_kernel<T, WS, false, true>, push_rmsnorm_kernel<T, WS, true, true>},
    };
    return table;
}

template <int WS>
const Instances &instances_of_type(int32_t dtype) {
    switch (dtype) {
        case AR4J_DTYPE_FLOAT32: return instances<float, WS>();
        case AR4J_DTYPE_FLOAT16: return instances<__half, WS>();
        default: return instances<__nv_bfloat16, WS>();  // dtype validated by the caller
    }
}

// The instances of (dtype, world size); nullptr for a world size the library has no kernels for
// (unreachable: validated at create).
const Instances *instances_for(int32_t dtype, int ws) {
    switch (ws) {
        case 2: return &instances_of_type<2>(dtype);
        case 4: return &instances_of_type<4>(dtype);
        case 6: return &instances_of_type<6>(dtype);
        case 8: return &instances_of_type<8>(dtype);
        default: return nullptr;
    }
}

cudaError_t preload(const Instances &k) {
    cudaFuncAttributes attr;
    cudaError_t e = cudaSuccess;
    auto load = [&](auto kernel) {
        if (e == cudaSuccess) e = cudaFuncGetAttributes(&attr, kernel);
    };
    for (AllReduceKernel kernel : k.one_stage) load(kernel);
    for (AllReduceKernel kernel : k.two_stage) load(kernel);
    for (AllReduceKernel kernel : k.push) load(kernel);
    load(k.fused_one_stage);
    for (FusedKernel kernel : k.fused_push) load(kernel);
    return e;
}

}  // namespace

namespace ar4j::host {

cudaError_t preload_kernels(int ws) {
    cudaError_t e = cudaSuccess;
    for (int32_t dtype : {AR4J_DTYPE_FLOAT32, AR4J_DTYPE_FLOAT16, AR4J_DTYPE_BFLOAT16}) {
        const Instances *k = instances_for(dtype, ws);
        if (k == nullptr) return cudaErrorInvalidValue;
        if (e == cudaSuccess) e = preload(*k);
    }
    return e;
}

cudaError_t push_kernel_attributes(cudaFuncAttributes *attr) {
    return cudaFuncGetAttributes(attr, instances<float, 2>().push[0]);
}

cudaError_t launch_fill_words(uint32_t *p, size_t words, uint32_t value, cudaStream_t stream) {
    ar4j::fill_words<<<256, 256, 0, stream>>>(p, words, value);
    return cudaGetLastError();
}

}  // namespace ar4j::host

// True if the context's test-only fault injection makes its launches fail (ar4j_debug_inject_faults).
static bool debug_launch_fails(const ar4j_context *ctx) {
    return (ctx->debug_faults.load(std::memory_order_relaxed) & AR4J_DEBUG_FAIL_LAUNCHES) != 0;
}

// AR4J_SUCCESS if the calling thread's current device is the context's.
static int check_device(ar4j_context *ctx) {
    int device = -1;
    cudaError_t e = cudaGetDevice(&device);
    if (e != cudaSuccess) return cuda_failed(ctx, e);
    return device == ctx->device ? AR4J_SUCCESS : AR4J_ERROR_WRONG_DEVICE;
}

// The kernels' parameters for bytes from in (this rank's input; read by the push kernels) to out,
// the 1-/2-stage kernels reading every rank's input through inputs at offset (nullptr for push).
static Params launch_params(const ar4j_context *ctx, const void *in, void *out, size_t bytes,
                            const RankPtrs *inputs, size_t offset) {
    Params p;
    p.self = ctx->self;
    for (int r = 0; r < kMaxRanks; ++r) p.peers[r] = ctx->peers[r];
    p.inputs = inputs;
    p.in_offset = offset;
    p.out = static_cast<uint4 *>(out);
    p.npacks = static_cast<int64_t>(bytes / 16);
    p.rank = ctx->rank;
    p.deadline_ns = ctx->deadline_ns;
    p.error_word = ctx->error_device;
    p.local_in = static_cast<const uint4 *>(in);
    p.push_offset = ar4j::push_area_offset(ctx->max_bytes);
    p.variants = effective_variants(ctx);
    return p;
}

// The tail of both launches: the kernel on the stream (or the failure a test injects), then the
// graph input kept or dropped with the launch's outcome, then the status.
template <typename Kernel, typename P>
static int launch_and_finish(ar4j_context *ctx, const ResolvedInput &input, Kernel kernel, unsigned blocks,
                             unsigned threads, cudaStream_t stream, const P &params) {
    const bool pdl = ctx->pdl && ctx->pdl_capable;
    ctx->launched = true;
    cudaError_t e;
    if (kernel == nullptr) {
        e = cudaErrorInvalidValue;  // unreachable: the world size is validated at create
    } else if (debug_launch_fails(ctx)) {
        e = cudaErrorInvalidConfiguration;
    } else {
        e = ar4j::launch_kernel(kernel, blocks, threads, stream, pdl, params);
    }
    finish_input(ctx, input, e == cudaSuccess);  // a failed launch keeps no graph input
    if (e != cudaSuccess) return cuda_failed(ctx, e);
    return AR4J_SUCCESS;
}

AR4J_API int ar4j_all_reduce(ar4j_context *ctx, int32_t algorithm, int32_t dtype, const void *in, void *out,
                             size_t count, void *stream) {
    if (ctx == nullptr || in == nullptr || out == nullptr) return AR4J_ERROR_NULL_POINTER;
    if (algorithm != AR4J_ALGO_ONE_STAGE && algorithm != AR4J_ALGO_TWO_STAGE &&
        algorithm != AR4J_ALGO_PUSH) {
        return AR4J_ERROR_ALGORITHM;
    }
    const size_t esize = dtype_size(dtype);
    if (esize == 0) return AR4J_ERROR_DTYPE;
    if (count == 0) return AR4J_ERROR_EMPTY;
    if (count > (SIZE_MAX >> 3)) return AR4J_ERROR_TOO_LARGE;
    const size_t bytes = count * esize;
    if ((bytes & 15u) != 0) return AR4J_ERROR_SIZE_NOT_MULTIPLE_OF_16;
    if (!aligned16(in) || !aligned16(out)) return AR4J_ERROR_MISALIGNED;
    const uintptr_t ia = reinterpret_cast<uintptr_t>(in), oa = reinterpret_cast<uintptr_t>(out);
    const bool in_place = ia == oa;
    if (!in_place && ia < oa + bytes && oa < ia + bytes) return AR4J_ERROR_INVALID_ARGUMENT;
    ContextUse use(ctx);
    if (!use.owned) return AR4J_ERROR_CONCURRENT_USE;
    int failure = launch_failure(ctx);
    if (failure != AR4J_SUCCESS) return failure;
    if (algorithm == AR4J_ALGO_TWO_STAGE && bytes > ctx->max_bytes) return AR4J_ERROR_TOO_LARGE;

    if (algorithm == AR4J_ALGO_PUSH && bytes > ar4j::kPushMaxBytes) return AR4J_ERROR_TOO_LARGE;

    // The device first: nothing is recorded (a graph input) for a call that cannot launch.
    int status = check_device(ctx);
    if (status != AR4J_SUCCESS) return status;
    ResolvedInput input;  // the push kernel reads its own input directly: no slot
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    if (algorithm != AR4J_ALGO_PUSH) {
        status = resolve_input(ctx, in, bytes, s, &input);
        if (status != AR4J_SUCCESS) return status;
    }

    Params p = launch_params(ctx, in, out, bytes, input.inputs, input.offset);
    // The push-based 2-stage only where its scratch fits (the same on every rank: the count and
    // max_bytes, which the variants word makes the ranks agree on); the pull kernel above that.
    if (algorithm == AR4J_ALGO_TWO_STAGE &&
        ar4j::two_stage_push_scratch_bytes(p.npacks, ctx->world_size) > ctx->max_bytes) {
        p.variants &= ~ar4j::kVariantTwoStagePush;
    }

    const int64_t work = algorithm == AR4J_ALGO_TWO_STAGE ? (p.npacks + ctx->world_size - 1) / ctx->world_size
                                                          : p.npacks;
    int64_t blocks = (work + ctx->threads - 1) / ctx->threads;
    if (blocks < 1) blocks = 1;
    if (blocks > ctx->max_blocks) blocks = ctx->max_blocks;

    // p.variants selects the variant instances: kVariantTwoStagePush (cleared above where its
    // scratch does not fit), and for the push kernel kVariantPushClearOnRead,
    // kVariantPushPassOnPoison and kVariantPushEarlyTrigger (set only where it is in effect).
    const Instances *k = instances_for(dtype, ctx->world_size);
    AllReduceKernel kernel = nullptr;
    unsigned grid = static_cast<unsigned>(blocks), threads = static_cast<unsigned>(ctx->threads);
    if (k != nullptr) {
        if (algorithm == AR4J_ALGO_ONE_STAGE) {
            kernel = k->one_stage[in_place ? 1 : 0];
        } else if (algorithm == AR4J_ALGO_TWO_STAGE) {
            kernel = k->two_stage[(p.variants & ar4j::kVariantTwoStagePush) != 0 ? 1 : 0];
        } else {
            kernel = k->push[push_index(p.variants)];
            grid = ar4j::kPushBlocks;
            threads = ar4j::kPushThreads;
        }
    }
    return launch_and_finish(ctx, input, kernel, grid, threads, s, p);
}

namespace {

// True if [a, a + n) and [b, b + n) overlap.
bool overlaps(const void *a, const void *b, size_t n) {
    const uintptr_t x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
    return x < y + n && y < x + n;
}

}  // namespace

AR4J_API int ar4j_all_reduce_residual_rmsnorm(ar4j_context *ctx, int32_t algorithm, int32_t dtype, const void *in,
                                              const void *residual, const void *weight, void *out,
                                              void *residual_out, size_t rows, size_t hidden, float eps,
                                              void *stream) {
    if (ctx == nullptr || in == nullptr || residual == nullptr || weight == nullptr || out == nullptr ||
        residual_out == nullptr) {
        return AR4J_ERROR_NULL_POINTER;
    }
    if (algorithm != AR4J_ALGO_ONE_STAGE && algorithm != AR4J_ALGO_TWO_STAGE &&
        algorithm != AR4J_ALGO_PUSH) {
        return AR4J_ERROR_ALGORITHM;
    }
    if (algorithm == AR4J_ALGO_TWO_STAGE) return AR4J_ERROR_NOT_FUSED;
    const bool push = algorithm == AR4J_ALGO_PUSH;
    const size_t esize = dtype_size(dtype);
    if (esize == 0) return AR4J_ERROR_DTYPE;
    if (rows == 0 || hidden == 0) return AR4J_ERROR_EMPTY;
    if (hidden > AR4J_FUSED_MAX_HIDDEN) return AR4J_ERROR_HIDDEN_TOO_LARGE;
    const size_t row_bytes = hidden * esize;
    if ((row_bytes & 15u) != 0) return AR4J_ERROR_ROW_NOT_MULTIPLE_OF_16;
    // Push: its buffers' limit. ONE_STAGE: the registration's end (resolve_input), and no overflow.
    if (rows > (push ? ar4j::kPushMaxBytes : (SIZE_MAX >> 4)) / row_bytes) return AR4J_ERROR_TOO_LARGE;
    const size_t bytes = rows * row_bytes;
    if (!(eps > 0.f) || !std::isfinite(eps)) return AR4J_ERROR_INVALID_ARGUMENT;
    if (!aligned16(in) || !aligned16(residual) || !aligned16(weight) || !aligned16(out) || !aligned16(residual_out)) {
        return AR4J_ERROR_MISALIGNED;
    }
    // Aliasing: out may be in, residual_out may be residual or in (each pack is read before it is
    // written, by the one thread that writes it); any other overlap of an output with an input or
    // with the other output is refused. weight is read by every row: no output may overlap it.
    // ONE_STAGE: the peers read this rank's input until the end of the launch, so no output may
    // overlap it at all (stage the input first for an in-place call).
    if (overlaps(out, residual_out, bytes)) return AR4J_ERROR_INVALID_ARGUMENT;
    if ((!push || out != in) && overlaps(out, in, bytes)) return AR4J_ERROR_INVALID_ARGUMENT;
    if (overlaps(out, residual, bytes)) return AR4J_ERROR_INVALID_ARGUMENT;
    if (residual_out != residual && overlaps(residual_out, residual, bytes)) return AR4J_ERROR_INVALID_ARGUMENT;
    if ((!push || residual_out != in) && overlaps(residual_out, in, bytes)) return AR4J_ERROR_INVALID_ARGUMENT;
    {
        const uintptr_t w = reinterpret_cast<uintptr_t>(weight);
        const uintptr_t o = reinterpret_cast<uintptr_t>(out), ro = reinterpret_cast<uintptr_t>(residual_out);
        if ((w < o + bytes && o < w + row_bytes) || (w < ro + bytes && ro < w + row_bytes)) {
            return AR4J_ERROR_INVALID_ARGUMENT;
        }
    }
    ContextUse use(ctx);
    if (!use.owned) return AR4J_ERROR_CONCURRENT_USE;
    int status = launch_failure(ctx);
    if (status != AR4J_SUCCESS) return status;
    status = check_device(ctx);
    if (status != AR4J_SUCCESS) return status;
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    ResolvedInput input;  // the push kernel reads its own input directly: no slot
    if (!push) {
        status = resolve_input(ctx, in, bytes, s, &input);  // last: it may record a graph input
        if (status != AR4J_SUCCESS) return status;
    }

    ar4j::FusedParams f;
    f.p = launch_params(ctx, in, out, bytes, input.inputs, input.offset);
    f.residual = static_cast<const uint4 *>(residual);
    f.weight = static_cast<const uint4 *>(weight);
    f.residual_out = static_cast<uint4 *>(residual_out);
    f.rows = static_cast<int64_t>(rows);
    f.row_packs = static_cast<int64_t>(row_bytes / 16);
    f.hidden = static_cast<int64_t>(hidden);
    f.eps = eps;
    // The grid-wide push phase reads any pack of the input from any block, while a row's owner
    // block may already be writing that row's outputs: only when no output overlaps the input
    // (the row-owner kernel otherwise; both give the same bits and keep the same buffer protocol,
    // so ranks need not agree on this choice).
    if (overlaps(out, in, bytes) || overlaps(residual_out, in, bytes)) f.p.variants &= ~ar4j::kVariantFusedGridPush;
    // ONE_STAGE: a block per row, up to the context's 1-/2-stage grid limit (agreed by every rank).
    const int blocks = rows < static_cast<size_t>(ctx->max_blocks) ? static_cast<int>(rows) : ctx->max_blocks;

    // f.p.variants: kVariantFusedGridPush (cleared above for a call whose outputs overlap its
    // input) and kVariantPushClearOnRead pick the push kernel's instance.
    const Instances *k = instances_for(dtype, ctx->world_size);
    FusedKernel kernel = nullptr;
    if (k != nullptr) kernel = push ? k->fused_push[fused_push_index(f.p.variants)] : k->fused_one_stage;
    const unsigned grid = push ? static_cast<unsigned>(ar4j::kPushBlocks) : static_cast<unsigned>(blocks);
    return launch_and_finish(ctx, input, kernel, grid, static_cast<unsigned>(ar4j::kNormThreads), s, f);
}
