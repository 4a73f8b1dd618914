#pragma once

#include "kernel_sync.cuh"
#include "packs.cuh"

namespace ar4j {

// ---------------------------------------------------------------------------------------
// One-shot push (Lamport style): no barrier round trips. Each rank stores its input into
// slot `rank` of generation buffer g % 3 on every peer, then polls its own buffer until no
// word of a pack is the sentinel, and reduces the slots in rank order (its own slot is
// taken from its input). The buffer of the previous launch is refilled with the sentinel by
// its owner during the next launch. Three generations make that safe without barriers:
// a peer writes generation g only after it has received this rank's generation g-1 data,
// which this rank sent after its launch g-2 (which refilled buffer g % 3) completed.
// Every launch uses the same fixed grid, so per-block generation counters stay in step.
// The generation is read only after the entry checks (poison, overlap): a launch that must not
// run stores nothing into any peer's buffers.
//
// Variants (ar4j_set_variants; the defaults are the above):
//  - clear on read (kClear, AR4J_VARIANT_PUSH_CLEAR_ON_READ): the thread that consumed pack i of a
//    peer's slot stores the sentinel back into it at once (after its load returned: the same
//    address, in program order), and the end of the launch refills nothing. Buffer g % 3 is then
//    clean when launch g ends; a peer writes into it again only with generation g + 3, after it
//    received this rank's data of g + 2, sent after this rank's launch g completed: the same
//    causality as the refill's, one generation earlier. Every push kernel of a context clears in
//    this mode (push_kernel and push_rmsnorm_kernel share the buffers), so the mode is fixed per
//    context and agreed by the ranks (the variants word).
//  - early trigger (AR4J_VARIANT_PUSH_EARLY_TRIGGER, in effect only when no two ranks share a GPU):
//    launch_dependents right after griddepcontrol.wait; see kernel_sync.cuh for why it stays late
//    when ranks share a GPU.

template <typename T>
struct Sentinel;

template <>
struct Sentinel<float> {
    __device__ __forceinline__ static uint32_t clean(uint32_t w) { return w == kSentinelWord ? 0x80000000u : w; }
    __device__ __forceinline__ static bool is_empty(uint32_t w) { return w == kSentinelWord; }
};

struct HalfSentinel {
    __device__ __forceinline__ static uint32_t clean(uint32_t w) {
        if ((w & 0xffffu) == 0x8000u) w &= 0xffff0000u;
        if ((w >> 16) == 0x8000u) w &= 0x0000ffffu;
        return w;
    }
    __device__ __forceinline__ static bool is_empty(uint32_t w) {
        return (w & 0xffffu) == 0x8000u || (w >> 16) == 0x8000u;
    }
};
template <>
struct Sentinel<__half> : HalfSentinel {};
template <>
struct Sentinel<__nv_bfloat16> : HalfSentinel {};

template <typename T>
__device__ __forceinline__ uint4 clean_pack(uint4 v) {
    return make_uint4(Sentinel<T>::clean(v.x), Sentinel<T>::clean(v.y), Sentinel<T>::clean(v.z),
                      Sentinel<T>::clean(v.w));
}

template <typename T>
__device__ __forceinline__ bool pack_empty(const uint4 &v) {
    return Sentinel<T>::is_empty(v.x) || Sentinel<T>::is_empty(v.y) || Sentinel<T>::is_empty(v.z) ||
           Sentinel<T>::is_empty(v.w);
}

__device__ __forceinline__ uint4 load_volatile_pack(const uint4 *p) {
    uint4 v;
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p)
                 : "memory");
    return v;
}

__device__ __forceinline__ uint4 *push_slot(Signal *owner, size_t push_offset, unsigned long long generation, int slot) {
    return reinterpret_cast<uint4 *>(reinterpret_cast<char *>(owner) + push_offset +
                                     ((size_t)(generation % kPushGenerations) * kMaxRanks + slot) * kPushMaxBytes);
}

// Polls until the pack holds no sentinel word. False if it gave up.
template <typename T, int WS>
__device__ __forceinline__ bool poll_pack(const uint4 *p, uint4 &v, const Params &params, int peer) {
    uint32_t polls = 0;
    uint64_t since = 0;
    while (true) {
        v = load_volatile_pack(p);
        if (!pack_empty<T>(v)) return true;
        ++polls;
        if ((polls & 63u) == 0 && !keep_waiting<WS>(params, polls, since, peer, 0xff, 0)) return false;
    }
}

// Packs per push slot: slot s of a generation starts kSlotPacks * s packs after slot 0.
constexpr int64_t kSlotPacks = (int64_t)(kPushMaxBytes / 16);

