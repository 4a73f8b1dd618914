#pragma once

#include "kernel_sync.cuh"
#include "packs.cuh"

namespace ar4j {

// The entry of the 1-stage and 2-stage kernels (fused or not), before their start barrier:
// thread t < WS takes its saved barrier counter for peer t, every thread the ranks' input
// pointers, and thread 0 the launch ticket and the poison check (in flight with those loads),
// whose result goes to `abort_flag` (block-shared). A NULL input pointer (a graph replayed before
// its inputs were registered) poisons the group (AR4J_POISON_UNREGISTERED) instead of faulting:
// the block then reads no input, stores no flag, and gives up at its start barrier, whose exit
// passes the poison on to every peer.
template <int WS>
__device__ __forceinline__ void enter_staged(const Params &p, uint32_t &counter, const uint4 *(&src)[WS],
                                             unsigned long long &ticket, int &abort_flag) {
    counter = 0;
    if (threadIdx.x < WS) counter = p.self->counters[blockIdx.x][threadIdx.x];
    load_sources<WS>(p, src);
    ticket = 0;
    if (threadIdx.x == 0) {
        int abort = enter_block<WS>(p, ticket);  // in flight with the loads above
        // A slot is all NULL (zeroed, not registered yet) or all non-NULL (checked at registration).
        if (abort == 0 && p.inputs->ptrs[0] == nullptr) {
            poison_self(p, make_poison(p.rank, kPoisonUnregistered, 0xff, blockIdx.x));  // passed on at the exit
            abort = 3;
        }
        abort_flag = abort;
    }
}

// ---------------------------------------------------------------------------------------
// 1-stage: every rank reads all inputs and reduces everything.
// kInPlace: out aliases this rank's input, which peers are still reading; each grid-stride
// round is reduced into registers, then a barrier, then written.

template <typename T, int WS, bool kInPlace>
__global__ void __launch_bounds__(1024) one_stage_kernel(Params p) {
    pdl_wait();
    __shared__ int abort_flag;
    uint32_t counter;
    const uint4 *src[WS];
    unsigned long long ticket;
    enter_staged<WS>(p, counter, src, ticket, abort_flag);

    // One exit for a block that gives up (at any barrier): it passes the poison on and writes NaN.
    bool ok = block_barrier<WS, false>(p, counter, 0, &abort_flag);
    if (ok) {
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
            for (int64_t k = 0; k < rounds && ok; ++k) {
                const int64_t i = k * stride + first;
                if (i < p.npacks) staged[threadIdx.x] = reduce_pack<T, WS>(src, i);
                ok = block_barrier<WS, false>(p, counter, ordinal++, &abort_flag);
                if (ok && i < p.npacks) p.out[i] = staged[threadIdx.x];
            }
        }
        if (ok) ok = final_barrier<WS>(p, counter, ordinal, &abort_flag);
    }
    if (!ok) {
        if (threadIdx.x == 0) pass_on_poison<WS>(p);
        fill_output_nan<T>(p);
        return;
    }
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
// launch (and its stage-2 reads) completed in stream order. The middle barrier is the last one:
// after it the poison words are read once more (clean_after_last_barrier), so a slice reduced
// from an input its owner overwrote after giving up (it poisoned the group first) becomes NaN.

template <typename T, int WS>
__global__ void __launch_bounds__(1024) two_stage_kernel(Params p) {
    pdl_wait();
    __shared__ int abort_flag;
    uint32_t counter;
    const uint4 *src[WS];
    unsigned long long ticket;
    enter_staged<WS>(p, counter, src, ticket, abort_flag);

    const int64_t part = p.npacks / WS;
    const int64_t my_start = (int64_t)p.rank * part;
    const int64_t my_size = (p.rank == WS - 1) ? p.npacks - my_start : part;
    uint4 *scratch = reinterpret_cast<uint4 *>(reinterpret_cast<char *>(p.self) + kScratchOffset);

    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    // One exit for a block that gives up (at either barrier): it passes the poison on and writes NaN.
    bool ok = block_barrier<WS, false>(p, counter, 0, &abort_flag);
    if (ok) {
        for (int64_t i = first; i < my_size; i += stride) {
            const uint4 r = reduce_pack<T, WS>(src, my_start + i);
            scratch[i] = r;
            p.out[my_start + i] = r;
        }
        ok = block_barrier<WS, true>(p, counter, 1, &abort_flag) && clean_after_last_barrier<WS>(p, &abort_flag);
    }
    if (!ok) {
        if (threadIdx.x == 0) pass_on_poison<WS>(p);
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

}  // namespace ar4j
