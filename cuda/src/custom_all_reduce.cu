// libar4j_custom_ar: the host side of the C ABI in include/ar4j/custom_all_reduce.h.
// Validation, registration tables, graph-input bookkeeping and kernel launches. No policy:
// the caller names the algorithm.

#include <algorithm>
#include <atomic>
#include <mutex>
#include <cstdint>
#include <cmath>
#include <cstring>
#include <new>
#include <vector>

#include "ar4j/custom_all_reduce.h"
#include "kernels.cuh"
#include "fused_kernels.cuh"
#include "fused_one_stage.cuh"

#define AR4J_API extern "C" __attribute__((visibility("default")))

namespace {

using ar4j::kMaxBlocks;
using ar4j::kMaxRanks;
using ar4j::Params;
using ar4j::RankPtrs;
using ar4j::Signal;

static_assert(AR4J_MAX_RANKS == kMaxRanks, "header and kernels disagree on the rank limit");
static_assert(AR4J_MAX_BLOCKS == kMaxBlocks, "header and kernels disagree on the block limit");
static_assert(sizeof(RankPtrs) == 64, "RankPtrs layout");
static_assert(AR4J_PUSH_MAX_BYTES == ar4j::kPushMaxBytes, "header and kernels disagree on the push limit");
static_assert(ar4j::kPushBlocks <= kMaxBlocks, "push grid exceeds the signal layout");

struct Registration {
    uintptr_t base;  // local pointer
    size_t bytes;
    int slot;
};

struct PendingInput {
    const void *local;
    int slot;
};

bool valid_world_size(int32_t ws) { return ws == 2 || ws == 4 || ws == 6 || ws == 8; }

bool aligned16(const void *p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

size_t dtype_size(int32_t dtype) {
    switch (dtype) {
        case AR4J_DTYPE_FLOAT32: return 4;
        case AR4J_DTYPE_FLOAT16: return 2;
        case AR4J_DTYPE_BFLOAT16: return 2;
        default: return 0;
    }
}

}  // namespace

struct ar4j_context {
    int device = -1;
    int rank = 0;
    int world_size = 0;
    Signal *self = nullptr;
    Signal *peers[kMaxRanks] = {};
    size_t max_bytes = 0;
    int max_buffers = 0;
    RankPtrs *slots = nullptr;  // device array [max_buffers]
    int used_slots = 0;
    std::vector<Registration> registrations;  // sorted by base
    std::vector<PendingInput> pending;
    // Host-mapped: [0] this rank's timeout record, [1] the first poison value its kernels saw or set.
    unsigned long long *error_host = nullptr;
    unsigned long long *error_device = nullptr;  // its device view
    uint64_t deadline_ns = 0;
    int max_blocks = 0;  // set at create: one block per SM, at most AR4J_MAX_BLOCKS
    int threads = 512;
    int last_cuda_error = 0;
    std::atomic<bool> failed{false};  // this rank's kernels timed out
    bool launched = false;  // the first ar4j_all_reduce was accepted: geometry and seeds are frozen
    bool pdl = false;       // ar4j_set_pdl
    bool pdl_capable = false;  // compute capability >= 9.0 and the kernels built for it
    // Geometry agreement (ar4j_check_geometry): 0 unchecked, 1 agreed, 2 mismatch.
    std::atomic<int> geometry_state{0};
    std::atomic<int> mismatch_peer{-1};
    std::atomic<unsigned long long> mismatch_word{0};
    // Host-side failure state, readable from any thread.
    std::atomic<bool> poisoned{false};
    std::atomic<bool> in_call{false};  // an entry point that changes the context is running
    // Side channel for host copies that must not wait for the kernels (geometry, poison, reads):
    // a private non-blocking stream, pinned staging, one user at a time.
    std::mutex side_mutex;
    cudaStream_t side = nullptr;
    unsigned long long *staging = nullptr;  // pinned, kStagingWords words
};

namespace {

// CUDA error of the last failed ar4j_context_create on this thread (no context to hold it).
thread_local int create_cuda_error = 0;

int cuda_failed(ar4j_context *ctx, cudaError_t e) {
    if (ctx != nullptr) {
        ctx->last_cuda_error = static_cast<int>(e);
    } else {
        create_cuda_error = static_cast<int>(e);
    }
    return AR4J_ERROR_CUDA;
}

// Restores the caller's current device on scope exit.
struct DeviceScope {
    int previous = -1;
    bool ok = false;
    cudaError_t error = cudaSuccess;
    explicit DeviceScope(int device) {
        error = cudaGetDevice(&previous);
        if (error != cudaSuccess) return;
        if (previous != device) error = cudaSetDevice(device);
        ok = error == cudaSuccess;
    }
    ~DeviceScope() {
        if (ok && previous >= 0) cudaSetDevice(previous);
    }
};

// Finds the registration holding [p, p + bytes); nullptr if none holds p.
const Registration *find_registration(const ar4j_context *ctx, const void *p) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    const auto &regs = ctx->registrations;
    auto it = std::upper_bound(regs.begin(), regs.end(), a,
                               [](uintptr_t v, const Registration &r) { return v < r.base; });
    if (it == regs.begin()) return nullptr;
    --it;
    if (a >= it->base && a - it->base < it->bytes) return &*it;
    return nullptr;
}

// Launches kernel<<<blocks, threads>>>(p) on stream, with programmatic stream serialization
// (PDL) when asked: the kernels call griddepcontrol.wait before their first dependent access.
template <typename Kernel, typename P>
cudaError_t launch_kernel(Kernel kernel, int blocks, int threads, cudaStream_t stream, bool pdl, const P &p) {
    if (!pdl) {
        kernel<<<blocks, threads, 0, stream>>>(p);
        return cudaGetLastError();
    }
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(static_cast<unsigned>(blocks));
    config.blockDim = dim3(static_cast<unsigned>(threads));
    config.dynamicSmemBytes = 0;
    config.stream = stream;
    cudaLaunchAttribute attribute[1];
    attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute[0].val.programmaticStreamSerializationAllowed = 1;
    config.attrs = attribute;
    config.numAttrs = 1;
    return cudaLaunchKernelEx(&config, kernel, p);
}

template <typename T, int WS>
cudaError_t launch_typed(int32_t algorithm, bool in_place, const Params &p, int blocks, int threads,
                         cudaStream_t stream, bool pdl) {
    if (algorithm == AR4J_ALGO_ONE_STAGE) {
        if (in_place) return launch_kernel(ar4j::one_stage_kernel<T, WS, true>, blocks, threads, stream, pdl, p);
        return launch_kernel(ar4j::one_stage_kernel<T, WS, false>, blocks, threads, stream, pdl, p);
    }
    if (algorithm == AR4J_ALGO_TWO_STAGE) {
        return launch_kernel(ar4j::two_stage_kernel<T, WS>, blocks, threads, stream, pdl, p);
    }
    return launch_kernel(ar4j::push_kernel<T, WS>, ar4j::kPushBlocks, ar4j::kPushThreads, stream, pdl, p);
}

template <typename T>
cudaError_t launch_ws(int ws, int32_t algorithm, bool in_place, const Params &p, int blocks, int threads,
                      cudaStream_t stream, bool pdl) {
    switch (ws) {
        case 2: return launch_typed<T, 2>(algorithm, in_place, p, blocks, threads, stream, pdl);
        case 4: return launch_typed<T, 4>(algorithm, in_place, p, blocks, threads, stream, pdl);
        case 6: return launch_typed<T, 6>(algorithm, in_place, p, blocks, threads, stream, pdl);
        case 8: return launch_typed<T, 8>(algorithm, in_place, p, blocks, threads, stream, pdl);
        default: return cudaErrorInvalidValue;  // unreachable: validated at create
    }
}

template <typename T, int WS>
cudaError_t preload_typed() {
    cudaFuncAttributes attr;
    cudaError_t e = cudaFuncGetAttributes(&attr, ar4j::push_kernel<T, WS>);
    if (e == cudaSuccess) e = cudaFuncGetAttributes(&attr, ar4j::push_rmsnorm_kernel<T, WS>);
    if (e == cudaSuccess) e = cudaFuncGetAttributes(&attr, ar4j::one_stage_rmsnorm_kernel<T, WS>);
    if (e == cudaSuccess) e = cudaFuncGetAttributes(&attr, ar4j::one_stage_kernel<T, WS, true>);
    if (e == cudaSuccess) e = cudaFuncGetAttributes(&attr, ar4j::one_stage_kernel<T, WS, false>);
    if (e == cudaSuccess) e = cudaFuncGetAttributes(&attr, ar4j::two_stage_kernel<T, WS>);
    return e;
}

template <int WS>
cudaError_t preload_ws() {
    cudaError_t e = preload_typed<float, WS>();
    if (e == cudaSuccess) e = preload_typed<__half, WS>();
    if (e == cudaSuccess) e = preload_typed<__nv_bfloat16, WS>();
    return e;
}

cudaError_t preload_kernels(int ws) {
    switch (ws) {
        case 2: return preload_ws<2>();
        case 4: return preload_ws<4>();
        case 6: return preload_ws<6>();
        default: return preload_ws<8>();
    }
}

// Marks an entry point that changes the context as running; a second one at the same time
// (another host thread) is refused with AR4J_ERROR_CONCURRENT_USE instead of racing.
struct CallGuard {
    ar4j_context *ctx;
    bool owned;
    explicit CallGuard(ar4j_context *c) : ctx(c), owned(!c->in_call.exchange(true, std::memory_order_acquire)) {}
    ~CallGuard() {
        if (owned) ctx->in_call.store(false, std::memory_order_release);
    }
};

// The launch geometry word a context publishes in its Signal: a tag, the 1-/2-stage
// (max_blocks, threads) and the push grid this library was built with.
unsigned long long geometry_word(int max_blocks, int threads) {
    return (0xA4ull << 56) | ((unsigned long long)(max_blocks & 0xffff) << 40) |
           ((unsigned long long)(threads & 0xffff) << 24) | ((unsigned long long)(ar4j::kPushBlocks & 0xfff) << 12) |
           (unsigned long long)(ar4j::kPushThreads & 0xfff);
}

constexpr int kStagingWords = 2 * kMaxRanks;

// The side-channel copies may run while this thread captures a stream (the first call of a
// context inside a graph capture checks the geometry) or while another thread captures in
// global mode (a watchdog's ar4j_poison): relaxed capture mode for this thread allows them.
struct RelaxedCapture {
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    RelaxedCapture() { cudaThreadExchangeStreamCaptureMode(&mode); }
    ~RelaxedCapture() { cudaThreadExchangeStreamCaptureMode(&mode); }
};

// Copies between host staging and device words on the side stream and waits for the copies
// only (never for the kernels: the stream is non-blocking). Caller holds side_mutex.
cudaError_t side_copy(ar4j_context *ctx, void *dst, const void *src, size_t bytes) {
    cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, ctx->side);
    if (e == cudaSuccess) e = cudaStreamSynchronize(ctx->side);
    return e;
}

