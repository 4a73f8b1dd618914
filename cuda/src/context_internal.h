// libar4j_custom_ar: the host side of the C ABI in include/ar4j/custom_all_reduce.h.
// Its shared internals: the ar4j_context struct, the scope guards every entry point
// uses, small argument checks, and the helpers one translation unit defines and the others call
// (declared here, defined once: status.cpp, geometry.cpp, context.cpp, registration.cpp, failure.cpp, launch.cu).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include <cuda_runtime.h>

#include "ar4j/custom_all_reduce.h"
#include "api_export.h"
#include "kernel_interface.cuh"

namespace ar4j::host {

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
static_assert(AR4J_VARIANT_PUSH_EARLY_TRIGGER == ar4j::kVariantPushEarlyTrigger &&
                  AR4J_VARIANT_PUSH_CLEAR_ON_READ == ar4j::kVariantPushClearOnRead &&
                  AR4J_VARIANT_FUSED_GRID_PUSH == ar4j::kVariantFusedGridPush &&
                  AR4J_VARIANT_TWO_STAGE_PUSH == ar4j::kVariantTwoStagePush &&
                  AR4J_VARIANT_PUSH_PASS_ON_POISON == ar4j::kVariantPushPassOnPoison &&
                  AR4J_VARIANTS_ALL == ar4j::kVariantsAll &&
                  (uint32_t)AR4J_VARIANT_DEBUG_IGNORE_SHARED_GPU == ar4j::kVariantDebugIgnoreSharedGpu,
              "header and kernels disagree on the variant flags");

struct Registration {
    uintptr_t base;  // local pointer
    size_t bytes;
    int slot;
};

struct PendingInput {
    const void *local;
    int slot;
};

// How many live CUDA graphs name each slot (a captured launch reads the slot's pointers at every
// replay). Shared with the graphs' destructor callbacks (user objects), which may run after the
// context is gone: hence its own lifetime.
struct SlotRefs {
    explicit SlotRefs(int n) : count(new std::atomic<int>[static_cast<size_t>(n)]) {
        for (int i = 0; i < n; ++i) count[i].store(0);
    }
    std::unique_ptr<std::atomic<int>[]> count;
};

// The input of a ONE_STAGE or TWO_STAGE launch (resolve_input), kept until the launch's outcome
// is known (finish_input).
struct ResolvedInput {
    const RankPtrs *inputs = nullptr;  // device pointer set the kernels read
    size_t offset = 0;                 // byte offset of the input in each rank's buffer
    int slot = -1;
    bool recorded = false;             // a new pending graph input (dropped if the launch fails)
    cudaGraph_t graph = nullptr;       // the graph the stream captures into, if any
};

inline bool valid_world_size(int32_t ws) { return ws == 2 || ws == 4 || ws == 6 || ws == 8; }

inline bool aligned16(const void *p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

inline size_t dtype_size(int32_t dtype) {
    switch (dtype) {
        case AR4J_DTYPE_FLOAT32: return 4;
        case AR4J_DTYPE_FLOAT16: return 2;
        case AR4J_DTYPE_BFLOAT16: return 2;
        default: return 0;
    }
}

}  // namespace ar4j::host

struct ar4j_context {
    int device = -1;
    int rank = 0;
    int world_size = 0;
    ar4j::Signal *self = nullptr;
    ar4j::Signal *peers[ar4j::kMaxRanks] = {};
    size_t max_bytes = 0;
    int max_buffers = 0;
    ar4j::RankPtrs *slots = nullptr;  // device array [max_buffers], zeroed at create
    int used_slots = 0;               // slots handed out so far (free_slots among them)
    std::vector<int> free_slots;      // slots given back (zeroed), reused first
    std::shared_ptr<ar4j::host::SlotRefs> slot_refs;  // live graphs naming each slot
    std::vector<ar4j::host::Registration> registrations;  // sorted by base
    std::vector<ar4j::host::PendingInput> pending;
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
    uint32_t variants = 0;  // ar4j_set_variants: the AR4J_VARIANT_* flags asked for
    unsigned long long identity = 0;  // this device's identity word (a hash of its UUID, never 0)
    // Whether a peer's identity equals this one's (ranks share a GPU): -1 not known yet (the
    // geometry check finds it), 0 no, 1 yes.
    std::atomic<int> shares_gpu{-1};
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
    // ar4j_debug_inject_faults (tests only): AR4J_DEBUG_* flags and the ranks whose copies fail.
    std::atomic<uint32_t> debug_faults{0};
    std::atomic<uint32_t> debug_fault_ranks{0};
};

namespace ar4j::host {

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

// Marks an entry point that changes the context as running; a second one at the same time
// (another host thread) is refused with AR4J_ERROR_CONCURRENT_USE instead of racing.
struct ContextUse {
    ar4j_context *ctx;
    bool owned;
    explicit ContextUse(ar4j_context *c) : ctx(c), owned(!c->in_call.exchange(true, std::memory_order_acquire)) {}
    ~ContextUse() {
        if (owned) ctx->in_call.store(false, std::memory_order_release);
    }
};

// poison: a word pair read per rank, a value written per rank; geometry check: the geometry,
// identity and variants words of every rank.
constexpr int kStagingWords = 3 * kMaxRanks;

// The variants the kernels use now: those asked for, without the early trigger unless it is known
// that no two ranks share a GPU (or a test asked to ignore that).
inline uint32_t effective_variants(const ar4j_context *ctx) {
    uint32_t v = ctx->variants & ar4j::kVariantsAll;
    if ((ctx->variants & ar4j::kVariantDebugIgnoreSharedGpu) == 0 && ctx->shares_gpu.load() != 0) {
        v &= ~ar4j::kVariantPushEarlyTrigger;
    }
    return v;
}

// The side-channel copies may run while this thread captures a stream (the first call of a
// context inside a graph capture checks the geometry) or while another thread captures in
// global mode (a watchdog's ar4j_poison): relaxed capture mode for this thread allows them.
struct RelaxedCapture {
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    RelaxedCapture() { cudaThreadExchangeStreamCaptureMode(&mode); }
    ~RelaxedCapture() { cudaThreadExchangeStreamCaptureMode(&mode); }
};

// --- status.cpp ------------------------------------------------------------------------------

// Records e as the context's last CUDA error (as the calling thread's when ctx is NULL: a failed
// ar4j_context_create) and returns AR4J_ERROR_CUDA.
int cuda_failed(ar4j_context *ctx, cudaError_t e);

// --- geometry.cpp ----------------------------------------------------------------------------

// Copies between host staging and device words on the side stream and waits for the copies
// only. Caller holds side_mutex.
cudaError_t side_copy(ar4j_context *ctx, void *dst, const void *src, size_t bytes);

// The launch geometry word of (max_blocks, threads) that the ranks of a group must agree on, and
// the tag in its top byte.
constexpr unsigned long long kGeometryTag = 0xA5;
unsigned long long geometry_word(int max_blocks, int threads);

// Publishes this context's launch geometry word in its Signal (the side channel).
cudaError_t publish_geometry(ar4j_context *ctx);

// --- failure.cpp -----------------------------------------------------------------------------

// What every launch checks first, with the ContextUse held (see failure.cpp).
int launch_failure(ar4j_context *ctx);

// --- registration.cpp ------------------------------------------------------------------------

// The input pointer set of a ONE_STAGE or TWO_STAGE call (see registration.cpp).
int resolve_input(ar4j_context *ctx, const void *in, size_t bytes, cudaStream_t stream, ResolvedInput *out);

// After the launch of a resolved input: drops a recorded graph input if the launch failed, and
// makes the capturing graph hold the slot if it succeeded (see registration.cpp).
void finish_input(ar4j_context *ctx, const ResolvedInput &in, bool launched);

// True if the context's test-only fault injection makes a side-channel copy for rank r fail.
inline bool debug_copy_fails(const ar4j_context *ctx, int r) {
    return (ctx->debug_faults.load(std::memory_order_relaxed) & AR4J_DEBUG_FAIL_PEER_COPIES) != 0 &&
           ((ctx->debug_fault_ranks.load(std::memory_order_relaxed) >> r) & 1u) != 0;
}

// --- launch.cu: the only translation unit with kernels ---------------------------------------

// Loads every kernel of world size ws (see ar4j_context_create).
cudaError_t preload_kernels(int ws);

// cudaFuncGetAttributes of push_kernel<float, 2>: its binaryVersion tells whether the kernels
// were built for sm_90 or newer (PDL needs griddepcontrol).
cudaError_t push_kernel_attributes(cudaFuncAttributes *attr);

// fill_words<<<256, 256, 0, stream>>>(p, words, value); the launch's error.
cudaError_t launch_fill_words(uint32_t *p, size_t words, uint32_t value, cudaStream_t stream);

}  // namespace ar4j::host
