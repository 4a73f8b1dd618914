// What the two kernels of the few-rows linear layer share (linear.cu: W through a register double
// buffer, every architecture; linear_ring.cu: W through a bulk-copy ring in shared memory, sm_90+):
// the arguments, the division of the work into groups of tasks and warp slices, the per-lane dot
// products, and the epilogues. Both kernels give a lane the same chunks in the same order and
// reduce a group alike, so they produce the same bits.
#pragma once

#include <type_traits>

#include "common.cuh"

namespace ar4j_llama {
namespace linear {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

enum Epilogue : int { kStore = 0, kSiluMul = 1, kArgmax = 2 };

// X is kept in shared memory when ROWS x k fits this (the default dynamic limit, less the static part).
constexpr size_t kMaxSharedX = 40 * 1024;

__device__ __forceinline__ float2 bf16x2_to_float2(uint32_t bits) {
    __nv_bfloat162 pair;
    memcpy(&pair, &bits, sizeof(bits));
    return __bfloat1622float2(pair);
}

// acc += dot(w[0..7], x[0..7]) in fp32, elements in order.
__device__ __forceinline__ float dot8(uint4 w, uint4 x, float acc) {
    const uint32_t ws[4] = {w.x, w.y, w.z, w.w};
    const uint32_t xs[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const float2 a = bf16x2_to_float2(ws[i]);
        const float2 b = bf16x2_to_float2(xs[i]);
        acc = fmaf(a.x, b.x, acc);
        acc = fmaf(a.y, b.y, acc);
    }
    return acc;
}


struct LinearArgs {
    const uint4 *w;
    const bf16 *x;
    int64_t x_stride;
    bf16 *y;  // may be null for kArgmax
    int64_t y_stride;
    int32_t tasks;   // output features (kStore, kArgmax) or gate/up pairs x 2 (kSiluMul)
    int32_t half;    // kSiluMul: the offset of the up rows in W (the intermediate size)
    int32_t chunks;  // k / 8
    int32_t splits;  // S: 1, 2, 4 or 8
    // kArgmax
    int32_t argmax_cols;  // features below this take part in the argmax
    int32_t index_offset;
    int32_t *out_index;
    float *out_value;
    float *candidate_value;    // rows x blocks
    int32_t *candidate_index;  // rows x blocks
    unsigned int *blocks_done;
};

// X's chunk c of row r: from the block's shared copy (XS), else through L2 (ld.global.cg, not the
// non-coherent path: with PDL this grid started while the previous one still wrote X).
template <bool XS>
__device__ __forceinline__ uint4 x_chunk(const uint4 *x_shared, const uint4 *x_global, int64_t x_stride_chunks,
                                         int32_t chunks, int r, int32_t c) {
    if (XS) return x_shared[r * chunks + c];
    return __ldcg(x_global + r * x_stride_chunks + c);
}

// X (ROWS rows of `chunks` 16-byte chunks) into the block's shared copy, read by every warp after the
// barrier. Through L2 (ld.global.cg): with PDL this grid started while the previous one still wrote X.
template <int ROWS>
__device__ __forceinline__ void copy_x_to_shared(uint4 *x_shared, const uint4 *x_global, int64_t x_stride_chunks,
                                                 int32_t chunks) {
    for (int32_t i = threadIdx.x; i < ROWS * chunks; i += kThreads) {
        const int r = i / chunks;
        x_shared[i] = __ldcg(x_global + r * x_stride_chunks + (i - r * chunks));
    }
    __syncthreads();
}

template <int ROWS, int U, bool XS>
__device__ __forceinline__ void use_batch(const uint4 (&buf)[U], const uint4 *x_shared, const uint4 *x_global,
                                          int64_t x_stride_chunks, int32_t chunks, int32_t c, int32_t end,
                                          float (&acc)[ROWS]) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const int32_t cu = c + 32 * u;
        if (cu < end) {
#pragma unroll
            for (int r = 0; r < ROWS; ++r) {
                acc[r] = dot8(buf[u], x_chunk<XS>(x_shared, x_global, x_stride_chunks, chunks, r, cu), acc[r]);
            }
        }
    }
}

// A warp's share of a group of tasks: its row of W and its slice [begin, end) of the row's chunks.
struct WarpSlice {
    const uint4 *row;
    int32_t begin;
    int32_t end;
};