cudaError_t publish_geometry(ar4j_context *ctx) {
    std::lock_guard<std::mutex> lock(ctx->side_mutex);
    RelaxedCapture relaxed;
    DeviceScope scope(ctx->device);
    if (!scope.ok) return scope.error;
    ctx->staging[0] = geometry_word(ctx->max_blocks, ctx->threads);
    return side_copy(ctx, &ctx->self->geometry, ctx->staging, sizeof(unsigned long long));
}

// Writes `value` into the poison word of every rank's Signal that holds none yet.
cudaError_t poison_all(ar4j_context *ctx, unsigned long long value) {
    std::lock_guard<std::mutex> lock(ctx->side_mutex);
    RelaxedCapture relaxed;
    DeviceScope scope(ctx->device);
    if (!scope.ok) return scope.error;
    const int ws = ctx->world_size;
    cudaError_t e = cudaSuccess;
    for (int r = 0; r < ws && e == cudaSuccess; ++r) {
        e = cudaMemcpyAsync(ctx->staging + r, &ctx->peers[r]->poison, sizeof(unsigned long long), cudaMemcpyDefault,
                            ctx->side);
    }
    if (e == cudaSuccess) e = cudaStreamSynchronize(ctx->side);
    for (int r = 0; r < ws && e == cudaSuccess; ++r) {
        ctx->staging[kMaxRanks + r] = value;
        if (ctx->staging[r] == 0) {
            e = cudaMemcpyAsync(&ctx->peers[r]->poison, ctx->staging + kMaxRanks + r, sizeof(unsigned long long),
                                cudaMemcpyDefault, ctx->side);
        }
    }
    if (e == cudaSuccess) e = cudaStreamSynchronize(ctx->side);
    volatile unsigned long long *seen = ctx->error_host + 1;
    if (*seen == 0) *seen = ctx->staging[ctx->rank] != 0 ? ctx->staging[ctx->rank] : value;
    ctx->poisoned.store(true);
    return e;
}

}  // namespace

