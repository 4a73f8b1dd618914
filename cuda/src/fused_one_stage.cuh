// Fused 1-stage all-reduce + residual add + RMSNorm (ar4j_all_reduce_residual_rmsnorm, ONE_STAGE).
//
//   sum          = allreduce(in), in rank order 0..WS-1 in fp32, rounded to the dtype
//   residual_out = round(sum + residual)                  (fp32 add, rounded to the dtype once)
//   out          = round(residual_out * inv_rms(row of residual_out) * weight)
//
// Bitwise the same as ar4j_all_reduce(ONE_STAGE) followed by ar4j_residual_rmsnorm: each pack's sum
// is reduce_pack's (one_stage_kernel), and the epilogue has the residual_rmsnorm kernel's arithmetic
// and order (rmsnorm_math.cuh), as in push_rmsnorm_kernel. Every rank computes the same bits: the
// same block index owns the same row on every rank and runs the same instructions on the same values.
//
// Protocol: one_stage_kernel's. Every rank reads every rank's registered input directly
// (p.inputs->ptrs[r] + p.in_offset) between a start barrier and a final barrier per block index;
// the per-block flags, counters and launch tickets are one_stage_kernel's (the grids differ, but
// every rank makes the same launch sequence, so block b meets block b). The only wait is the start
// barrier: a block that gives up there (or finds the group poisoned, or overlapping another launch)
// writes NaN over the whole of out and residual_out; so does a block whose final barrier gives up
// or that finds the group poisoned after it (one_stage_kernel's rule: a peer may have overwritten
// its input after giving up).
//
// Aliasing: peers read this rank's input until they pass the final barrier, so neither out nor
// residual_out may overlap [in, in + bytes) (the host refuses it). residual_out may equal residual:
// each pack of residual is read, then residual_out written, by the one thread that owns the pack.
//
// Layout: grid min(rows, max_blocks) of kNormThreads threads. Block b owns rows b, b + grid, ...;
// thread t takes packs t, t + kNormThreads, ... of the row (the order of rmsnorm_math.cuh).
// Every value read from a peer is stored into residual_out before the final barrier's
// __syncthreads(), so no peer load is in flight when this rank announces it is done reading.
#pragma once

#include "fused_kernels.cuh"
#include "kernels.cuh"
#include "rmsnorm_math.cuh"

namespace ar4j {

template <typename T, int WS>
// Two blocks per SM (at most 64 registers), like one_stage_kernel at 512 threads: ranks sharing a
// GPU need all their blocks resident at once.
__global__ void __launch_bounds__(kNormThreads, 2) one_stage_rmsnorm_kernel(FusedParams f) {
    const Params &p = f.p;
    pdl_wait();
    __shared__ int abort_flag;
    // Two sets, alternating by row: a thread may still read one row's partials while a faster
    // thread already stores the next row's (norm_block_sum's rule); the row after next is behind
    // the next row's __syncthreads().
    __shared__ float warp_sums[2][kNormWarps];
    uint32_t counter;
    const uint4 *src[WS];
    unsigned long long ticket;
    enter_staged<WS>(p, counter, src, ticket, abort_flag);

    // One exit for a block that gives up (at either barrier): it passes the poison on and writes NaN.
    bool ok = block_barrier<WS, false>(p, counter, 0, &abort_flag);
    if (ok) {
        int parity = 0;
        for (int64_t row = blockIdx.x; row < f.rows; row += gridDim.x) {
            const int64_t base = row * f.row_packs;
            float squares = 0.f;
            for (int64_t j = threadIdx.x; j < f.row_packs; j += blockDim.x) {
                const int64_t i = base + j;
                f.residual_out[i] = add_residual_pack<T>(reduce_pack<T, WS>(src, i), f.residual[i], squares);
            }
            const float inv = norm_inverse(norm_block_sum(squares, warp_sums[parity]), f.hidden, f.eps);
            parity ^= 1;
            write_normalized_row<T>(f, base, inv);
        }
        ok = final_barrier<WS>(p, counter, 1, &abort_flag);
    }
    if (!ok) {
        if (threadIdx.x == 0) pass_on_poison<WS>(p);
        fill_fused_nan<T>(f);
        return;
    }
    pdl_launch_dependents();  // no wait follows
    if (threadIdx.x == 0) leave_block(p, ticket);
}

}  // namespace ar4j