template <int EPI>
__device__ __forceinline__ WarpSlice slice_of(const LinearArgs &a, int32_t group, int warp) {
    const int splits = a.splits;
    const int32_t task = group * (kWarps / splits) + warp / splits;
    const int slice = warp % splits;
    int64_t w_row = task;
    if (EPI == kSiluMul) w_row = (task & 1) ? int64_t(a.half) + (task >> 1) : (task >> 1);
    WarpSlice s;
    s.row = a.w + w_row * a.chunks;
    s.begin = int32_t(int64_t(a.chunks) * slice / splits);
    s.end = task < a.tasks ? int32_t(int64_t(a.chunks) * (slice + 1) / splits) : s.begin;
    return s;
}


// The end of a group: each warp's sums across its lanes, the S slice sums of a task added in slice
// order (partial: kWarps x ROWS floats of shared memory), then the epilogue. Called by every thread
// of the block once per group, with acc holding the warp's sums over its slice.
template <int ROWS, int EPI>
__device__ __forceinline__ void finish_group(const LinearArgs &a, int32_t group, float (&acc)[ROWS],
                                             float (*partial)[ROWS], float &best_value, int32_t &best_index) {
    const int warp = threadIdx.x >> 5;
    const int lane = threadIdx.x & 31;
    const int splits = a.splits;
    const int tasks_per_group = kWarps / splits;
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
#pragma unroll
        for (int offset = 16; offset > 0; offset >>= 1) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], offset);
    }
    if (lane == 0) {
#pragma unroll
        for (int r = 0; r < ROWS; ++r) partial[warp][r] = acc[r];
    }
    __syncthreads();

    const int32_t first_task = group * tasks_per_group;
    // sum(t, r): task t's (group-local) sum of row r, slices added in order.
    auto sum = [&](int t, int r) {
        float s = 0.0f;
        for (int i = 0; i < splits; ++i) s += partial[t * splits + i][r];
        return s;
    };
    if (EPI == kStore) {
        const int t = threadIdx.x / ROWS, r = threadIdx.x % ROWS;
        if (t < tasks_per_group && first_task + t < a.tasks) {
            a.y[r * a.y_stride + first_task + t] = __float2bfloat16_rn(sum(t, r));
        }
    } else if (EPI == kSiluMul) {
        // HF: act_fn(gate_proj(x)) * up_proj(x) in bf16, each op rounded.
        const int p = threadIdx.x / ROWS, r = threadIdx.x % ROWS;
        if (p < tasks_per_group / 2 && first_task + 2 * p < a.tasks) {
            const float gate = round_bf16(sum(2 * p, r));
            const float up = round_bf16(sum(2 * p + 1, r));
            const float act = round_bf16(gate / (1.0f + expf(-gate)));
            a.y[r * a.y_stride + (first_task >> 1) + p] = __float2bfloat16_rn(act * up);
        }
    } else if (threadIdx.x < ROWS) {
        // Logits rounded to bf16 (the LM head's output), stored when asked; the best per row.
        const int r = threadIdx.x;
        for (int t = 0; t < tasks_per_group; ++t) {
            const int32_t f = first_task + t;
            if (f >= a.tasks) break;
            const float v = round_bf16(sum(t, r));
            if (a.y != nullptr) a.y[r * a.y_stride + f] = __float2bfloat16_rn(v);
            if (f < a.argmax_cols && (best_index < 0 || argmax_wins(v, f, best_value, best_index))) {
                best_value = v;
                best_index = f;
            }
        }
    }
    __syncthreads();  // partial is written again by the next group
}