AR4J_API const char *ar4j_status_name(int status) {
    switch (status) {
        case AR4J_SUCCESS: return "AR4J_SUCCESS";
        case AR4J_ERROR_NULL_POINTER: return "AR4J_ERROR_NULL_POINTER";
        case AR4J_ERROR_WORLD_SIZE: return "AR4J_ERROR_WORLD_SIZE";
        case AR4J_ERROR_RANK: return "AR4J_ERROR_RANK";
        case AR4J_ERROR_SIZE_NOT_MULTIPLE_OF_16: return "AR4J_ERROR_SIZE_NOT_MULTIPLE_OF_16";
        case AR4J_ERROR_MISALIGNED: return "AR4J_ERROR_MISALIGNED";
        case AR4J_ERROR_EMPTY: return "AR4J_ERROR_EMPTY";
        case AR4J_ERROR_TOO_LARGE: return "AR4J_ERROR_TOO_LARGE";
        case AR4J_ERROR_NOT_REGISTERED: return "AR4J_ERROR_NOT_REGISTERED";
        case AR4J_ERROR_DTYPE: return "AR4J_ERROR_DTYPE";
        case AR4J_ERROR_ALGORITHM: return "AR4J_ERROR_ALGORITHM";
        case AR4J_ERROR_DEADLINE: return "AR4J_ERROR_DEADLINE";
        case AR4J_ERROR_CAPACITY: return "AR4J_ERROR_CAPACITY";
        case AR4J_ERROR_ALREADY_REGISTERED: return "AR4J_ERROR_ALREADY_REGISTERED";
        case AR4J_ERROR_GRAPH_COUNT: return "AR4J_ERROR_GRAPH_COUNT";
        case AR4J_ERROR_WRONG_DEVICE: return "AR4J_ERROR_WRONG_DEVICE";
        case AR4J_ERROR_CUDA: return "AR4J_ERROR_CUDA";
        case AR4J_ERROR_PEER_TIMEOUT: return "AR4J_ERROR_PEER_TIMEOUT";
        case AR4J_ERROR_LAUNCH_CONFIG: return "AR4J_ERROR_LAUNCH_CONFIG";
        case AR4J_ERROR_INVALID_ARGUMENT: return "AR4J_ERROR_INVALID_ARGUMENT";
        case AR4J_ERROR_GEOMETRY_MISMATCH: return "AR4J_ERROR_GEOMETRY_MISMATCH";
        case AR4J_ERROR_POISONED: return "AR4J_ERROR_POISONED";
        case AR4J_ERROR_CONCURRENT_USE: return "AR4J_ERROR_CONCURRENT_USE";
        case AR4J_ERROR_ALREADY_LAUNCHED: return "AR4J_ERROR_ALREADY_LAUNCHED";
        case AR4J_ERROR_NOT_FUSED: return "AR4J_ERROR_NOT_FUSED";
        case AR4J_ERROR_HIDDEN_TOO_LARGE: return "AR4J_ERROR_HIDDEN_TOO_LARGE";
        case AR4J_ERROR_ROW_NOT_MULTIPLE_OF_16: return "AR4J_ERROR_ROW_NOT_MULTIPLE_OF_16";
        default: return "AR4J_UNKNOWN_STATUS";
    }
}

AR4J_API const char *ar4j_status_message(int status) {
    switch (status) {
        case AR4J_SUCCESS: return "success";
        case AR4J_ERROR_NULL_POINTER: return "a required pointer argument was NULL";
        case AR4J_ERROR_WORLD_SIZE: return "world size must be 2, 4, 6 or 8";
        case AR4J_ERROR_RANK: return "rank must be in [0, world size)";
        case AR4J_ERROR_SIZE_NOT_MULTIPLE_OF_16:
            return "element count times element size must be a multiple of 16 bytes";
        case AR4J_ERROR_MISALIGNED: return "device pointers must be 16-byte aligned";
        case AR4J_ERROR_EMPTY: return "element count must be at least 1";
        case AR4J_ERROR_TOO_LARGE:
            return "the byte size exceeds the registered buffer (ONE_STAGE, also fused), the context's maximum "
                   "(max_bytes, TWO_STAGE) or AR4J_PUSH_MAX_BYTES (ONE_SHOT_PUSH, also fused)";
        case AR4J_ERROR_NOT_REGISTERED:
            return "the input lies in no registered buffer and the stream is not capturing a graph";
        case AR4J_ERROR_DTYPE: return "dtype must be AR4J_DTYPE_FLOAT32, AR4J_DTYPE_FLOAT16 or AR4J_DTYPE_BFLOAT16";
        case AR4J_ERROR_ALGORITHM:
            return "algorithm must be AR4J_ALGO_ONE_STAGE, AR4J_ALGO_TWO_STAGE or AR4J_ALGO_ONE_SHOT_PUSH";
        case AR4J_ERROR_DEADLINE: return "the deadline must be greater than zero nanoseconds";
        case AR4J_ERROR_CAPACITY: return "the registration table is full (max_buffers)";
        case AR4J_ERROR_ALREADY_REGISTERED: return "the buffer overlaps a registered buffer";
        case AR4J_ERROR_GRAPH_COUNT:
            return "the number of graph inputs registered differs from the number recorded during capture";
        case AR4J_ERROR_WRONG_DEVICE: return "the calling thread's current CUDA device is not the context's device";
        case AR4J_ERROR_CUDA: return "a CUDA runtime call failed (see ar4j_last_cuda_error)";
        case AR4J_ERROR_PEER_TIMEOUT:
            return "a kernel gave up waiting for a peer; the context is unusable (see ar4j_read_timeout)";
        case AR4J_ERROR_LAUNCH_CONFIG:
            return "blocks must be in [1, 128] and threads a multiple of 32 in [32, 1024]";
        case AR4J_ERROR_INVALID_ARGUMENT:
            return "an argument is outside its documented range, or buffers overlap where the call forbids it (in "
                   "ar4j_all_reduce_residual_rmsnorm with AR4J_ALGO_ONE_STAGE no output may overlap the input, "
                   "which the peers read during the whole launch: copy the input elsewhere for an in-place call)";
        case AR4J_ERROR_GEOMETRY_MISMATCH:
            return "a peer publishes a different launch geometry (blocks, threads or push grid) or none; every rank "
                   "must call ar4j_set_launch_config with the same values before the group's first call (see "
                   "ar4j_read_failure)";
        case AR4J_ERROR_POISONED:
            return "the group is poisoned: a rank gave up, aborted or detected misuse; outputs of its kernels are NaN; "
                   "dispose the context and make a new group (see ar4j_read_failure)";
        case AR4J_ERROR_CONCURRENT_USE:
            return "another thread is inside a call on this context; a context is used by one host thread at a time";
        case AR4J_ERROR_ALREADY_LAUNCHED:
            return "the context has launched already; launch geometry and debug seeds are accepted only before the "
                   "first all-reduce";
        case AR4J_ERROR_NOT_FUSED:
            return "the algorithm has no fused all-reduce + residual + RMSNorm kernel (AR4J_ALGO_ONE_SHOT_PUSH and "
                   "AR4J_ALGO_ONE_STAGE have one): call ar4j_all_reduce, then ar4j_residual_rmsnorm";
        case AR4J_ERROR_HIDDEN_TOO_LARGE:
            return "hidden exceeds AR4J_FUSED_MAX_HIDDEN, the largest row the fused kernel normalises";
        case AR4J_ERROR_ROW_NOT_MULTIPLE_OF_16:
            return "hidden times the element size must be a multiple of 16 bytes for the fused kernel";
        default: return "unknown status code";
    }
}

