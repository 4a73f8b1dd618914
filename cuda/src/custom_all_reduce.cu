// libar4j_custom_ar: the host side of the C ABI in include/ar4j/custom_all_reduce.h.
// Validation, registration tables, graph-input bookkeeping and kernel launches. No policy:
// the caller names the algorithm.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#include <vector>

#include "ar4j/custom_all_reduce.h"
#include "kernels.cuh"

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
    unsigned long long *error_host = nullptr;    // host-mapped
    unsigned long long *error_device = nullptr;  // its device view
    uint64_t deadline_ns = 0;
    int max_blocks = 0;  // set at create: one block per SM, at most AR4J_MAX_BLOCKS
    int threads = 512;
    int last_cuda_error = 0;
    bool failed = false;
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

template <typename T, int WS>
cudaError_t launch_typed(int32_t algorithm, bool in_place, const Params &p, int blocks, int threads,
                         cudaStream_t stream) {
    if (algorithm == AR4J_ALGO_ONE_STAGE) {
        if (in_place) {
            ar4j::one_stage_kernel<T, WS, true><<<blocks, threads, 0, stream>>>(p);
        } else {
            ar4j::one_stage_kernel<T, WS, false><<<blocks, threads, 0, stream>>>(p);
        }
    } else if (algorithm == AR4J_ALGO_TWO_STAGE) {
        ar4j::two_stage_kernel<T, WS><<<blocks, threads, 0, stream>>>(p);
    } else {
        ar4j::push_kernel<T, WS><<<ar4j::kPushBlocks, ar4j::kPushThreads, 0, stream>>>(p);
    }
    return cudaGetLastError();
}

template <typename T>
cudaError_t launch_ws(int ws, int32_t algorithm, bool in_place, const Params &p, int blocks, int threads,
                      cudaStream_t stream) {
    switch (ws) {
        case 2: return launch_typed<T, 2>(algorithm, in_place, p, blocks, threads, stream);
        case 4: return launch_typed<T, 4>(algorithm, in_place, p, blocks, threads, stream);
        case 6: return launch_typed<T, 6>(algorithm, in_place, p, blocks, threads, stream);
        case 8: return launch_typed<T, 8>(algorithm, in_place, p, blocks, threads, stream);
        default: return cudaErrorInvalidValue;  // unreachable: validated at create
    }
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
            return "the byte size exceeds the registered buffer, the context's maximum (max_bytes) or, for "
                   "ONE_SHOT_PUSH, AR4J_PUSH_MAX_BYTES";
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
        case AR4J_ERROR_INVALID_ARGUMENT: return "an argument is outside its documented range";
        default: return "unknown status code";
    }
}

AR4J_API int ar4j_abi_version(void) { return 200; }

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

    e = cudaMalloc(&ctx->slots, sizeof(RankPtrs) * static_cast<size_t>(max_buffers));
    if (e == cudaSuccess) {
        e = cudaHostAlloc(&ctx->error_host, sizeof(unsigned long long), cudaHostAllocMapped);
    }
    if (e == cudaSuccess) {
        *ctx->error_host = 0;
        e = cudaHostGetDevicePointer(reinterpret_cast<void **>(&ctx->error_device), ctx->error_host, 0);
    }
    if (e == cudaSuccess) {
        // Push state to zero, push buffers to the sentinel; peers write into them only after
        // every rank created its context. A private stream, so that unrelated work on the
        // device (other ranks' kernels sharing it, say) is not waited for.
        cudaStream_t init = nullptr;
        e = cudaStreamCreateWithFlags(&init, cudaStreamNonBlocking);
        if (e == cudaSuccess) {
            e = cudaMemsetAsync(ctx->self->push, 0, sizeof(ctx->self->push), init);
            if (e == cudaSuccess) {
                uint32_t *area = reinterpret_cast<uint32_t *>(reinterpret_cast<char *>(ctx->self) +
                                                              ar4j::push_area_offset(max_bytes));
                ar4j::fill_words<<<256, 256, 0, init>>>(area, ar4j::kPushAreaBytes / 4, ar4j::kSentinelWord);
                e = cudaGetLastError();
            }
            if (e == cudaSuccess) e = cudaStreamSynchronize(init);
            cudaError_t d = cudaStreamDestroy(init);
            if (e == cudaSuccess) e = d;
        }
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
    ctx->max_blocks = max_blocks;
    ctx->threads = threads;
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

static bool poll_failed(ar4j_context *ctx) {
    if (!ctx->failed) {
        const volatile unsigned long long *w = ctx->error_host;
        if (*w != 0) ctx->failed = true;
    }
    return ctx->failed;
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
    if (poll_failed(ctx)) return AR4J_ERROR_PEER_TIMEOUT;
    if (algorithm == AR4J_ALGO_TWO_STAGE && bytes > ctx->max_bytes) return AR4J_ERROR_TOO_LARGE;

    if (algorithm == AR4J_ALGO_ONE_SHOT_PUSH && bytes > ar4j::kPushMaxBytes) return AR4J_ERROR_TOO_LARGE;

    const RankPtrs *inputs = nullptr;
    size_t offset = 0;
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    const Registration *reg = algorithm == AR4J_ALGO_ONE_SHOT_PUSH ? nullptr : find_registration(ctx, in);
    if (algorithm == AR4J_ALGO_ONE_SHOT_PUSH) {
        inputs = nullptr;  // the push kernel reads its own input directly
    } else if (reg != nullptr) {
        offset = ia - reg->base;
        if (bytes > reg->bytes - offset) return AR4J_ERROR_TOO_LARGE;
        inputs = ctx->slots + reg->slot;
    } else {
        cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
        cudaError_t e = cudaStreamIsCapturing(s, &capture);
        if (e != cudaSuccess) return cuda_failed(ctx, e);
        if (capture != cudaStreamCaptureStatusActive) return AR4J_ERROR_NOT_REGISTERED;
        int slot = -1;
        int status = add_slot(ctx, nullptr, &slot);  // filled by ar4j_register_graph_inputs
        if (status != AR4J_SUCCESS) return status;
        ctx->pending.push_back(PendingInput{in, slot});
        inputs = ctx->slots + slot;
    }

    int device = -1;
    cudaError_t e = cudaGetDevice(&device);
    if (e != cudaSuccess) return cuda_failed(ctx, e);
    if (device != ctx->device) return AR4J_ERROR_WRONG_DEVICE;

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

    const int64_t work = algorithm == AR4J_ALGO_TWO_STAGE ? (p.npacks + ctx->world_size - 1) / ctx->world_size
                                                          : p.npacks;
    int64_t blocks = (work + ctx->threads - 1) / ctx->threads;
    if (blocks < 1) blocks = 1;
    if (blocks > ctx->max_blocks) blocks = ctx->max_blocks;

    switch (dtype) {
        case AR4J_DTYPE_FLOAT32:
            e = launch_ws<float>(ctx->world_size, algorithm, in_place, p, (int)blocks, ctx->threads, s);
            break;
        case AR4J_DTYPE_FLOAT16:
            e = launch_ws<__half>(ctx->world_size, algorithm, in_place, p, (int)blocks, ctx->threads, s);
            break;
        default:
            e = launch_ws<__nv_bfloat16>(ctx->world_size, algorithm, in_place, p, (int)blocks, ctx->threads, s);
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
