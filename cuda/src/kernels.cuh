// ar4j custom all-reduce kernels: signal layout, bounded cross-GPU barriers, 1-stage and
// 2-stage reductions over 16-byte packs.
//
// Synchronisation model
// ---------------------
// Every rank owns one Signal in its device memory. For CUDA block b, rank s announces that
// it reached its k-th barrier by storing a counter value into flags[b][s] of every rank's
// Signal (a remote store over NVLink/PCIe), then polls flags[b][p] of its own Signal for
// every peer p. Counter values only grow (one per barrier, never reset), so a single slot
// per (block, source) serves every barrier of every launch, and a flag that is already
// ahead (the peer passed this barrier and reached the next one) still satisfies the wait.
// Each waiting thread t keeps its own copy of the block's counter in counters[b][t], so
// no shared memory is needed to agree on it. All ranks launch the same grid for the same
// call, so block b meets block b.
//
// Memory ordering:
//  - start barrier: relaxed. The inputs were written by earlier work in the peers' streams
//    (previous kernels or copies), complete before this kernel started.
//  - 2-stage middle barrier: release/acquire at system scope, because the slices reduced
//    in stage 1 are read by peers in stage 2.
//  - end/round barriers after reads only: relaxed, after __syncthreads(). Every value read
//    from a peer is stored (to the output, scratch or shared memory) before the barrier, so
//    the loads have returned before the flag is written.
//
// Bounded waits: every 64 unsuccessful polls a waiting thread reads its Signal's poison word;
// it reads %globaltimer only after 256 polls and then every 1024 polls, so a fast barrier never
// touches the clock. When the wait exceeds the context's deadline it records (peer, block,
// barrier, flag) in a host-mapped error word and poisons the group (its own Signal and every
// peer's); a block that gives up, for either reason, writes NaN over the whole output and
// returns, block-uniformly (after a __syncthreads, never before one).
//
// Entry protocol (every kernel, thread 0, after griddepcontrol.wait): take a ticket for the
// block index (atomicAdd) and read `done` and the poison word, all in flight together with the
// block's first loads. Poisoned, or done != ticket (another launch of this context runs the same
// block: two streams or graphs at once), and the block stores nothing any peer reads and writes
// NaN. Measured cost (2 ranks sharing one H200, CUDA graph): about 0.3 us per push call, which
// programmatic dependent launch more than recovers.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "kernel_interface.cuh"