AR4J_API int ar4j_abi_version(void) { return 500; }

AR4J_API size_t ar4j_signal_size(size_t max_bytes) {
    return ar4j::push_area_offset(max_bytes) + ar4j::kPushAreaBytes;
}

AR4J_API int ar4j_context_create(ar4j_context **out, const void *const *signals, int32_t rank, int32_t world_size,
                                 size_t max_bytes, int32_t max_buffers, uint64_t deadline_ns) {
    if (out == nullptr || signals == nullptr) return AR4J_ERROR_NULL_POINTER;
    *out = nullptr;
    if (!valid_world_size(world_size)) return AR4J_ERROR_WORLD_SIZE;
    if (rank < 0 || rank >= world_size) return AR4J_ERROR_RANK;
    for (int r = 0; r < world_size; ++r) {
        if (signals[r] == nullptr) return AR4J_ERROR_NULL_POINTER;
        if (!aligned16(signals[r])) return AR4J_ERROR_MISALIGNED;
    }
    if (deadline_ns == 0) return AR4J_ERROR_DEADLINE;
    if (max_buffers < 1 || max_bytes == 0 || (max_bytes & 15u) != 0) return AR4J_ERROR_INVALID_ARGUMENT;

    int device = -1;
    cudaError_t e = cudaGetDevice(&device);
    if (e != cudaSuccess) return cuda_failed(nullptr, e);

    ar4j_context *ctx = new (std::nothrow) ar4j_context();
    if (ctx == nullptr) return AR4J_ERROR_INVALID_ARGUMENT;
    ctx->device = device;
    // One block per SM (all co-resident), at most the signal layout's limit. Measured on 2x H200
    // (benchmarks/RESULTS.md): 128 blocks of 512 threads move 64 MiB in 208 us against 246 us with
    // 36 blocks, with no change at small sizes, where the grid is sized by the work.
    int sms = 0;
    e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (e != cudaSuccess) {
        delete ctx;
        return cuda_failed(nullptr, e);
    }
    ctx->max_blocks = sms < 1 ? 1 : (sms > kMaxBlocks ? kMaxBlocks : sms);
    ctx->rank = rank;
    ctx->world_size = world_size;
    ctx->max_bytes = max_bytes;
    ctx->max_buffers = max_buffers;
    ctx->deadline_ns = deadline_ns;
    for (int r = 0; r < world_size; ++r) {
        ctx->peers[r] = static_cast<Signal *>(const_cast<void *>(signals[r]));
    }
    ctx->self = ctx->peers[rank];

    int major = 0;
    e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    if (e == cudaSuccess && major >= 9) {
        // PDL needs griddepcontrol in the kernels, i.e. machine code built for sm_90 or newer.
        cudaFuncAttributes attr;
        e = cudaFuncGetAttributes(&attr, ar4j::push_kernel<float, 2>);
        if (e == cudaSuccess) ctx->pdl_capable = attr.binaryVersion >= 90;
    }
    // Loads every kernel of this world size now. Under CUDA's lazy loading (the default since
    // CUDA 12.2) a kernel's first launch loads it, and a load can wait for running kernels: with
    // ranks sharing a GPU, one rank's first launch of a kernel then waits for a peer's spinning
    // kernel, which waits for this rank's launch, until the deadline (seen on one H200: the first
    // fused call of a new dtype timed out).
    if (e == cudaSuccess) e = preload_kernels(world_size);
    if (e == cudaSuccess) e = cudaMalloc(&ctx->slots, sizeof(RankPtrs) * static_cast<size_t>(max_buffers));
    if (e == cudaSuccess) {
        e = cudaHostAlloc(&ctx->error_host, 2 * sizeof(unsigned long long), cudaHostAllocMapped);
    }
    if (e == cudaSuccess) {
        ctx->error_host[0] = 0;
        ctx->error_host[1] = 0;
        e = cudaHostGetDevicePointer(reinterpret_cast<void **>(&ctx->error_device), ctx->error_host, 0);
    }
    if (e == cudaSuccess) e = cudaHostAlloc(&ctx->staging, kStagingWords * sizeof(unsigned long long), cudaHostAllocDefault);
    // A private stream, so that unrelated work on the device (other ranks' kernels sharing it,
    // say) is not waited for; the highest priority, so that a poison is not queued behind work.
    int least = 0, greatest = 0;
    if (e == cudaSuccess) e = cudaDeviceGetStreamPriorityRange(&least, &greatest);
    if (e == cudaSuccess) e = cudaStreamCreateWithPriority(&ctx->side, cudaStreamNonBlocking, greatest);
    if (e == cudaSuccess) {
        // Launch accounting and push state to zero, push buffers to the sentinel, this rank's
        // geometry published; peers write into the push buffers only after every rank created
        // its context.
        e = cudaMemsetAsync(ctx->self->push, 0, sizeof(ctx->self->push), ctx->side);
        if (e == cudaSuccess) e = cudaMemsetAsync(ctx->self->blocks, 0, sizeof(ctx->self->blocks), ctx->side);
        if (e == cudaSuccess) {
            uint32_t *area = reinterpret_cast<uint32_t *>(reinterpret_cast<char *>(ctx->self) +
                                                          ar4j::push_area_offset(max_bytes));
            ar4j::fill_words<<<256, 256, 0, ctx->side>>>(area, ar4j::kPushAreaBytes / 4, ar4j::kSentinelWord);
            e = cudaGetLastError();
        }
        if (e == cudaSuccess) e = cudaStreamSynchronize(ctx->side);
        if (e == cudaSuccess) e = publish_geometry(ctx);
    }
    if (e != cudaSuccess) {
        ar4j_context_destroy(ctx);
        return cuda_failed(nullptr, e);
    }
    *out = ctx;
    return AR4J_SUCCESS;
}

