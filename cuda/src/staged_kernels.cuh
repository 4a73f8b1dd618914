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

// ---------------------------------------------------------------------------------------
// Push-based 2-stage (AR4J_VARIANT_TWO_STAGE_PUSH; ar4j_all_reduce(TWO_STAGE) runs it when its
// scratch fits in max_bytes, two_stage_push_scratch_bytes): posted writes only across the links.
// Shards as for the 2-stage kernel; this rank's scratch is laid out as two_stage_push_slot_packs
// says (region A: the peers' parts of this rank's shard; region B: the peers' reduced shards).
//  0. start barrier (relaxed): every peer's previous launch has completed (its block b started
//     after it, in stream order), so nobody reads any scratch this launch writes (a pull 2-stage
//     launch before this one reads the peers' scratch in its stage 2);
//  1. stores shard q of this rank's input into region A of peer q, for every peer q;
//  2. barrier (release/acquire): every peer's part of this rank's shard has landed;
//  3. reduces this rank's shard in rank order (its own part from its input) into its output and
//     stores it into region B of every peer;
//  4. barrier (release/acquire), then the poison check (clean_after_last_barrier);
//  5. copies the peers' reduced shards from region B into the output (local reads).
// Pack i of a shard is handled by the same (block, thread) on every rank (same grid, same loops),
// so each barrier of block b covers exactly the stores block b waits for. In place is safe: this
// rank's input is read only by this rank, each shard pack of its own shard by the thread that
// overwrites it, the others before the barriers that precede their overwriting. No peer reads
// this rank's input or output, so a peer that gave up cannot make this rank read an overwritten
// input: a missing stage-3 store ends in this rank's timeout or the poison, and NaN.

template <int WS>
__device__ __forceinline__ uint4 *two_stage_push_slot(Signal *owner, int owner_rank, int writer, int region,
                                                      int64_t slot_packs) {
    const int index = region * (WS - 1) + (writer < owner_rank ? writer : writer - 1);
    return reinterpret_cast<uint4 *>(reinterpret_cast<char *>(owner) + kScratchOffset) + index * slot_packs;
}

template <typename T, int WS>
__global__ void __launch_bounds__(1024) two_stage_push_kernel(Params p) {
    using Tr = PackTraits<T>;
    pdl_wait();
    __shared__ int abort_flag;
    uint32_t counter;
    const uint4 *src[WS];
    unsigned long long ticket;
    enter_staged<WS>(p, counter, src, ticket, abort_flag);  // the registered input's NULL check, as 2-stage

    const int64_t part = p.npacks / WS;
    const int64_t slot_packs = two_stage_push_slot_packs(p.npacks, WS);
    const int64_t my_start = (int64_t)p.rank * part;
    const int64_t my_size = (p.rank == WS - 1) ? p.npacks - my_start : part;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const uint4 *in = p.local_in;

    bool ok = block_barrier<WS, false>(p, counter, 0, &abort_flag);
    if (ok) {
#pragma unroll
        for (int k = 1; k < WS; ++k) {
            const int q = (p.rank + k) % WS;
            const int64_t q_start = (int64_t)q * part;
            const int64_t q_size = (q == WS - 1) ? p.npacks - q_start : part;
            uint4 *dst = two_stage_push_slot<WS>(peer_signal<WS>(p, q), q, p.rank, 0, slot_packs);
            for (int64_t i = first; i < q_size; i += stride) dst[i] = in[q_start + i];
        }
        ok = block_barrier<WS, true>(p, counter, 1, &abort_flag);
    }
    if (ok) {
        for (int64_t i = first; i < my_size; i += stride) {
            uint4 v[WS];
#pragma unroll
            for (int s = 0; s < WS; ++s) {
                v[s] = s == p.rank ? in[my_start + i] : two_stage_push_slot<WS>(p.self, p.rank, s, 0, slot_packs)[i];
            }
            float acc[Tr::kElems];
            Tr::unpack(v[0], acc);
#pragma unroll
            for (int s = 1; s < WS; ++s) {
                float x[Tr::kElems];
                Tr::unpack(v[s], x);
#pragma unroll
                for (int e = 0; e < Tr::kElems; ++e) acc[e] += x[e];
            }
            const uint4 r = Tr::pack(acc);
            p.out[my_start + i] = r;
#pragma unroll
            for (int k = 1; k < WS; ++k) {
                const int q = (p.rank + k) % WS;
                two_stage_push_slot<WS>(peer_signal<WS>(p, q), q, p.rank, 1, slot_packs)[i] = r;
            }
        }
        ok = block_barrier<WS, true>(p, counter, 2, &abort_flag) && clean_after_last_barrier<WS>(p, &abort_flag);
    }
    if (!ok) {
        if (threadIdx.x == 0) pass_on_poison<WS>(p);
        fill_output_nan<T>(p);
        return;
    }
    pdl_launch_dependents();  // the last wait is behind: the rest is local copies

#pragma unroll
    for (int k = 1; k < WS; ++k) {
        const int q = (p.rank + k) % WS;
        const int64_t q_start = (int64_t)q * part;
        const int64_t q_size = (q == WS - 1) ? p.npacks - q_start : part;
        const uint4 *from = two_stage_push_slot<WS>(p.self, p.rank, q, 1, slot_packs);
        for (int64_t i = first; i < q_size; i += stride) p.out[q_start + i] = from[i];
    }
    if (threadIdx.x < WS) p.self->counters[blockIdx.x][threadIdx.x] = counter;
    __syncthreads();
    if (threadIdx.x == 0) leave_block(p, ticket);
}

}  // namespace ar4j
