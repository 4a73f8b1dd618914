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
// Bounded waits: every 64 unsuccessful polls a waiting thread reads its Signal's poison words;
// it reads %globaltimer only after 256 polls and then every 1024 polls, so a fast barrier never
// touches the clock (a timer that steps back counts as no time: elapsed_ns). When the wait
// exceeds the context's deadline it records (peer, block, barrier, flag) in a host-mapped error
// word and poisons the group (its own Signal and every peer's). A block that gives up, for either
// reason, writes NaN over the whole output and returns, block-uniformly (after a __syncthreads,
// never before one); in the pull kernels (1-stage, 2-stage, fused 1-stage) it first passes the
// poison on to every peer's Signal (thread 0, pass_on_poison, at the kernel's one give-up exit: a
// peer that the poisoning host or kernel could not reach learns it from here, instead of waiting
// out its deadline). The default push kernels do not pass it on (in push_kernel<fp16/bf16, 2> that
// code alone makes ptxas spill): a push rank that gives up leaves its peers to their own poison
// reads and deadlines; with AR4J_VARIANT_PUSH_PASS_ON_POISON they do (push_kernel.cuh).
//
// Last barrier: a peer that passed its barriers on flags this rank had already stored may still
// be reading this rank's input when this rank's wait gives up, returns, and its stream's next
// work overwrites that input. The rank that gave up poisoned the group before it returned, so
// the pull kernels (1-stage, 2-stage, fused 1-stage) read the poison words once more after their
// last barrier: poisoned, and the block writes NaN over the whole output, as a block that gives up.
// A peer that read an overwritten input therefore never leaves it in its output. The read needs no
// fence before it: every peer load of the block returned before the barrier (its value was summed
// and stored before the barrier's __syncthreads), so the read, issued after, is performed after all
// of them; a load that saw the overwrite saw a write made after the poison (the giving-up rank's
// poison_group fences at system scope before it returns). A fence.acq_rel.sys there cost 0.7 us a
// call (docs/verification/kernels.md, "The last barrier's check").
//
// Entry protocol (every kernel, thread 0, after griddepcontrol.wait): take a ticket for the
// block index (atomicAdd) and read `done` and the poison word, all in flight together with the
// block's first loads. Poisoned, or done != ticket (another launch of this context runs the same
// block: two streams or graphs at once), and the block stores nothing any peer reads and writes
// NaN. Its cost per call is smaller than what programmatic dependent launch saves
// (docs/verification/runs.md).
#pragma once

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

// Both poison words of a Signal in one 16-byte load.
struct PoisonPair {
    unsigned long long kernels, hosts;
    __device__ __forceinline__ bool set() const { return (kernels | hosts) != 0; }
    // The kernels' word if set, else the hosts'.
    __device__ __forceinline__ unsigned long long value() const { return kernels != 0 ? kernels : hosts; }
};

__device__ __forceinline__ PoisonPair load_poison_pair(const Signal *s) {
    PoisonPair v;
    asm volatile("ld.relaxed.sys.global.v2.u64 {%0, %1}, [%2];" : "=l"(v.kernels), "=l"(v.hosts) : "l"(&s->poison)
                 : "memory");
    return v;
}

// The kernels' poison word if set, else the hosts' (0: healthy).
__device__ __forceinline__ unsigned long long load_poison(const Signal *s) { return load_poison_pair(s).value(); }


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

// Poisons this rank's Signal and every peer's (the kernels' word; a value already there stays: the
// first cause wins). Also passes on a poison this rank found: v is then the value found.
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

// Poisons this rank's Signal alone (the kernels' word, if none is set yet) and notes it: for a
// block that gives up right after, whose exit passes it on to every peer (pass_on_poison).
__device__ __forceinline__ void poison_self(const Params &p, unsigned long long v) {
    if (load_u64_relaxed(&p.self->poison) == 0) store_u64_relaxed(&p.self->poison, v);
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

// Thread 0 of a block that gives up: passes the poison of this rank's Signal on to every peer's
// (once per block, at the kernel's one give-up exit, not at every wait: the waits stay small).
template <int WS>
__device__ __forceinline__ void pass_on_poison(const Params &p) {
    const unsigned long long v = load_poison(p.self);
    if (v != 0) poison_group<WS>(p, v);
}

// Called by a waiting thread every 64 polls: false if the wait must give up, because the group
// is poisoned or (timer started at 256 polls, read every 1024) the deadline passed.
template <int WS>
__device__ __forceinline__ bool keep_waiting(const Params &p, uint32_t polls, uint64_t &since, int peer, int ordinal,
                                             uint32_t flag) {
    const PoisonPair v = load_poison_pair(p.self);
    if (v.set()) {
        note_poison(p, v.value());  // the block passes it on as it gives up (pass_on_poison)
        return false;
    }
    if (polls == 256) {
        since = global_timer_ns();
    } else if (polls > 256 && (polls & 1023u) == 0 && elapsed_ns(global_timer_ns(), since) > p.deadline_ns) {
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
    const PoisonPair v = load_poison_pair(p.self);
    if (v.set()) {
        note_poison(p, v.value());  // the block passes it on as it gives up (pass_on_poison)
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

// After a pull kernel's last barrier, with every wait of the block done (the caller's
// __syncthreads before): thread 0 reads the poison words (a strong system-scope load, never a stale
// cached copy). Every peer value the block loaded was used before that __syncthreads, so those loads
// are complete and the read comes after them (see "Last barrier" above for why no fence is needed).
// False (for the whole block) if a wait gave up or the group is poisoned: the caller writes NaN.
template <int WS>
__device__ __forceinline__ bool clean_after_last_barrier(const Params &p, volatile int *abort_flag) {
    if (threadIdx.x == 0) {
        if (*abort_flag == 0) {
            const unsigned long long v = load_poison(p.self);
            if (v != 0) {
                note_poison(p, v);
                *abort_flag = 1;
            }
        }
    }
    __syncthreads();
    return *abort_flag == 0;
}

// The last barrier of a 1-stage launch: after it, no peer reads this rank's input any more.
// It also saves the counters for the next launch. False if a wait gave up (it recorded the
// timeout and poisoned the group) or the group is poisoned (clean_after_last_barrier): the
// caller writes NaN over its output.
template <int WS>
__device__ __forceinline__ bool final_barrier(const Params &p, uint32_t counter, int ordinal, volatile int *abort_flag) {
    __syncthreads();
    if (threadIdx.x < WS) {
        const int peer = threadIdx.x;
        const uint32_t next = counter + 1;
        store_flag_relaxed(&peer_signal<WS>(p, peer)->flags[blockIdx.x][p.rank], next);
        if (!wait_flag<WS, false>(&p.self->flags[blockIdx.x][peer], next, p, peer, ordinal)) *abort_flag = 1;
        p.self->counters[blockIdx.x][peer] = next;
    }
    __syncthreads();
    return clean_after_last_barrier<WS>(p, abort_flag);
}

}  // namespace ar4j