AR4J_API int ar4j_context_destroy(ar4j_context *ctx) {
    if (ctx == nullptr) return AR4J_SUCCESS;
    int status = AR4J_SUCCESS;
    {
        DeviceScope scope(ctx->device);
        if (ctx->slots != nullptr && cudaFree(ctx->slots) != cudaSuccess) status = AR4J_ERROR_CUDA;
        if (ctx->error_host != nullptr && cudaFreeHost(ctx->error_host) != cudaSuccess) status = AR4J_ERROR_CUDA;
        if (ctx->staging != nullptr && cudaFreeHost(ctx->staging) != cudaSuccess) status = AR4J_ERROR_CUDA;
        if (ctx->side != nullptr && cudaStreamDestroy(ctx->side) != cudaSuccess) status = AR4J_ERROR_CUDA;
    }
    delete ctx;
    return status;
}

AR4J_API int ar4j_set_launch_config(ar4j_context *ctx, int32_t max_blocks, int32_t threads) {
    if (ctx == nullptr) return AR4J_ERROR_NULL_POINTER;
    if (max_blocks < 1 || max_blocks > kMaxBlocks || threads < 32 || threads > AR4J_MAX_THREADS ||
        (threads % 32) != 0) {
        return AR4J_ERROR_LAUNCH_CONFIG;
    }
    CallGuard guard(ctx);
    if (!guard.owned) return AR4J_ERROR_CONCURRENT_USE;
    if (ctx->launched || ctx->geometry_state.load() != 0) return AR4J_ERROR_ALREADY_LAUNCHED;
    ctx->max_blocks = max_blocks;
    ctx->threads = threads;
    cudaError_t e = publish_geometry(ctx);
    if (e != cudaSuccess) return cuda_failed(ctx, e);
    return AR4J_SUCCESS;
}

static int add_slot(ar4j_context *ctx, const void *const *ptrs, int *slot_out) {
    if (ctx->used_slots >= ctx->max_buffers) return AR4J_ERROR_CAPACITY;
    RankPtrs host{};
    for (int r = 0; r < ctx->world_size; ++r) host.ptrs[r] = ptrs != nullptr ? ptrs[r] : nullptr;
    const int slot = ctx->used_slots;
    if (ptrs != nullptr) {
        cudaError_t e = cudaMemcpy(ctx->slots + slot, &host, sizeof(RankPtrs), cudaMemcpyHostToDevice);
        if (e != cudaSuccess) return cuda_failed(ctx, e);
    }
    ctx->used_slots++;
    *slot_out = slot;
    return AR4J_SUCCESS;
}

AR4J_API int ar4j_register_buffer(ar4j_context *ctx, const void *const *ptrs, size_t bytes) {
    if (ctx == nullptr || ptrs == nullptr) return AR4J_ERROR_NULL_POINTER;
    for (int r = 0; r < ctx->world_size; ++r) {
        if (ptrs[r] == nullptr) return AR4J_ERROR_NULL_POINTER;
        if (!aligned16(ptrs[r])) return AR4J_ERROR_MISALIGNED;
    }
    if (bytes == 0) return AR4J_ERROR_EMPTY;
    CallGuard guard(ctx);
    if (!guard.owned) return AR4J_ERROR_CONCURRENT_USE;
    const uintptr_t base = reinterpret_cast<uintptr_t>(ptrs[ctx->rank]);
    if (base + bytes < base) return AR4J_ERROR_TOO_LARGE;
    for (const Registration &r : ctx->registrations) {
        if (base < r.base + r.bytes && r.base < base + bytes) return AR4J_ERROR_ALREADY_REGISTERED;
    }
    int slot = -1;
    int status = add_slot(ctx, ptrs, &slot);
    if (status != AR4J_SUCCESS) return status;
    Registration reg{base, bytes, slot};
    auto it = std::upper_bound(ctx->registrations.begin(), ctx->registrations.end(), reg,
                               [](const Registration &a, const Registration &b) { return a.base < b.base; });
    ctx->registrations.insert(it, reg);
    return AR4J_SUCCESS;
}

AR4J_API int ar4j_registered_count(const ar4j_context *ctx, int32_t *out) {
    if (ctx == nullptr || out == nullptr) return AR4J_ERROR_NULL_POINTER;
    *out = ctx->used_slots;
    return AR4J_SUCCESS;
}

// The failure this rank already knows of without a device access: its own kernels' timeout
// record, a poison they saw or set (host-mapped words), or one set from the host.
static int known_failure(ar4j_context *ctx) {
    const volatile unsigned long long *w = ctx->error_host;
    if (w[0] != 0) ctx->failed.store(true, std::memory_order_relaxed);
    if (ctx->failed.load(std::memory_order_relaxed)) return AR4J_ERROR_PEER_TIMEOUT;
    if (w[1] != 0) ctx->poisoned.store(true);
    if (ctx->poisoned.load(std::memory_order_relaxed)) return AR4J_ERROR_POISONED;
    return AR4J_SUCCESS;
}