// Polls pack i of the slots in `empty` (bit s: v[s] still holds a sentinel word; slot s of this
// rank's current generation starts at slots + s * kSlotPacks) until none is empty, round-robin.
// One wait for all of them, so the wait's deadline and poison checks are inlined once, not once
// per slot (that keeps push_rmsnorm_kernel<*, 8> within its 64 registers without spilling; push_kernel,
// with up to 255 registers, keeps the per-slot poll_pack). False if it gave up.
template <typename T, int WS>
__device__ __forceinline__ bool poll_slots(const uint4 *slots, int64_t i, uint4 (&v)[WS], uint32_t empty,
                                           const Params &params) {
    uint32_t polls = 0;
    uint64_t since = 0;
    while (true) {
#pragma unroll
        for (int s = 0; s < WS; ++s) {
            if ((empty >> s) & 1u) {
                v[s] = load_volatile_pack(slots + s * kSlotPacks + i);
                if (!pack_empty<T>(v[s])) empty &= ~(1u << s);
            }
        }
        if (empty == 0) return true;
        ++polls;
        if ((polls & 63u) == 0 && !keep_waiting<WS>(params, polls, since, __ffs(empty) - 1, 0xff, 0)) return false;
    }
}

// push_rmsnorm_kernel: loads pack i of every rank's contribution (this rank's from its input, the
// peers' from slot s of this rank's buffer of `generation`),
// all loads in flight together, then polls those still empty. False if the wait gave up.
template <typename T, int WS>
__device__ __forceinline__ bool gather_pack(const Params &p, unsigned long long generation, uint4 local, int64_t i,
                                            uint4 (&v)[WS]) {
    const uint4 *slots = push_slot(p.self, p.push_offset, generation, 0);
#pragma unroll
    for (int s = 0; s < WS; ++s) {
        v[s] = s == p.rank ? clean_pack<T>(local) : load_volatile_pack(slots + s * kSlotPacks + i);
    }
    uint32_t empty = 0;
#pragma unroll
    for (int s = 0; s < WS; ++s) {
        if (s != p.rank && pack_empty<T>(v[s])) empty |= 1u << s;
    }
    return empty == 0 || poll_slots<T, WS>(slots, i, v, empty, p);
}

// The end of a push launch, after every poll: refill the previous generation's buffer (every
// peer's data in it was consumed; grid-stride over [0, prev_packs)), then thread 0 advances the
// block's generation and leaves. Shared by push_kernel and push_rmsnorm_kernel.
// kClear: the packs were cleared as they were read (clear_consumed): no refill.
template <int WS, bool kClear = false>
__device__ __forceinline__ void finish_push_launch(const Params &p, PushState *state, unsigned long long generation,
                                                   uint32_t prev_packs, unsigned long long ticket) {
    if (!kClear) {
        const uint4 empty = make_uint4(kSentinelWord, kSentinelWord, kSentinelWord, kSentinelWord);
        const unsigned long long previous = generation + kPushGenerations - 1;
        const int64_t stride = (int64_t)gridDim.x * blockDim.x;
        const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
        for (int s = 0; s < WS; ++s) {
            if (s == p.rank) continue;
            uint4 *slot = push_slot(p.self, p.push_offset, previous, s);
            for (int64_t i = first; i < (int64_t)prev_packs; i += stride) slot[i] = empty;
        }
    }

    __syncthreads();  // every thread has read the state above and finished its work
    if (threadIdx.x == 0) {
        state->generation = generation + 1;
        state->prev_packs = (uint32_t)p.npacks;
        leave_block(p, ticket);
    }
}

// Clear on read: stores the sentinel into pack i of every peer's slot of this rank's buffer of
// `generation`, after this thread consumed them (its loads of those addresses came first).
template <int WS>
__device__ __forceinline__ void clear_consumed(const Params &p, unsigned long long generation, int64_t i) {
    const uint4 empty = make_uint4(kSentinelWord, kSentinelWord, kSentinelWord, kSentinelWord);
    uint4 *slots = push_slot(p.self, p.push_offset, generation, 0);
#pragma unroll
    for (int s = 0; s < WS; ++s) {
        if (s != p.rank) slots[s * kSlotPacks + i] = empty;
    }
}

// Pass-on (AR4J_VARIANT_PUSH_PASS_ON_POISON): thread 0 of a push block that gives up (poisoned at
// entry or while polling, or timed out) passes the poison of this rank's Signal on to every peer's,
// as the pull kernels do at their exit: a peer that the poisoning host or kernel could not reach
// learns it from here instead of waiting out its deadline. Off by default: the code made
// push_kernel<fp16/bf16, 2> spill when it was unconditional (kernel_sync.cuh).
// push_kernel takes it as a template parameter (kPassOn): inlined behind a run-time test, the code
// made the default push_kernel<*, 4> and <float, 2> spill (nvcc 13.0), and out of line (a call) it
// changed their register allocation too. push_rmsnorm_kernel keeps the run-time test (compiled:
// no spill, its registers within one of the kernel without it).
template <int WS>
__device__ __forceinline__ void push_give_up(const Params &p) {
    if (threadIdx.x == 0 && (p.variants & kVariantPushPassOnPoison) != 0) pass_on_poison<WS>(p);
}

