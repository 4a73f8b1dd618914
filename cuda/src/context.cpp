// The context's lifecycle: signal size, create and destroy, launch geometry, PDL and the debug
// seed of the push generations.

#include <cstdint>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

#include "context_internal.h"

using namespace ar4j::host;

AR4J_API size_t ar4j_signal_size(size_t max_bytes) {
    if (max_bytes > ar4j::kMaxSignalMaxBytes) return 0;  // the size would wrap
    return ar4j::push_area_offset(max_bytes) + ar4j::kPushAreaBytes;
}

AR4J_API int ar4j_signal_size_checked(size_t max_bytes, size_t *out) {
    if (out == nullptr) return AR4J_ERROR_NULL_POINTER;
    *out = ar4j_signal_size(max_bytes);
    return *out == 0 ? AR4J_ERROR_TOO_LARGE : AR4J_SUCCESS;
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
    if (max_bytes > ar4j::kMaxSignalMaxBytes) return AR4J_ERROR_TOO_LARGE;

    int device = -1;
    cudaError_t e = cudaGetDevice(&device);
    if (e != cudaSuccess) return cuda_failed(nullptr, e);

    ar4j_context *ctx = new (std::nothrow) ar4j_context();
    if (ctx == nullptr) return AR4J_ERROR_INVALID_ARGUMENT;
    try {
        ctx->slot_refs = std::make_shared<SlotRefs>(max_buffers);
        ctx->free_slots.reserve(static_cast<size_t>(max_buffers));
    } catch (...) {
        delete ctx;
        return AR4J_ERROR_INVALID_ARGUMENT;
    }
    ctx->device = device;
    // One block per SM (all co-resident), at most the signal layout's limit: large messages move
    // faster with more blocks (docs/verification/runs.md), and small ones size the grid by the
    // work anyway.
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

    // The device's identity for the peers (ranks that publish the same one share a GPU): FNV-1a
    // of its UUID, never 0 (0 reads as "unknown").
    {
        cudaDeviceProp prop;
        e = cudaGetDeviceProperties(&prop, device);
        if (e != cudaSuccess) {
            delete ctx;
            return cuda_failed(nullptr, e);
        }
        unsigned long long h = 1469598103934665603ull;
        for (int i = 0; i < 16; ++i) {
            h ^= static_cast<unsigned char>(prop.uuid.bytes[i]);
            h *= 1099511628211ull;
        }
        ctx->identity = h != 0 ? h : 1;
    }

    int major = 0;
    e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    if (e == cudaSuccess && major >= 9) {
        // PDL needs griddepcontrol in the kernels, i.e. machine code built for sm_90 or newer.
        cudaFuncAttributes attr;
        e = push_kernel_attributes(&attr);
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
        // Every slot NULL: a graph input replayed before its pointers are registered finds NULL and
        // poisons the group (AR4J_POISON_UNREGISTERED) instead of following garbage.
        e = cudaMemsetAsync(ctx->slots, 0, sizeof(RankPtrs) * static_cast<size_t>(max_buffers), ctx->side);
        if (e == cudaSuccess) e = cudaMemsetAsync(ctx->self->push, 0, sizeof(ctx->self->push), ctx->side);
        if (e == cudaSuccess) e = cudaMemsetAsync(ctx->self->blocks, 0, sizeof(ctx->self->blocks), ctx->side);
        if (e == cudaSuccess) {
            uint32_t *area = reinterpret_cast<uint32_t *>(reinterpret_cast<char *>(ctx->self) +
                                                          ar4j::push_area_offset(max_bytes));
            e = launch_fill_words(area, ar4j::kPushAreaBytes / 4, ar4j::kSentinelWord, ctx->side);
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
    ContextUse use(ctx);
    if (!use.owned) return AR4J_ERROR_CONCURRENT_USE;
    if (ctx->launched || ctx->geometry_state.load() != 0) return AR4J_ERROR_ALREADY_LAUNCHED;
    ctx->max_blocks = max_blocks;
    ctx->threads = threads;
    cudaError_t e = publish_geometry(ctx);
    if (e != cudaSuccess) return cuda_failed(ctx, e);
    return AR4J_SUCCESS;
}

AR4J_API int ar4j_set_pdl(ar4j_context *ctx, int32_t enabled) {
    if (ctx == nullptr) return AR4J_ERROR_NULL_POINTER;
    if (enabled != 0 && enabled != 1) return AR4J_ERROR_INVALID_ARGUMENT;
    ContextUse use(ctx);
    if (!use.owned) return AR4J_ERROR_CONCURRENT_USE;
    ctx->pdl = enabled == 1;
    return AR4J_SUCCESS;
}

AR4J_API int ar4j_set_variants(ar4j_context *ctx, uint32_t flags) {
    if (ctx == nullptr) return AR4J_ERROR_NULL_POINTER;
    if ((flags & ~static_cast<uint32_t>(AR4J_VARIANTS_ALL | AR4J_VARIANT_DEBUG_IGNORE_SHARED_GPU)) != 0) {
        return AR4J_ERROR_INVALID_ARGUMENT;
    }
    ContextUse use(ctx);
    if (!use.owned) return AR4J_ERROR_CONCURRENT_USE;
    if (ctx->launched || ctx->geometry_state.load() != 0) return AR4J_ERROR_ALREADY_LAUNCHED;
    ctx->variants = flags;
    cudaError_t e = publish_geometry(ctx);
    if (e != cudaSuccess) return cuda_failed(ctx, e);
    return AR4J_SUCCESS;
}

AR4J_API int ar4j_variants_active(const ar4j_context *ctx, uint32_t *out) {
    if (ctx == nullptr || out == nullptr) return AR4J_ERROR_NULL_POINTER;
    *out = effective_variants(ctx);
    return AR4J_SUCCESS;
}

AR4J_API int ar4j_pdl_active(const ar4j_context *ctx, int32_t *out) {
    if (ctx == nullptr || out == nullptr) return AR4J_ERROR_NULL_POINTER;
    *out = ctx->pdl && ctx->pdl_capable ? 1 : 0;
    return AR4J_SUCCESS;
}

AR4J_API int ar4j_debug_seed_push_generation(ar4j_context *ctx, uint64_t generation) {
    if (ctx == nullptr) return AR4J_ERROR_NULL_POINTER;
    ContextUse use(ctx);
    if (!use.owned) return AR4J_ERROR_CONCURRENT_USE;
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