// Compares every peer's published geometry with this context's, once. Caller holds the CallGuard.
static int check_geometry(ar4j_context *ctx) {
    const int state = ctx->geometry_state.load();
    if (state == 1) return AR4J_SUCCESS;
    if (state == 2) return AR4J_ERROR_GEOMETRY_MISMATCH;
    const unsigned long long mine = geometry_word(ctx->max_blocks, ctx->threads);
    int bad = -1;
    unsigned long long theirs = 0;
    {
        std::lock_guard<std::mutex> lock(ctx->side_mutex);
        RelaxedCapture relaxed;
        DeviceScope scope(ctx->device);
        if (!scope.ok) return cuda_failed(ctx, scope.error);
        cudaError_t e = cudaSuccess;
        for (int r = 0; r < ctx->world_size && e == cudaSuccess; ++r) {
            e = cudaMemcpyAsync(ctx->staging + r, &ctx->peers[r]->geometry, sizeof(unsigned long long),
                                cudaMemcpyDefault, ctx->side);
        }
        if (e == cudaSuccess) e = cudaStreamSynchronize(ctx->side);
        if (e != cudaSuccess) return cuda_failed(ctx, e);
        for (int r = 0; r < ctx->world_size; ++r) {
            if (ctx->staging[r] != mine) {
                bad = r;
                theirs = ctx->staging[r];
                break;
            }
        }
    }
    if (bad < 0) {
        ctx->geometry_state.store(1);
        return AR4J_SUCCESS;
    }
    ctx->mismatch_peer.store(bad);
    ctx->mismatch_word.store(theirs);
    ctx->geometry_state.store(2);
    // Peers that checked before a late publication would otherwise wait out their deadline.
    cudaError_t e = poison_all(ctx, ar4j::make_poison(ctx->rank, AR4J_POISON_GEOMETRY, bad, 0xffff));
    if (e != cudaSuccess) ctx->last_cuda_error = static_cast<int>(e);
    return AR4J_ERROR_GEOMETRY_MISMATCH;
}

// What every launch checks first, with the CallGuard held: a geometry mismatch (named as such
// on every call; it also poisoned the group), a failure this rank already knows of, and the
// peers' geometry on the first call.
static int launch_failure(ar4j_context *ctx) {
    if (ctx->geometry_state.load(std::memory_order_relaxed) == 2) return AR4J_ERROR_GEOMETRY_MISMATCH;
    int failure = known_failure(ctx);
    if (failure != AR4J_SUCCESS) return failure;
    if (ctx->geometry_state.load(std::memory_order_relaxed) != 1) return check_geometry(ctx);
    return AR4J_SUCCESS;
}

AR4J_API int ar4j_check_geometry(ar4j_context *ctx) {
    if (ctx == nullptr) return AR4J_ERROR_NULL_POINTER;
    CallGuard guard(ctx);
    if (!guard.owned) return AR4J_ERROR_CONCURRENT_USE;
    return check_geometry(ctx);
}

// The input pointer set of a ONE_STAGE or TWO_STAGE call (the kernels read every rank's input
// through it): the registration holding in (AR4J_ERROR_TOO_LARGE if [in, in + bytes) runs past its
// end), or, while the stream captures a graph, a new slot recorded as a graph input (its pointers
// come with ar4j_register_graph_inputs); else AR4J_ERROR_NOT_REGISTERED. Caller holds the CallGuard;
// nothing after it may fail but the launch (a recorded slot stays pending).
static int resolve_input(ar4j_context *ctx, const void *in, size_t bytes, cudaStream_t stream,
                         const RankPtrs **inputs, size_t *offset) {
    const Registration *reg = find_registration(ctx, in);
    if (reg != nullptr) {
        const size_t at = reinterpret_cast<uintptr_t>(in) - reg->base;
        if (bytes > reg->bytes - at) return AR4J_ERROR_TOO_LARGE;
        *offset = at;
        *inputs = ctx->slots + reg->slot;
        return AR4J_SUCCESS;
    }
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    cudaError_t e = cudaStreamIsCapturing(stream, &capture);
    if (e != cudaSuccess) return cuda_failed(ctx, e);
    if (capture != cudaStreamCaptureStatusActive) return AR4J_ERROR_NOT_REGISTERED;
    int slot = -1;
    int status = add_slot(ctx, nullptr, &slot);  // filled by ar4j_register_graph_inputs
    if (status != AR4J_SUCCESS) return status;
    ctx->pending.push_back(PendingInput{in, slot});
    *offset = 0;
    *inputs = ctx->slots + slot;
    return AR4J_SUCCESS;
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
    return p;
}