namespace ar4j {

// ---------------------------------------------------------------------------------------
// Programmatic dependent launch (sm_90+). A kernel launched with the programmatic stream
// serialization attribute may start before the previous kernel in its stream has finished;
// griddepcontrol.wait blocks until that kernel completed and its memory is visible, so it
// precedes every access to the signal block, the push state, the input and the output.
// launch_dependents lets the next such kernel launch early; its memory safety never depends on
// the placement (that kernel waits in griddepcontrol.wait for this grid's completion), but its
// residency does: the next kernel's blocks hold SM slots while they wait, and this kernel's
// peers (other ranks' kernels on the same GPU, when ranks share one) may still need slots. So a
// block triggers only after its last wait for a peer: from then on it finishes by itself and
// frees its slots. (Triggered at entry, 8 ranks sharing one H200 deadlocked until the deadline:
// push_kernel<*, 8> fits 2 blocks per SM, 264 in all, and 8 ranks need 256.) Both are no-ops
// in a kernel launched without the attribute.

__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// ---------------------------------------------------------------------------------------
// Flags, clock, poison and the error words.

__device__ __forceinline__ void store_flag_relaxed(uint32_t *p, uint32_t v) {
    asm volatile("st.relaxed.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ void store_flag_release(uint32_t *p, uint32_t v) {
    asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ uint32_t load_flag_relaxed(const uint32_t *p) {
    uint32_t v;
    asm volatile("ld.relaxed.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ uint32_t load_flag_acquire(const uint32_t *p) {
    uint32_t v;
    asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ uint64_t global_timer_ns() {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ unsigned long long load_u64_relaxed(const unsigned long long *p) {
    unsigned long long v;
    asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ void store_u64_relaxed(unsigned long long *p, unsigned long long v) {
    asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

// p.peers[i] for a run-time i without copying the parameter array to local memory.
template <int WS>
__device__ __forceinline__ Signal *peer_signal(const Params &p, int i) {
    Signal *s = p.self;
#pragma unroll
    for (int r = 0; r < WS; ++r) {
        if (r == i) s = p.peers[r];
    }
    return s;
}

// Notes in the host-mapped word that this rank's kernels saw (or set) poison `v`; the first value stays.
__device__ __forceinline__ void note_poison(const Params &p, unsigned long long v) {
    if (load_u64_relaxed(p.error_word + 1) == 0) store_u64_relaxed(p.error_word + 1, v);
}

// Poisons this rank's Signal and every peer's (a value already there stays: the first cause wins).
template <int WS>
__device__ __forceinline__ void poison_group(const Params &p, unsigned long long v) {
#pragma unroll
    for (int r = 0; r < WS; ++r) {
        unsigned long long *w = &peer_signal<WS>(p, r)->poison;
        if (load_u64_relaxed(w) == 0) store_u64_relaxed(w, v);
    }
    __threadfence_system();
    note_poison(p, v);
}

// Error word layout (host decodes the same): bit 63 valid, 56..62 peer, 48..55 barrier
// ordinal, 32..47 block, 0..31 expected flag value. Then the group is poisoned.
template <int WS>
__device__ __forceinline__ void record_timeout(const Params &p, int peer, int ordinal, uint32_t flag) {
    unsigned long long w = (1ull << 63) | ((unsigned long long)(peer & 0x7f) << 56) |
                           ((unsigned long long)(ordinal & 0xff) << 48) |
                           ((unsigned long long)(blockIdx.x & 0xffff) << 32) | flag;
    if (load_u64_relaxed(p.error_word) == 0) store_u64_relaxed(p.error_word, w);
    poison_group<WS>(p, make_poison(p.rank, kPoisonTimeout, peer, blockIdx.x));
}

// Called by a waiting thread every 64 polls: false if the wait must give up, because the group
// is poisoned or (timer started at 256 polls, read every 1024) the deadline passed.
template <int WS>
__device__ __forceinline__ bool keep_waiting(const Params &p, uint32_t polls, uint64_t &since, int peer, int ordinal,
                                             uint32_t flag) {
    const unsigned long long v = load_u64_relaxed(&p.self->poison);
    if (v != 0) {
        note_poison(p, v);
        return false;
    }
    if (polls == 256) {
        since = global_timer_ns();
    } else if (polls > 256 && (polls & 1023u) == 0 && global_timer_ns() - since > p.deadline_ns) {
        record_timeout<WS>(p, peer, ordinal, flag);
        return false;
    }
    return true;
}

// Waits until *flag has reached `expected` (wrap-around safe). False if it gave up.
template <int WS, bool kAcquire>
__device__ __forceinline__ bool wait_flag(const uint32_t *flag, uint32_t expected, const Params &p,
                                          int peer, int ordinal) {
    uint32_t polls = 0;
    uint64_t since = 0;
    while (true) {
        uint32_t v = kAcquire ? load_flag_acquire(flag) : load_flag_relaxed(flag);
        if ((int32_t)(v - expected) >= 0) return true;
        ++polls;
        if ((polls & 63u) == 0 && !keep_waiting<WS>(p, polls, since, peer, ordinal, expected)) return false;
    }
}

// Entry of every kernel, by thread 0 after griddepcontrol.wait: takes this launch's ticket for
// the block index and reads the poison word (both in flight together). Returns 0 if the launch
// may go on, else non-zero (poisoned, or overlapping another launch of this context).
template <int WS>
__device__ __forceinline__ int enter_block(const Params &p, unsigned long long &ticket) {
    BlockState *b = &p.self->blocks[blockIdx.x];
    ticket = atomicAdd(&b->ticket, 1ull);
    const unsigned long long done = *reinterpret_cast<volatile unsigned long long *>(&b->done);
    const unsigned long long v = load_u64_relaxed(&p.self->poison);
    if (v != 0) {
        note_poison(p, v);
        return 1;
    }
    if (done != ticket) {
        poison_group<WS>(p, make_poison(p.rank, kPoisonConcurrentUse, 0xff, blockIdx.x));
        return 2;
    }
    return 0;
}

// Thread 0, after a __syncthreads() that follows all of the block's work.
__device__ __forceinline__ void leave_block(const Params &p, unsigned long long ticket) {
    *reinterpret_cast<volatile unsigned long long *>(&p.self->blocks[blockIdx.x].done) = ticket + 1;
}

// A barrier among the same block index of every rank. Threads 0..WS-1 each handle one
// peer. Returns false (for the whole block) if any wait gave up, or if *abort_flag was already
// set before it (thread 0's enter_block() result, before the start barrier): then the block
// stores no flag, so a poisoned or overlapping launch changes nothing a peer reads.
template <int WS, bool kAcqRel>
__device__ __forceinline__ bool block_barrier(const Params &p, uint32_t &counter, int ordinal,
                                              volatile int *abort_flag) {
    __syncthreads();
    if (threadIdx.x < WS && *abort_flag == 0) {
        const int peer = threadIdx.x;
        const uint32_t next = ++counter;
        uint32_t *remote = &peer_signal<WS>(p, peer)->flags[blockIdx.x][p.rank];
        if (kAcqRel) {
            store_flag_release(remote, next);
        } else {
            store_flag_relaxed(remote, next);
        }
        if (!wait_flag<WS, kAcqRel>(&p.self->flags[blockIdx.x][peer], next, p, peer, ordinal)) {
            *abort_flag = 1;
        }
    }
    __syncthreads();
    return *abort_flag == 0;
}

// The last barrier of a launch: after it, no peer reads this rank's input any more.
// It also saves the counters for the next launch. False if a wait gave up (the output is
// complete and exact then; the group is poisoned).
template <int WS>
__device__ __forceinline__ void final_barrier(const Params &p, uint32_t counter, int ordinal) {
    __syncthreads();
    if (threadIdx.x < WS) {
        const int peer = threadIdx.x;
        const uint32_t next = counter + 1;
        store_flag_relaxed(&peer_signal<WS>(p, peer)->flags[blockIdx.x][p.rank], next);
        wait_flag<WS, false>(&p.self->flags[blockIdx.x][peer], next, p, peer, ordinal);
        p.self->counters[blockIdx.x][peer] = next;
    }
}

// ---------------------------------------------------------------------------------------
// 16-byte packs and fp32 accumulation.

template <typename T>
struct PackTraits;

template <>
struct PackTraits<float> {
    static constexpr int kElems = 4;
    __device__ __forceinline__ static void unpack(const uint4 &v, float (&f)[4]) {
        f[0] = __uint_as_float(v.x);
        f[1] = __uint_as_float(v.y);
        f[2] = __uint_as_float(v.z);
        f[3] = __uint_as_float(v.w);
    }
    __device__ __forceinline__ static uint4 pack(const float (&f)[4]) {
        return make_uint4(__float_as_uint(f[0]), __float_as_uint(f[1]), __float_as_uint(f[2]),
                          __float_as_uint(f[3]));
    }
};

template <>
struct PackTraits<__half> {
    static constexpr int kElems = 8;
    __device__ __forceinline__ static float2 to2(uint32_t w) {
        __half2 h = *reinterpret_cast<const __half2 *>(&w);
        return __half22float2(h);
    }
    __device__ __forceinline__ static uint32_t from2(float a, float b) {
        __half2 h = __floats2half2_rn(a, b);
        return *reinterpret_cast<const uint32_t *>(&h);
    }
    __device__ __forceinline__ static void unpack(const uint4 &v, float (&f)[8]) {
        float2 a = to2(v.x), b = to2(v.y), c = to2(v.z), d = to2(v.w);
        f[0] = a.x; f[1] = a.y; f[2] = b.x; f[3] = b.y;
        f[4] = c.x; f[5] = c.y; f[6] = d.x; f[7] = d.y;
    }
    __device__ __forceinline__ static uint4 pack(const float (&f)[8]) {
        return make_uint4(from2(f[0], f[1]), from2(f[2], f[3]), from2(f[4], f[5]), from2(f[6], f[7]));
    }
};

template <>
struct PackTraits<__nv_bfloat16> {
    static constexpr int kElems = 8;
    __device__ __forceinline__ static float2 to2(uint32_t w) {
        __nv_bfloat162 h = *reinterpret_cast<const __nv_bfloat162 *>(&w);
        return __bfloat1622float2(h);
    }
    __device__ __forceinline__ static uint32_t from2(float a, float b) {
        __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
        return *reinterpret_cast<const uint32_t *>(&h);
    }
    __device__ __forceinline__ static void unpack(const uint4 &v, float (&f)[8]) {
        float2 a = to2(v.x), b = to2(v.y), c = to2(v.z), d = to2(v.w);
        f[0] = a.x; f[1] = a.y; f[2] = b.x; f[3] = b.y;
        f[4] = c.x; f[5] = c.y; f[6] = d.x; f[7] = d.y;
    }
    __device__ __forceinline__ static uint4 pack(const float (&f)[8]) {
        return make_uint4(from2(f[0], f[1]), from2(f[2], f[3]), from2(f[4], f[5]), from2(f[6], f[7]));
    }
};

// Sum of pack i over all ranks, always in rank order 0..WS-1 so every rank computes the
// bitwise-same result. All WS loads are issued before the first add.
template <typename T, int WS>
__device__ __forceinline__ uint4 reduce_pack(const uint4 *const (&src)[WS], int64_t i) {
    using Tr = PackTraits<T>;
    uint4 v[WS];
#pragma unroll
    for (int r = 0; r < WS; ++r) v[r] = src[r][i];
    float acc[Tr::kElems];
    Tr::unpack(v[0], acc);
#pragma unroll
    for (int r = 1; r < WS; ++r) {
        float x[Tr::kElems];
        Tr::unpack(v[r], x);
#pragma unroll
        for (int e = 0; e < Tr::kElems; ++e) acc[e] += x[e];
    }
    return Tr::pack(acc);
}

template <int WS>
__device__ __forceinline__ void load_sources(const Params &p, const uint4 *(&src)[WS]) {
#pragma unroll
    for (int r = 0; r < WS; ++r) {
        src[r] = reinterpret_cast<const uint4 *>(static_cast<const char *>(p.inputs->ptrs[r]) + p.in_offset);
    }
}

// ---------------------------------------------------------------------------------------
// NaN: what a poisoned or failed launch leaves in its output. The whole output, from every
// block that gives up (blocks that completed before may have left exact values): never a
// plausible number.

template <typename T>
struct NanWord;
template <>
struct NanWord<float> { static constexpr uint32_t kValue = 0x7fc00000u; };
template <>
struct NanWord<__half> { static constexpr uint32_t kValue = 0x7e007e00u; };
template <>
struct NanWord<__nv_bfloat16> { static constexpr uint32_t kValue = 0x7fc07fc0u; };

template <typename T>
__device__ __forceinline__ void fill_output_nan(const Params &p) {
    const uint32_t w = NanWord<T>::kValue;
    const uint4 nan = make_uint4(w, w, w, w);
    for (int64_t i = threadIdx.x; i < p.npacks; i += blockDim.x) p.out[i] = nan;
}

// ---------------------------------------------------------------------------------------
// 1-stage: every rank reads all inputs and reduces everything.
// kInPlace: out aliases this rank's input, which peers are still reading; each grid-stride
// round is reduced into registers, then a barrier, then written.

template <typename T, int WS, bool kInPlace>
__global__ void __launch_bounds__(1024) one_stage_kernel(Params p) {
    pdl_wait();
    __shared__ int abort_flag;
    uint32_t counter = 0;
    if (threadIdx.x < WS) counter = p.self->counters[blockIdx.x][threadIdx.x];
    const uint4 *src[WS];
    load_sources<WS>(p, src);
    unsigned long long ticket = 0;
    if (threadIdx.x == 0) abort_flag = enter_block<WS>(p, ticket);  // in flight with the loads above

    if (!block_barrier<WS, false>(p, counter, 0, &abort_flag)) {
        fill_output_nan<T>(p);
        return;
    }

    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int ordinal = 1;
    if (!kInPlace) {
        for (int64_t i = first; i < p.npacks; i += stride) {
            p.out[i] = reduce_pack<T, WS>(src, i);
        }
    } else {
        // The round's sums go through shared memory, not registers: a store needs its data,
        // so every peer load of the round has returned before the barrier announces that
        // this rank is done reading. (Kept in registers, the compiler may move the adds
        // after the barrier and leave loads in flight while a peer overwrites its input.)
        __shared__ uint4 staged[1024];
        const int64_t rounds = (p.npacks + stride - 1) / stride;
        for (int64_t k = 0; k < rounds; ++k) {
            const int64_t i = k * stride + first;
            if (i < p.npacks) staged[threadIdx.x] = reduce_pack<T, WS>(src, i);
            if (!block_barrier<WS, false>(p, counter, ordinal++, &abort_flag)) {
                fill_output_nan<T>(p);
                return;
            }
            if (i < p.npacks) p.out[i] = staged[threadIdx.x];
        }
    }
    final_barrier<WS>(p, counter, ordinal);
    __syncthreads();
    pdl_launch_dependents();  // no wait follows
    if (threadIdx.x == 0) leave_block(p, ticket);
}

// ---------------------------------------------------------------------------------------
// 2-stage: rank r reduces slice r (reduce-scatter) into its output and its scratch; after
// a release/acquire barrier every rank copies the other slices from the peers' scratch
// (all-gather). Slice boundaries are in packs; the last slice takes the remainder.
//
// No final barrier is needed: a peer's stage-1 reads of this rank's input end before that
// peer's block arrives at the middle barrier, and this rank's scratch is rewritten only by
// its next launch, after a start barrier that the peer reaches only once its previous
// launch (and its stage-2 reads) completed in stream order.

template <typename T, int WS>
__global__ void __launch_bounds__(1024) two_stage_kernel(Params p) {
    pdl_wait();
    __shared__ int abort_flag;
    uint32_t counter = 0;
    if (threadIdx.x < WS) counter = p.self->counters[blockIdx.x][threadIdx.x];
    const uint4 *src[WS];
    load_sources<WS>(p, src);
    unsigned long long ticket = 0;
    if (threadIdx.x == 0) abort_flag = enter_block<WS>(p, ticket);  // in flight with the loads above

    const int64_t part = p.npacks / WS;
    const int64_t my_start = (int64_t)p.rank * part;
    const int64_t my_size = (p.rank == WS - 1) ? p.npacks - my_start : part;
    uint4 *scratch = reinterpret_cast<uint4 *>(reinterpret_cast<char *>(p.self) + kScratchOffset);

    if (!block_barrier<WS, false>(p, counter, 0, &abort_flag)) {
        fill_output_nan<T>(p);
        return;
    }

    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (int64_t i = first; i < my_size; i += stride) {
        const uint4 r = reduce_pack<T, WS>(src, my_start + i);
        scratch[i] = r;
        p.out[my_start + i] = r;
    }

    if (!block_barrier<WS, true>(p, counter, 1, &abort_flag)) {
        fill_output_nan<T>(p);
        return;
    }
    pdl_launch_dependents();  // the last wait is behind: stage 2 only copies

#pragma unroll
    for (int k = 1; k < WS; ++k) {
        const int q = (p.rank + k) % WS;  // start with the next rank to spread link traffic
        const int64_t q_start = (int64_t)q * part;
        const int64_t q_size = (q == WS - 1) ? p.npacks - q_start : part;
        const uint4 *peer_scratch =
            reinterpret_cast<const uint4 *>(reinterpret_cast<const char *>(peer_signal<WS>(p, q)) + kScratchOffset);
        for (int64_t i = first; i < q_size; i += stride) {
            p.out[q_start + i] = peer_scratch[i];
        }
    }
    if (threadIdx.x < WS) p.self->counters[blockIdx.x][threadIdx.x] = counter;
    __syncthreads();
    if (threadIdx.x == 0) leave_block(p, ticket);
}

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

template <typename T, int WS>
__global__ void __launch_bounds__(kPushThreads) push_kernel(Params p) {
    using Tr = PackTraits<T>;
    pdl_wait();
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
        p.out[i] = Tr::pack(acc);
    }
    // Block-uniform: every thread reaches this barrier, also those whose wait gave up.
    if (__syncthreads_or(!ok)) {
        fill_output_nan<T>(p);  // the context is failed from here on; its state is left as is
        return;
    }
    pdl_launch_dependents();  // every poll is done: the rest needs no peer

    // 3. Refill the previous generation's buffer (every peer's data in it was consumed).
    const uint4 empty = make_uint4(kSentinelWord, kSentinelWord, kSentinelWord, kSentinelWord);
    const unsigned long long previous = generation + kPushGenerations - 1;
    for (int s = 0; s < WS; ++s) {
        if (s == p.rank) continue;
        uint4 *slot = push_slot(p.self, p.push_offset, previous, s);
        for (int64_t i = first; i < (int64_t)prev_packs; i += stride) slot[i] = empty;
    }

    __syncthreads();  // every thread has read the state above and finished its work
    if (threadIdx.x == 0) {
        state->generation = generation + 1;
        state->prev_packs = (uint32_t)p.npacks;
        leave_block(p, ticket);
    }
}

__global__ void fill_words(uint32_t *p, size_t words, uint32_t value) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < words; i += (size_t)gridDim.x * blockDim.x) {
        p[i] = value;
    }
}

}  // namespace ar4j
