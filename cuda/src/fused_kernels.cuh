// Fused one-shot push all-reduce + residual add + RMSNorm (ar4j_all_reduce_residual_rmsnorm).
//
//   sum          = allreduce(in), in rank order 0..WS-1 in fp32, rounded to the dtype
//   residual_out = round(sum + residual)                  (fp32 add, rounded to the dtype once)
//   out          = round(residual_out * inv_rms(row of residual_out) * weight)
//
// Bitwise the same as ar4j_all_reduce(PUSH) followed by ar4j_residual_rmsnorm: the sum
// is the push kernel's, and the epilogue has the residual_rmsnorm kernel's arithmetic and order
// (rmsnorm_math.cuh). Every rank computes the same bits: the same block index owns the same row on
// every rank and runs the same instruction sequence on the same values.
//
// Layout: the push kernel's fixed grid of kPushBlocks blocks (its per-block generation counters and
// launch tickets are shared with push_kernel, so the two may be interleaved on one context), with
// kNormThreads threads. Block b owns rows b, b + kPushBlocks, ...: it pushes those rows' packs into
// every peer's push buffer (generation/sentinel protocol of push_kernel), then, row by row, polls
// the peers' slots, reduces, adds the residual, stores residual_out, sums the squares in a fixed
// order, and writes out. A row is read and written only by its owner block, and each pack by one
// thread (thread t: packs t, t + kNormThreads, ... of the row), so in place (out == in,
// residual_out == residual or in) is safe: a thread reads a pack before it writes it.
// The refill of the previous generation's buffer covers [0, prev_packs) with the grid-stride
// pattern, as push_kernel's does: the buffer protocol does not depend on which block read a pack.
// A row of hidden elements on one block of 512 threads: with few rows most blocks only refill.
//
// Variants (ar4j_set_variants): kGridPush (AR4J_VARIANT_FUSED_GRID_PUSH) pushes the packs with the
// whole grid (pack i by thread i mod the grid's threads, as push_kernel does) instead of by the
// row's owner: with 3 rows, 32 blocks push instead of 3. The reads, the sum and the norm stay
// with the owner block, so the result is bitwise the same (the buffer protocol does not care which
// block stored a pack: a pack is polled until it arrives). kClear (AR4J_VARIANT_PUSH_CLEAR_ON_READ)
// and the early trigger as in push_kernel.
#pragma once

#include "kernels.cuh"
#include "rmsnorm_math.cuh"