AR4J_API int ar4j_all_reduce(ar4j_context *ctx, int32_t algorithm, int32_t dtype, const void *in, void *out,
                             size_t count, void *stream) {
    if (ctx == nullptr || in == nullptr || out == nullptr) return AR4J_ERROR_NULL_POINTER;
    if (algorithm != AR4J_ALGO_ONE_STAGE && algorithm != AR4J_ALGO_TWO_STAGE &&
        algorithm != AR4J_ALGO_ONE_SHOT_PUSH) {
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
    CallGuard guard(ctx);
    if (!guard.owned) return AR4J_ERROR_CONCURRENT_USE;
    int failure = launch_failure(ctx);
    if (failure != AR4J_SUCCESS) return failure;
    if (algorithm == AR4J_ALGO_TWO_STAGE && bytes > ctx->max_bytes) return AR4J_ERROR_TOO_LARGE;

    if (algorithm == AR4J_ALGO_ONE_SHOT_PUSH && bytes > ar4j::kPushMaxBytes) return AR4J_ERROR_TOO_LARGE;

    const RankPtrs *inputs = nullptr;  // the push kernel reads its own input directly
    size_t offset = 0;
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    if (algorithm != AR4J_ALGO_ONE_SHOT_PUSH) {
        int status = resolve_input(ctx, in, bytes, s, &inputs, &offset);
        if (status != AR4J_SUCCESS) return status;
    }
    int status = check_device(ctx);
    if (status != AR4J_SUCCESS) return status;

    Params p = launch_params(ctx, in, out, bytes, inputs, offset);

    const int64_t work = algorithm == AR4J_ALGO_TWO_STAGE ? (p.npacks + ctx->world_size - 1) / ctx->world_size
                                                          : p.npacks;
    int64_t blocks = (work + ctx->threads - 1) / ctx->threads;
    if (blocks < 1) blocks = 1;
    if (blocks > ctx->max_blocks) blocks = ctx->max_blocks;

    const bool pdl = ctx->pdl && ctx->pdl_capable;
    ctx->launched = true;
    cudaError_t e;
    switch (dtype) {
        case AR4J_DTYPE_FLOAT32:
            e = launch_ws<float>(ctx->world_size, algorithm, in_place, p, (int)blocks, ctx->threads, s, pdl);
            break;
        case AR4J_DTYPE_FLOAT16:
            e = launch_ws<__half>(ctx->world_size, algorithm, in_place, p, (int)blocks, ctx->threads, s, pdl);
            break;
        default:
            e = launch_ws<__nv_bfloat16>(ctx->world_size, algorithm, in_place, p, (int)blocks, ctx->threads, s, pdl);
            break;
    }
    if (e != cudaSuccess) return cuda_failed(ctx, e);
    return AR4J_SUCCESS;
}

AR4J_API int ar4j_graph_pending_count(const ar4j_context *ctx, int32_t *out) {
    if (ctx == nullptr || out == nullptr) return AR4J_ERROR_NULL_POINTER;
    *out = static_cast<int32_t>(ctx->pending.size());
    return AR4J_SUCCESS;
}

AR4J_API int ar4j_graph_pending_inputs(const ar4j_context *ctx, void **out, int32_t n) {
    if (ctx == nullptr || out == nullptr) return AR4J_ERROR_NULL_POINTER;
    if (n < 0 || static_cast<size_t>(n) > ctx->pending.size()) return AR4J_ERROR_INVALID_ARGUMENT;
    for (int32_t i = 0; i < n; ++i) out[i] = const_cast<void *>(ctx->pending[i].local);
    return AR4J_SUCCESS;
}

AR4J_API int ar4j_register_graph_inputs(ar4j_context *ctx, const void *const *ptrs, int32_t n) {
    if (ctx == nullptr || ptrs == nullptr) return AR4J_ERROR_NULL_POINTER;
    CallGuard guard(ctx);
    if (!guard.owned) return AR4J_ERROR_CONCURRENT_USE;
    if (n < 0 || static_cast<size_t>(n) != ctx->pending.size()) return AR4J_ERROR_GRAPH_COUNT;
    const int ws = ctx->world_size;
    for (int32_t i = 0; i < n; ++i) {
        for (int r = 0; r < ws; ++r) {
            const void *p = ptrs[static_cast<size_t>(i) * ws + r];
            if (p == nullptr) return AR4J_ERROR_NULL_POINTER;
            if (!aligned16(p)) return AR4J_ERROR_MISALIGNED;
        }
        if (ptrs[static_cast<size_t>(i) * ws + ctx->rank] != ctx->pending[i].local) {
            return AR4J_ERROR_INVALID_ARGUMENT;  // row i must hold this rank's recorded pointer
        }
    }
    std::vector<RankPtrs> rows(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i) {
        for (int r = 0; r < ws; ++r) rows[i].ptrs[r] = ptrs[static_cast<size_t>(i) * ws + r];
    }
    // Slots of one capture are consecutive unless registrations interleaved; copy per slot.
    for (int32_t i = 0; i < n; ++i) {
        cudaError_t e = cudaMemcpy(ctx->slots + ctx->pending[i].slot, &rows[i], sizeof(RankPtrs),
                                   cudaMemcpyHostToDevice);
        if (e != cudaSuccess) return cuda_failed(ctx, e);
    }
    ctx->pending.clear();
    return AR4J_SUCCESS;
}

AR4J_API int ar4j_read_timeout(ar4j_context *ctx, ar4j_timeout_info *out, int32_t clear) {
    if (ctx == nullptr || out == nullptr) return AR4J_ERROR_NULL_POINTER;
    volatile unsigned long long *w = ctx->error_host;
    const unsigned long long v = *w;
    std::memset(out, 0, sizeof(*out));
    if ((v >> 63) != 0) {
        ctx->failed = true;
        out->timed_out = 1;
        out->peer = static_cast<int32_t>((v >> 56) & 0x7f);
        out->barrier = static_cast<int32_t>((v >> 48) & 0xff);
        out->block = static_cast<int32_t>((v >> 32) & 0xffff);
        out->flag = static_cast<uint32_t>(v & 0xffffffffu);
    }
    if (clear != 0) *w = 0;
    return AR4J_SUCCESS;
}

AR4J_API int ar4j_last_cuda_error(const ar4j_context *ctx) {
    return ctx == nullptr ? create_cuda_error : ctx->last_cuda_error;
}

AR4J_API int ar4j_poison(ar4j_context *ctx, int32_t reason) {
    if (ctx == nullptr) return AR4J_ERROR_NULL_POINTER;
    if (reason < 1 || reason > 255) return AR4J_ERROR_INVALID_ARGUMENT;
    cudaError_t e = poison_all(ctx, ar4j::make_poison(ctx->rank, reason, 0xff, 0xffff));
    if (e != cudaSuccess) return cuda_failed(ctx, e);
    return AR4J_SUCCESS;
}

AR4J_API int ar4j_read_failure(ar4j_context *ctx, ar4j_failure_info *out) {
    if (ctx == nullptr || out == nullptr) return AR4J_ERROR_NULL_POINTER;
    std::memset(out, 0, sizeof(*out));
    unsigned long long word = 0;
    {
        std::lock_guard<std::mutex> lock(ctx->side_mutex);
        RelaxedCapture relaxed;
        DeviceScope scope(ctx->device);
        if (!scope.ok) return cuda_failed(ctx, scope.error);
        cudaError_t e = side_copy(ctx, ctx->staging, &ctx->self->poison, sizeof(unsigned long long));
        if (e != cudaSuccess) return cuda_failed(ctx, e);
        word = ctx->staging[0];
    }
    const volatile unsigned long long *w = ctx->error_host;
    const unsigned long long timeout = w[0];
    if (word == 0) word = w[1];  // set here by ar4j_poison or by a kernel before a copy landed
    out->poison_word = word;
    out->origin_rank = -1;
    out->reason = 0;
    out->peer = -1;
    out->block = -1;
    if ((word >> 63) != 0) {
        ctx->poisoned.store(true);
        out->poisoned = 1;
        out->origin_rank = static_cast<int32_t>((word >> 56) & 0x7f);
        out->reason = static_cast<int32_t>((word >> 48) & 0xff);
        const int peer = static_cast<int>((word >> 40) & 0xff);
        const int block = static_cast<int>(word & 0xffff);
        out->peer = peer == 0xff ? -1 : peer;
        out->block = block == 0xffff ? -1 : block;
    }
    if ((timeout >> 63) != 0) {
        ctx->failed.store(true);
        out->timeout.timed_out = 1;
        out->timeout.peer = static_cast<int32_t>((timeout >> 56) & 0x7f);
        out->timeout.barrier = static_cast<int32_t>((timeout >> 48) & 0xff);
        out->timeout.block = static_cast<int32_t>((timeout >> 32) & 0xffff);
        out->timeout.flag = static_cast<uint32_t>(timeout & 0xffffffffu);
    }
    const int gstate = ctx->geometry_state.load();
    out->geometry_mismatch = gstate == 2 ? 1 : 0;
    out->geometry_peer = gstate == 2 ? ctx->mismatch_peer.load() : -1;
    const unsigned long long g = ctx->mismatch_word.load();
    out->local_max_blocks = ctx->max_blocks;
    out->local_threads = ctx->threads;
    if (gstate == 2 && (g >> 56) == 0xA4) {
        out->peer_max_blocks = static_cast<int32_t>((g >> 40) & 0xffff);
        out->peer_threads = static_cast<int32_t>((g >> 24) & 0xffff);
        out->peer_push_blocks = static_cast<int32_t>((g >> 12) & 0xfff);
        out->peer_push_threads = static_cast<int32_t>(g & 0xfff);
    }
    out->local_push_blocks = ar4j::kPushBlocks;
    out->local_push_threads = ar4j::kPushThreads;
    return AR4J_SUCCESS;
}

AR4J_API int ar4j_set_pdl(ar4j_context *ctx, int32_t enabled) {
    if (ctx == nullptr) return AR4J_ERROR_NULL_POINTER;
    if (enabled != 0 && enabled != 1) return AR4J_ERROR_INVALID_ARGUMENT;
    CallGuard guard(ctx);
    if (!guard.owned) return AR4J_ERROR_CONCURRENT_USE;
    ctx->pdl = enabled == 1;
    return AR4J_SUCCESS;
}

AR4J_API int ar4j_pdl_active(const ar4j_context *ctx, int32_t *out) {
    if (ctx == nullptr || out == nullptr) return AR4J_ERROR_NULL_POINTER;
    *out = ctx->pdl && ctx->pdl_capable ? 1 : 0;
    return AR4J_SUCCESS;
}

AR4J_API int ar4j_debug_seed_push_generation(ar4j_context *ctx, uint64_t generation) {
    if (ctx == nullptr) return AR4J_ERROR_NULL_POINTER;
    CallGuard guard(ctx);
    if (!guard.owned) return AR4J_ERROR_CONCURRENT_USE;
    if (ctx->launched) return AR4J_ERROR_ALREADY_LAUNCHED;
    std::vector<ar4j::PushState> state(kMaxBlocks);
    for (auto &st : state) {
        st.generation = generation;
        st.prev_packs = 0;
        st.reserved = 0;
    }
    std::lock_guard<std::mutex> lock(ctx->side_mutex);
    RelaxedCapture relaxed;
    DeviceScope scope(ctx->device);
    if (!scope.ok) return cuda_failed(ctx, scope.error);
    // Pageable source: cudaMemcpyAsync stages it before returning; the synchronise covers the copy.
    cudaError_t e = side_copy(ctx, ctx->self->push, state.data(), sizeof(ar4j::PushState) * kMaxBlocks);
    if (e != cudaSuccess) return cuda_failed(ctx, e);
    return AR4J_SUCCESS;
}

namespace {

template <typename T, int WS>
cudaError_t launch_fused_typed(int32_t algorithm, const ar4j::FusedParams &f, int blocks, cudaStream_t stream,
                               bool pdl) {
    if (algorithm == AR4J_ALGO_ONE_STAGE) {
        return launch_kernel(ar4j::one_stage_rmsnorm_kernel<T, WS>, blocks, ar4j::kNormThreads, stream, pdl, f);
    }
    return launch_kernel(ar4j::push_rmsnorm_kernel<T, WS>, ar4j::kPushBlocks, ar4j::kNormThreads, stream, pdl, f);
}

// blocks: the ONE_STAGE grid (the push kernel's is fixed).
template <typename T>
cudaError_t launch_fused(int ws, int32_t algorithm, const ar4j::FusedParams &f, int blocks, cudaStream_t stream,
                         bool pdl) {
    switch (ws) {
        case 2: return launch_fused_typed<T, 2>(algorithm, f, blocks, stream, pdl);
        case 4: return launch_fused_typed<T, 4>(algorithm, f, blocks, stream, pdl);
        case 6: return launch_fused_typed<T, 6>(algorithm, f, blocks, stream, pdl);
        case 8: return launch_fused_typed<T, 8>(algorithm, f, blocks, stream, pdl);
        default: return cudaErrorInvalidValue;  // unreachable: validated at create
    }
}

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
        algorithm != AR4J_ALGO_ONE_SHOT_PUSH) {
        return AR4J_ERROR_ALGORITHM;
    }
    if (algorithm == AR4J_ALGO_TWO_STAGE) return AR4J_ERROR_NOT_FUSED;
    const bool push = algorithm == AR4J_ALGO_ONE_SHOT_PUSH;
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
    CallGuard guard(ctx);
    if (!guard.owned) return AR4J_ERROR_CONCURRENT_USE;
    int status = launch_failure(ctx);
    if (status != AR4J_SUCCESS) return status;
    status = check_device(ctx);
    if (status != AR4J_SUCCESS) return status;
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    const RankPtrs *inputs = nullptr;  // the push kernel reads its own input directly
    size_t offset = 0;
    if (!push) {
        status = resolve_input(ctx, in, bytes, s, &inputs, &offset);  // last: it may record a graph input
        if (status != AR4J_SUCCESS) return status;
    }

    ar4j::FusedParams f;
    f.p = launch_params(ctx, in, out, bytes, inputs, offset);
    f.residual = static_cast<const uint4 *>(residual);
    f.weight = static_cast<const uint4 *>(weight);
    f.residual_out = static_cast<uint4 *>(residual_out);
    f.rows = static_cast<int64_t>(rows);
    f.row_packs = static_cast<int64_t>(row_bytes / 16);
    f.hidden = static_cast<int64_t>(hidden);
    f.eps = eps;
    // ONE_STAGE: a block per row, up to the context's 1-/2-stage grid limit (agreed by every rank).
    const int blocks = rows < static_cast<size_t>(ctx->max_blocks) ? static_cast<int>(rows) : ctx->max_blocks;

    const bool pdl = ctx->pdl && ctx->pdl_capable;
    ctx->launched = true;
    cudaError_t e;
    switch (dtype) {
        case AR4J_DTYPE_FLOAT32: e = launch_fused<float>(ctx->world_size, algorithm, f, blocks, s, pdl); break;
        case AR4J_DTYPE_FLOAT16: e = launch_fused<__half>(ctx->world_size, algorithm, f, blocks, s, pdl); break;
        default: e = launch_fused<__nv_bfloat16>(ctx->world_size, algorithm, f, blocks, s, pdl); break;
    }
    if (e != cudaSuccess) return cuda_failed(ctx, e);
    return AR4J_SUCCESS;
}