// The argmax epilogue's end: each block's best (value, index) per row goes to the workspace; the
// last block to finish reduces every block's candidates (any order: argmax_wins is a total order)
// and resets the counter for the next launch (graph replays).
template <int ROWS>
__device__ __forceinline__ void finish_argmax(const LinearArgs &a, float best_value, int32_t best_index) {
    const int warp = threadIdx.x >> 5;
    const int lane = threadIdx.x & 31;
    if (threadIdx.x < ROWS) {
        a.candidate_value[int64_t(threadIdx.x) * gridDim.x + blockIdx.x] = best_value;
        a.candidate_index[int64_t(threadIdx.x) * gridDim.x + blockIdx.x] = best_index;
    }
    __shared__ bool last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(a.blocks_done, 1u) == gridDim.x - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
    for (int r = 0; r < ROWS; ++r) {
        float bv = 0.0f;
        int32_t bi = -1;
        // 8 candidates' loads in flight per thread before the comparisons (one L2 round trip per 8).
        constexpr int kDepth = 8;
        const float *values = a.candidate_value + int64_t(r) * gridDim.x;
        const int32_t *indices = a.candidate_index + int64_t(r) * gridDim.x;
        for (int32_t b0 = threadIdx.x; b0 < int32_t(gridDim.x); b0 += kThreads * kDepth) {
            float v[kDepth];
            int32_t i[kDepth];
#pragma unroll
            for (int d = 0; d < kDepth; ++d) {
                const int32_t b = b0 + d * kThreads;
                v[d] = b < int32_t(gridDim.x) ? __ldcg(values + b) : 0.0f;
                i[d] = b < int32_t(gridDim.x) ? __ldcg(indices + b) : -1;
            }
#pragma unroll
            for (int d = 0; d < kDepth; ++d) {
                if (i[d] >= 0 && (bi < 0 || argmax_wins(v[d], i[d], bv, bi))) {
                    bv = v[d];
                    bi = i[d];
                }
            }
        }
#pragma unroll
        for (int offset = 16; offset > 0; offset >>= 1) {
            const float ov = __shfl_xor_sync(0xffffffffu, bv, offset);
            const int32_t oi = __shfl_xor_sync(0xffffffffu, bi, offset);
            if (oi >= 0 && (bi < 0 || argmax_wins(ov, oi, bv, bi))) {
                bv = ov;
                bi = oi;
            }
        }
        __shared__ float warp_value[kWarps];
        __shared__ int32_t warp_index[kWarps];
        if (lane == 0) {
            warp_value[warp] = bv;
            warp_index[warp] = bi;
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            for (int i = 0; i < kWarps; ++i) {
                if (warp_index[i] >= 0 && (bi < 0 || argmax_wins(warp_value[i], warp_index[i], bv, bi))) {
                    bv = warp_value[i];
                    bi = warp_index[i];
                }
            }
            a.out_index[r] = a.index_offset + bi;
            if (a.out_value != nullptr) a.out_value[r] = bv;
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) *a.blocks_done = 0u;  // ready for the next launch (graph replays)
}

// f(std::integral_constant<int, ROWS>{}, std::bool_constant<XS>{}, x_bytes) for ROWS = rows (1 ..
// AR4J_LLAMA_MAX_LINEAR_ROWS; the kernels are built per row count) and XS: whether X (ROWS x k, x_bytes)
// fits the block's shared copy (kMaxSharedX; x_bytes 0 when not). Both kernels' launchers pick their
// instantiation through this one switch.
template <typename F>
int with_shape(const LinearArgs &a, int32_t rows, F &&f) {
    auto for_rows = [&](auto r) {
        const size_t x_bytes = size_t(decltype(r)::value) * size_t(a.chunks) * 16;
        if (x_bytes <= kMaxSharedX) return f(r, std::true_type{}, x_bytes);
        return f(r, std::false_type{}, size_t(0));
    };
    switch (rows) {
        case 1: return for_rows(std::integral_constant<int, 1>{});
        case 2: return for_rows(std::integral_constant<int, 2>{});
        case 3: return for_rows(std::integral_constant<int, 3>{});
        case 4: return for_rows(std::integral_constant<int, 4>{});
        case 5: return for_rows(std::integral_constant<int, 5>{});
        case 6: return for_rows(std::integral_constant<int, 6>{});
        case 7: return for_rows(std::integral_constant<int, 7>{});
        default: return for_rows(std::integral_constant<int, 8>{});
    }
}

// The launcher of the bulk-copy ring kernel (linear_ring.cu): AR4J_LLAMA_OK or a cudaError_t.
int launch_ring(const LinearArgs &a, int32_t rows, int epilogue, bool pdl, void *stream);

// The multiprocessors of the current device (0 when unknown).
int sm_count();

}  // namespace linear
}  // namespace ar4j_llama
