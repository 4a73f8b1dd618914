// Buffer registration (the registration table and its device slots) and graph inputs: the
// slots recorded during a stream capture and filled by ar4j_register_graph_inputs; the graphs'
// hold on the slots they name (user objects), which ar4j_unregister_buffer respects.
//
// Slot invariant: a slot that is not in use holds NULL pointers (all slots are zeroed at create;
// a slot is zeroed before it is given back, and a slot that cannot be zeroed is never given back),
// so a slot handed out for a graph input is NULL until ar4j_register_graph_inputs fills it.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
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

// Hands out a slot (a given-back one first): filled with ptrs, or left NULL (a graph input,
// filled by ar4j_register_graph_inputs; no copy, so this is safe inside a capture).
static int add_slot(ar4j_context *ctx, const void *const *ptrs, int *slot_out) {
    const bool reuse = !ctx->free_slots.empty();
    if (!reuse && ctx->used_slots >= ctx->max_buffers) return AR4J_ERROR_CAPACITY;
    const int slot = reuse ? ctx->free_slots.back() : ctx->used_slots;
    if (ptrs != nullptr) {
        RankPtrs host{};
        for (int r = 0; r < ctx->world_size; ++r) host.ptrs[r] = ptrs[r];
        cudaError_t e = cudaMemcpy(ctx->slots + slot, &host, sizeof(RankPtrs), cudaMemcpyHostToDevice);
        if (e != cudaSuccess) return cuda_failed(ctx, e);
    }
    if (reuse) {
        ctx->free_slots.pop_back();
    } else {
        ctx->used_slots++;
    }
    *slot_out = slot;
    return AR4J_SUCCESS;
}

// Gives a slot back: zeroes it (on the side stream, so this works inside a capture too), then
// lists it for reuse. A slot that cannot be zeroed stays out of use.
static int release_slot(ar4j_context *ctx, int slot) {
    static const RankPtrs kEmpty{};
    std::lock_guard<std::mutex> lock(ctx->side_mutex);
    RelaxedCapture relaxed;
    DeviceScope scope(ctx->device);
    if (!scope.ok) return cuda_failed(ctx, scope.error);
    cudaError_t e = side_copy(ctx, ctx->slots + slot, &kEmpty, sizeof(RankPtrs));
    if (e != cudaSuccess) return cuda_failed(ctx, e);
    ctx->free_slots.push_back(slot);
    return AR4J_SUCCESS;
}

namespace {

// A live graph's hold on one slot: the payload of its user object.
struct GraphHold {
    std::shared_ptr<SlotRefs> refs;
    int slot;
};

// The user object's destructor: CUDA calls it (on an internal thread, no CUDA calls allowed) once
// the graph and every executable graph instantiated from it are destroyed.
void CUDART_CB release_hold(void *payload) {
    GraphHold *hold = static_cast<GraphHold *>(payload);
    hold->refs->count[hold->slot].fetch_sub(1);
    delete hold;
}

// Makes `graph` (being captured) hold `slot` until CUDA destroys it. If that cannot be arranged,
// the slot is held for the context's life instead: a graph names it, and nothing would tell when
// that graph is gone.
void hold_slot(ar4j_context *ctx, cudaGraph_t graph, int slot) {
    ctx->slot_refs->count[slot].fetch_add(1);
    GraphHold *hold = new (std::nothrow) GraphHold{ctx->slot_refs, slot};
    if (hold == nullptr) return;  // held for good
    RelaxedCapture relaxed;
    cudaUserObject_t object = nullptr;
    cudaError_t e = cudaUserObjectCreate(&object, hold, release_hold, 1, cudaUserObjectNoDestructorSync);
    if (e != cudaSuccess) {
        delete hold;  // the count stays raised: held for good
        ctx->last_cuda_error = static_cast<int>(e);
        return;
    }
    e = cudaGraphRetainUserObject(graph, object, 1, cudaGraphUserObjectMove);
    if (e != cudaSuccess) {
        ctx->slot_refs->count[slot].fetch_add(1);  // held for good; the release below drops the object's own
        cudaUserObjectRelease(object, 1);
        ctx->last_cuda_error = static_cast<int>(e);
    }
}

}  // namespace