namespace ar4j {

struct FusedParams {
    Params p;               // p.local_in: this rank's input, p.out: out, p.npacks: rows * row_packs
    const uint4 *residual;  // rows * row_packs packs
    const uint4 *weight;    // row_packs packs
    uint4 *residual_out;    // rows * row_packs packs
    int64_t rows;
    int64_t row_packs;      // hidden * dtype size / 16
    int64_t hidden;         // elements per row
    float eps;
};

template <typename T>
__device__ __forceinline__ void fill_fused_nan(const FusedParams &f) {
    const uint32_t w = NanWord<T>::kValue;
    const uint4 nan = make_uint4(w, w, w, w);
    for (int64_t i = threadIdx.x; i < f.p.npacks; i += blockDim.x) {
        f.p.out[i] = nan;
        f.residual_out[i] = nan;
    }
}

// out = residual_out * inv * weight over this thread's packs of the row starting at pack `base`
// (each thread reads back only the residual_out packs it wrote itself). The residual add and the
// normalisation of one pack (add_residual_pack, normalized_pack) are rmsnorm_math.cuh's.
template <typename T>
__device__ __forceinline__ void write_normalized_row(const FusedParams &f, int64_t base, float inv) {
    for (int64_t j = threadIdx.x; j < f.row_packs; j += blockDim.x) {
        const int64_t i = base + j;
        f.p.out[i] = normalized_pack<T>(f.residual_out[i], f.weight[j], inv);
    }
}

template <typename T, int WS, bool kGridPush = false, bool kClear = false>
// Two blocks per SM (at most 64 registers): 8 ranks sharing one H200 need 256 resident blocks.
__global__ void __launch_bounds__(kNormThreads, 2) push_rmsnorm_kernel(FusedParams f) {
    using Tr = PackTraits<T>;
    const Params &p = f.p;
    pdl_wait();
    pdl_trigger_early(p);
    __shared__ unsigned long long s_generation;
    __shared__ int s_abort;
    __shared__ float warp_sums[kNormWarps];
    PushState *state = &p.self->push[blockIdx.x];
    const uint32_t prev_packs = state->prev_packs;
    unsigned long long ticket = 0;
    if (threadIdx.x == 0) {
        const unsigned long long g = state->generation;  // in flight with enter_block's accesses
        s_abort = enter_block<WS>(p, ticket);
        s_generation = g;
    }
    __syncthreads();
    if (s_abort != 0) {
        push_give_up<WS>(p);
        fill_fused_nan<T>(f);
        return;
    }
    const unsigned long long generation = s_generation;

    // 1. Push this block's rows (kGridPush: the grid's share of all packs) into slot `rank` of
    //    every peer's current buffer.
    if (kGridPush) {
        const int64_t stride = (int64_t)gridDim.x * blockDim.x;
        for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < p.npacks; i += stride) {
            const uint4 v = clean_pack<T>(p.local_in[i]);
#pragma unroll
            for (int k = 1; k < WS; ++k) {
                const int peer = (p.rank + k) % WS;
                push_slot(peer_signal<WS>(p, peer), p.push_offset, generation, p.rank)[i] = v;
            }
        }
    } else {
        for (int64_t row = blockIdx.x; row < f.rows; row += gridDim.x) {
            const int64_t base = row * f.row_packs;
            for (int64_t j = threadIdx.x; j < f.row_packs; j += blockDim.x) {
                const uint4 v = clean_pack<T>(p.local_in[base + j]);
#pragma unroll
                for (int k = 1; k < WS; ++k) {
                    const int peer = (p.rank + k) % WS;
                    push_slot(peer_signal<WS>(p, peer), p.push_offset, generation, p.rank)[base + j] = v;
                }
            }
        }
    }

    // 2. Row by row: wait for every peer's slot, reduce in rank order, add the residual, norm.
    for (int64_t row = blockIdx.x; row < f.rows; row += gridDim.x) {
        const int64_t base = row * f.row_packs;
        bool ok = true;
        float squares = 0.f;
        for (int64_t j = threadIdx.x; j < f.row_packs && ok; j += blockDim.x) {
            const int64_t i = base + j;
            uint4 v[WS];
            ok = gather_pack<T, WS>(p, generation, p.local_in[i], i, v);
            if (!ok) break;
            if (kClear) clear_consumed<WS>(p, generation, i);
            float acc[Tr::kElems];
            Tr::unpack(v[0], acc);
#pragma unroll
            for (int s = 1; s < WS; ++s) {
                float x[Tr::kElems];
                Tr::unpack(v[s], x);
#pragma unroll
                for (int e = 0; e < Tr::kElems; ++e) acc[e] += x[e];
            }
            f.residual_out[i] = add_residual_pack<T>(Tr::pack(acc), f.residual[i], squares);
        }
        // Block-uniform: every thread reaches this barrier, also those whose wait gave up.
        if (__syncthreads_or(!ok)) {
            push_give_up<WS>(p);
            fill_fused_nan<T>(f);  // the context is failed from here on; its state is left as is
            return;
        }
        write_normalized_row<T>(f, base, norm_inverse(norm_block_sum(squares, warp_sums), f.hidden, f.eps));
    }
    pdl_launch_dependents();  // every poll is done: the rest needs no peer

    // 3. Refill the previous generation's buffer (not with kClear) and advance the block's state
    //    (push_kernel's end).
    finish_push_launch<WS, kClear>(p, state, generation, prev_packs, ticket);
}

}  // namespace ar4j
