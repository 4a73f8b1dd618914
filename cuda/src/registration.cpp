// Buffer registration (the registration table and its device slots) and graph inputs: the
// slots recorded during a stream capture and filled by ar4j_register_graph_inputs.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "context_internal.h"

using namespace ar4j::host;

namespace {

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

}  // namespace

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

namespace ar4j::host {

// The input pointer set of a ONE_STAGE or TWO_STAGE call (the kernels read every rank's input
// through it): the registration holding in (AR4J_ERROR_TOO_LARGE if [in, in + bytes) runs past its
// end), or, while the stream captures a graph, a new slot recorded as a graph input (its pointers
// come with ar4j_register_graph_inputs); else AR4J_ERROR_NOT_REGISTERED. Caller holds the CallGuard;
// nothing after it may fail but the launch (a recorded slot stays pending).
int resolve_input(ar4j_context *ctx, const void *in, size_t bytes, cudaStream_t stream,
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

}  // namespace ar4j::host

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