AR4J_API int ar4j_register_buffer(ar4j_context *ctx, const void *const *ptrs, size_t bytes) {
    if (ctx == nullptr || ptrs == nullptr) return AR4J_ERROR_NULL_POINTER;
    for (int r = 0; r < ctx->world_size; ++r) {
        if (ptrs[r] == nullptr) return AR4J_ERROR_NULL_POINTER;
        if (!aligned16(ptrs[r])) return AR4J_ERROR_MISALIGNED;
    }
    if (bytes == 0) return AR4J_ERROR_EMPTY;
    ContextUse use(ctx);
    if (!use.owned) return AR4J_ERROR_CONCURRENT_USE;
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

AR4J_API int ar4j_unregister_buffer(ar4j_context *ctx, const void *local) {
    if (ctx == nullptr || local == nullptr) return AR4J_ERROR_NULL_POINTER;
    ContextUse use(ctx);
    if (!use.owned) return AR4J_ERROR_CONCURRENT_USE;
    const uintptr_t base = reinterpret_cast<uintptr_t>(local);
    auto it = std::find_if(ctx->registrations.begin(), ctx->registrations.end(),
                           [base](const Registration &r) { return r.base == base; });
    if (it == ctx->registrations.end()) return AR4J_ERROR_NOT_REGISTERED;
    const int slot = it->slot;
    if (ctx->slot_refs->count[slot].load() > 0) return AR4J_ERROR_SLOT_IN_USE;
    ctx->registrations.erase(it);  // no later launch resolves to it, also if the zeroing below fails
    return release_slot(ctx, slot);
}

AR4J_API int ar4j_registered_count(const ar4j_context *ctx, int32_t *out) {
    if (ctx == nullptr || out == nullptr) return AR4J_ERROR_NULL_POINTER;
    *out = ctx->used_slots - static_cast<int32_t>(ctx->free_slots.size());
    return AR4J_SUCCESS;
}

namespace ar4j::host {

// The input pointer set of a ONE_STAGE or TWO_STAGE call (the kernels read every rank's input
// through it): the registration holding in (AR4J_ERROR_TOO_LARGE if [in, in + bytes) runs past its
// end), or, while the stream captures a graph, a new slot recorded as a graph input (its pointers
// come with ar4j_register_graph_inputs; NULL until then); else AR4J_ERROR_NOT_REGISTERED. Caller
// holds the ContextUse and calls finish_input after the launch, whatever its outcome.
int resolve_input(ar4j_context *ctx, const void *in, size_t bytes, cudaStream_t stream, ResolvedInput *out) {
    *out = ResolvedInput{};
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    cudaGraph_t graph = nullptr;
    cudaError_t e = cudaStreamGetCaptureInfo(stream, &capture, nullptr, &graph);
    if (e != cudaSuccess) return cuda_failed(ctx, e);
    const bool capturing = capture == cudaStreamCaptureStatusActive;
    const Registration *reg = find_registration(ctx, in);
    if (reg != nullptr) {
        const size_t at = reinterpret_cast<uintptr_t>(in) - reg->base;
        if (bytes > reg->bytes - at) return AR4J_ERROR_TOO_LARGE;
        out->offset = at;
        out->slot = reg->slot;
        out->inputs = ctx->slots + reg->slot;
        out->graph = capturing ? graph : nullptr;
        return AR4J_SUCCESS;
    }
    if (!capturing) return AR4J_ERROR_NOT_REGISTERED;
    int slot = -1;
    int status = add_slot(ctx, nullptr, &slot);  // NULL until ar4j_register_graph_inputs
    if (status != AR4J_SUCCESS) return status;
    try {
        ctx->pending.push_back(PendingInput{in, slot});
    } catch (...) {
        release_slot(ctx, slot);
        return AR4J_ERROR_CAPACITY;
    }
    out->offset = 0;
    out->slot = slot;
    out->inputs = ctx->slots + slot;
    out->recorded = true;
    out->graph = graph;
    return AR4J_SUCCESS;
}

void finish_input(ar4j_context *ctx, const ResolvedInput &in, bool launched) {
    if (in.slot < 0) return;
    if (!launched) {
        if (in.recorded) {  // nothing names the slot: no graph input was captured
            ctx->pending.pop_back();
            release_slot(ctx, in.slot);
        }
        return;
    }
    if (in.graph != nullptr) hold_slot(ctx, in.graph, in.slot);
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
    ContextUse use(ctx);
    if (!use.owned) return AR4J_ERROR_CONCURRENT_USE;
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