// The early trigger, when in effect (the host turns it off when ranks share a GPU): right after
// griddepcontrol.wait. Calling launch_dependents again later is harmless.
__device__ __forceinline__ void pdl_trigger_early(const Params &p) {
    if ((p.variants & kVariantPushEarlyTrigger) != 0) pdl_launch_dependents();
}

// kEarly: the early trigger, as a template parameter (the launch picks the instance from
// p.variants), so that the default instance has no run-time test of it (the test costs the
// default kernel time on every call, PDL on and off).
template <typename T, int WS, bool kClear = false, bool kPassOn = false, bool kEarly = false>
__global__ void __launch_bounds__(kPushThreads) push_kernel(Params p) {
    using Tr = PackTraits<T>;
    pdl_wait();
    if (kEarly) pdl_launch_dependents();
    __shared__ unsigned long long s_generation;
    __shared__ int s_abort;
    PushState *state = &p.self->push[blockIdx.x];
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    // The first input pack is loaded before the barrier, in flight with thread 0's entry checks
    // (a read only; nothing is stored before the checks passed).
    uint4 first_in = make_uint4(0, 0, 0, 0);
    if (first < p.npacks) first_in = p.local_in[first];
    const uint32_t prev_packs = state->prev_packs;
    unsigned long long ticket = 0;
    if (threadIdx.x == 0) {
        const unsigned long long g = state->generation;  // in flight with enter_block's accesses
        s_abort = enter_block<WS>(p, ticket);
        s_generation = g;
    }
    __syncthreads();
    if (s_abort != 0) {
        if (kPassOn && threadIdx.x == 0) pass_on_poison<WS>(p);
        fill_output_nan<T>(p);
        return;
    }
    const unsigned long long generation = s_generation;

    // 1. Push this rank's input into slot `rank` of every peer's current buffer.
    for (int64_t i = first; i < p.npacks; i += stride) {
        const uint4 v = clean_pack<T>(i == first ? first_in : p.local_in[i]);
#pragma unroll
        for (int k = 1; k < WS; ++k) {
            const int peer = (p.rank + k) % WS;
            push_slot(peer_signal<WS>(p, peer), p.push_offset, generation, p.rank)[i] = v;
        }
    }

    // 2. Wait for every peer's slot and reduce in rank order.
    bool ok = true;
    for (int64_t i = first; i < p.npacks && ok; i += stride) {
        uint4 v[WS];
        // All slots' loads are issued together; only those still empty are polled.
#pragma unroll
        for (int s = 0; s < WS; ++s) {
            v[s] = s == p.rank ? clean_pack<T>(i == first ? first_in : p.local_in[i])
                               : load_volatile_pack(push_slot(p.self, p.push_offset, generation, s) + i);
        }
#pragma unroll
        for (int s = 0; s < WS; ++s) {
            if (s != p.rank && ok && pack_empty<T>(v[s])) {
                ok = poll_pack<T, WS>(push_slot(p.self, p.push_offset, generation, s) + i, v[s], p, s);
            }
        }
        if (!ok) break;
        float acc[Tr::kElems];
        Tr::unpack(v[0], acc);
#pragma unroll
        for (int s = 1; s < WS; ++s) {
            float x[Tr::kElems];
            Tr::unpack(v[s], x);
#pragma unroll
            for (int e = 0; e < Tr::kElems; ++e) acc[e] += x[e];
        }
        if (kClear) clear_consumed<WS>(p, generation, i);
        p.out[i] = Tr::pack(acc);
    }
    // Block-uniform: every thread reaches this barrier, also those whose wait gave up.
    if (__syncthreads_or(!ok)) {
        if (kPassOn && threadIdx.x == 0) pass_on_poison<WS>(p);
        fill_output_nan<T>(p);  // the context is failed from here on; its state is left as is
        return;
    }
    pdl_launch_dependents();  // every poll is done: the rest needs no peer

    // 3. Refill the previous generation's buffer (not with kClear) and advance the block's state.
    finish_push_launch<WS, kClear>(p, state, generation, prev_packs, ticket);
}

__global__ void fill_words(uint32_t *p, size_t words, uint32_t value) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < words; i += (size_t)gridDim.x * blockDim.x) {
        p[i] = value;
    }
}

}  // namespace ar4j
