// Failure state and its reading: the launch-geometry agreement between the ranks, the poison
// word (set by ar4j_poison and on a mismatch), the checks every launch makes first, and
// ar4j_read_timeout / ar4j_read_failure. (The CUDA error record is status.cpp's; the geometry
// word and the side channel's copy are geometry.cpp's.)

#include <cstdint>
#include <cstring>
#include <mutex>

#include "context_internal.h"

using namespace ar4j::host;

namespace {

// Notes `value` as the first poison this rank saw, in the host-mapped word its kernels note theirs
// in (a compare-and-swap: a kernel's note that landed first stays).
void note_poison_host(ar4j_context *ctx, unsigned long long value) {
    unsigned long long expected = 0;
    __atomic_compare_exchange_n(ctx->error_host + 1, &expected, value, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

// Writes `value` into the hosts' poison word of every rank's Signal where neither word is set yet
// (kernel_interface.cuh: the kernels' word is never written by a host, so no reason a kernel
// stored after the read below is overwritten). Every rank is tried; a copy that fails (or is made
// to fail, ar4j_debug_inject_faults) leaves the others going, and its error is returned: the first.
cudaError_t poison_all(ar4j_context *ctx, unsigned long long value) {
    std::lock_guard<std::mutex> lock(ctx->side_mutex);
    RelaxedCapture relaxed;
    DeviceScope scope(ctx->device);
    if (!scope.ok) return scope.error;
    const int ws = ctx->world_size;
    unsigned long long *pairs = ctx->staging;               // [2r]: kernels' word, [2r + 1]: hosts'
    unsigned long long *values = ctx->staging + 2 * kMaxRanks;
    cudaError_t first = cudaSuccess;
    bool read[kMaxRanks] = {};
    for (int r = 0; r < ws; ++r) {
        pairs[2 * r] = 0;
        pairs[2 * r + 1] = 0;
        values[r] = value;
        cudaError_t e = debug_copy_fails(ctx, r) ? cudaErrorInvalidValue
                                                 : cudaMemcpyAsync(pairs + 2 * r, &ctx->peers[r]->poison,
                                                                   2 * sizeof(unsigned long long), cudaMemcpyDefault,
                                                                   ctx->side);
        read[r] = e == cudaSuccess;
        if (e != cudaSuccess && first == cudaSuccess) first = e;
    }
    cudaError_t e = cudaStreamSynchronize(ctx->side);
    if (e != cudaSuccess && first == cudaSuccess) first = e;  // a read that failed on the way reads as 0
    unsigned long long own = pairs[2 * ctx->rank] != 0 ? pairs[2 * ctx->rank] : pairs[2 * ctx->rank + 1];
    for (int r = 0; r < ws; ++r) {
        if (!read[r] || pairs[2 * r] != 0 || pairs[2 * r + 1] != 0) continue;
        e = debug_copy_fails(ctx, r) ? cudaErrorInvalidValue
                                     : cudaMemcpyAsync(&ctx->peers[r]->host_poison, values + r,
                                                       sizeof(unsigned long long), cudaMemcpyDefault, ctx->side);
        if (e != cudaSuccess && first == cudaSuccess) first = e;
    }
    e = cudaStreamSynchronize(ctx->side);
    if (e != cudaSuccess && first == cudaSuccess) first = e;
    note_poison_host(ctx, own != 0 ? own : value);
    ctx->poisoned.store(true);
    return first;
}

}  // namespace

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

// Compares every peer's published geometry with this context's, once. Caller holds the ContextUse.
static int check_geometry(ar4j_context *ctx) {
    const int state = ctx->geometry_state.load();
    if (state == 1) return AR4J_SUCCESS;
    if (state == 2) return AR4J_ERROR_GEOMETRY_MISMATCH;
    const unsigned long long mine = geometry_word(ctx->max_blocks, ctx->threads);
    const unsigned long long my_variants = ar4j::make_variants_word(ctx->variants, ctx->max_bytes);
    int bad = -1;
    unsigned long long theirs = 0;
    bool shares = false;
    {
        std::lock_guard<std::mutex> lock(ctx->side_mutex);
        RelaxedCapture relaxed;
        DeviceScope scope(ctx->device);
        if (!scope.ok) return cuda_failed(ctx, scope.error);
        cudaError_t e = cudaSuccess;
        // Per rank: [3r] geometry, [3r + 1] identity, [3r + 2] variants (adjacent in the Signal).
        for (int r = 0; r < ctx->world_size && e == cudaSuccess; ++r) {
            e = cudaMemcpyAsync(ctx->staging + 3 * r, &ctx->peers[r]->geometry, 3 * sizeof(unsigned long long),
                                cudaMemcpyDefault, ctx->side);
        }
        if (e == cudaSuccess) e = cudaStreamSynchronize(ctx->side);
        if (e != cudaSuccess) return cuda_failed(ctx, e);
        for (int r = 0; r < ctx->world_size; ++r) {
            if (ctx->staging[3 * r] != mine || ctx->staging[3 * r + 2] != my_variants) {
                bad = r;
                theirs = ctx->staging[3 * r] != mine ? ctx->staging[3 * r] : ctx->staging[3 * r + 2];
                break;
            }
            // An unpublished (0) or unknown identity counts as shared: the safe side.
            if (r != ctx->rank && (ctx->staging[3 * r + 1] == 0 || ctx->staging[3 * r + 1] == ctx->identity)) {
                shares = true;
            }
        }
    }
    if (bad < 0) {
        ctx->shares_gpu.store(shares ? 1 : 0);
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

namespace ar4j::host {

// What every launch checks first, with the ContextUse held: a geometry mismatch (named as such
// on every call; it also poisoned the group), a failure this rank already knows of, and the
// peers' geometry on the first call.
int launch_failure(ar4j_context *ctx) {
    if (ctx->geometry_state.load(std::memory_order_relaxed) == 2) return AR4J_ERROR_GEOMETRY_MISMATCH;
    int failure = known_failure(ctx);
    if (failure != AR4J_SUCCESS) return failure;
    if (ctx->geometry_state.load(std::memory_order_relaxed) != 1) return check_geometry(ctx);
    return AR4J_SUCCESS;
}

}  // namespace ar4j::host

AR4J_API int ar4j_check_geometry(ar4j_context *ctx) {
    if (ctx == nullptr) return AR4J_ERROR_NULL_POINTER;
    ContextUse use(ctx);
    if (!use.owned) return AR4J_ERROR_CONCURRENT_USE;
    return check_geometry(ctx);
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

AR4J_API int ar4j_debug_inject_faults(ar4j_context *ctx, uint32_t faults, uint32_t rank_mask) {
    if (ctx == nullptr) return AR4J_ERROR_NULL_POINTER;
    if ((faults & ~static_cast<uint32_t>(AR4J_DEBUG_FAIL_PEER_COPIES | AR4J_DEBUG_FAIL_LAUNCHES)) != 0) {
        return AR4J_ERROR_INVALID_ARGUMENT;
    }
    ctx->debug_fault_ranks.store(rank_mask);
    ctx->debug_faults.store(faults);
    return AR4J_SUCCESS;
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
        cudaError_t e = side_copy(ctx, ctx->staging, &ctx->self->poison, 2 * sizeof(unsigned long long));
        if (e != cudaSuccess) return cuda_failed(ctx, e);
        word = ctx->staging[0] != 0 ? ctx->staging[0] : ctx->staging[1];  // the kernels' word first
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
    if (gstate == 2 && (g >> 56) == kGeometryTag) {
        out->peer_max_blocks = static_cast<int32_t>((g >> 32) & 0xff);
        out->peer_threads = static_cast<int32_t>(((g >> 24) & 0xff) * 32);
        out->peer_push_blocks = static_cast<int32_t>((g >> 16) & 0xff);
        out->peer_push_threads = static_cast<int32_t>(((g >> 8) & 0xff) * 32);
    }
    out->local_push_blocks = ar4j::kPushBlocks;
    out->local_push_threads = ar4j::kPushThreads;
    return AR4J_SUCCESS;
}
