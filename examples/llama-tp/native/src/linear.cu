// Y = X · Wᵀ for a few rows of X: the decode and verify steps' linear layers, which stream the
// weight through the SMs once (ar4j_llama_linear_rows and its fused forms in kernels.h).
//
// The layout of the work (linear_common.cuh): the output features (or for the SwiGLU form gate/up
// row pairs) are "tasks", cut into groups of 8 / S; each task's row of W is cut into S slices of
// equal length, one warp each (split-K for the shapes with few outputs). The grid is persistent:
// block b serves groups b, b + grid, ... X is copied once per block into shared memory after the
// programmatic-dependent-launch wait (when ROWS x K fits 40 KiB; otherwise every warp reads it
// through L2). The S partial sums of a task meet in shared memory and are added in slice order
// (deterministic). Two kernels stream W, with the same sums in the same order (the same bits):
//  - this file's, on every architecture: as many blocks of 8 warps as fit at once; a warp streams
//    its slices in batches of 32 lanes x U 16-byte chunks with an explicit register double buffer:
//    the loads of batch b + 1 are issued before the products of batch b, and the first batch of the
//    next group before the sums of this one, so U loads per lane stay in flight from a warp's first
//    row to its last. The first batch is issued BEFORE the wait: W does not depend on the previous
//    kernel, only X does, so the weight stream starts while the previous kernel drains; the next
//    kernel is let in only when a block has streamed all its rows.
//  - linear_ring.cu's on sm_90 and newer: W through a ring of bulk copies in shared memory.
// ar4j_llama_set_linear_rows_kernel chooses between them (automatic: the registers kernel).
#include <algorithm>
#include <atomic>

#include "linear_common.cuh"

namespace ar4j_llama {
namespace linear {
namespace {

// 16 bytes of W, not kept in L1 (each is read once); the read-only path, L2 fetches 256 B.
__device__ __forceinline__ uint4 load_streaming(const uint4 *p) {
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}

// Loads batch [base, base + 32 U) of a warp's slice (lane-strided), chunks at or past end as zero.
template <int U>
__device__ __forceinline__ void load_batch(uint4 (&buf)[U], const uint4 *row, int32_t c, int32_t end) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const int32_t cu = c + 32 * u;
        buf[u] = cu < end ? load_streaming(row + cu) : make_uint4(0, 0, 0, 0);
    }
}


// A persistent grid: block b serves the groups b, b + gridDim.x, ... of kWarps / S tasks each
// (every warp one slice of one task per group). The register double buffer runs on across the
// groups: the next group's first batch is issued before this group's sums are reduced, so a warp
// keeps its loads in flight from its first row to its last. XS: X is copied once per block into
// shared memory (ROWS x chunks x 16 bytes), read from there by every warp.
template <int ROWS, int U, int EPI, bool XS>
__global__ void __launch_bounds__(kThreads) linear_rows_kernel(const LinearArgs a) {
    extern __shared__ __align__(16) uint4 x_shared[];
    const int warp = threadIdx.x >> 5;
    const int lane = threadIdx.x & 31;
    const int splits = a.splits;
    const int tasks_per_group = kWarps / splits;
    const int32_t groups = (a.tasks + tasks_per_group - 1) / tasks_per_group;
    constexpr int32_t kBatch = 32 * U;

    // The weights do not depend on the previous kernel: the first batch goes out before the wait.
    uint4 buf0[U], buf1[U];
    int32_t group = blockIdx.x;
    WarpSlice ws = slice_of<EPI>(a, group, warp);
    load_batch<U>(buf0, ws.row, ws.begin + lane, ws.end);
    pdl_wait();

    const uint4 *x_global = reinterpret_cast<const uint4 *>(a.x);
    const int64_t x_stride_chunks = a.x_stride / 8;
    if (XS) copy_x_to_shared<ROWS>(x_shared, x_global, x_stride_chunks, a.chunks);

    __shared__ float partial[kWarps][ROWS];
    // kArgmax: the block's best (value, index) per row over all its groups (threads < ROWS).
    float best_value = 0.0f;
    int32_t best_index = -1;

    for (; group < groups; group += gridDim.x) {
        float acc[ROWS];
#pragma unroll
        for (int r = 0; r < ROWS; ++r) acc[r] = 0.0f;
        // Two batches per trip, alternating buffers, each load issued one batch ahead of its use
        // (base is warp-uniform, so are the branches).
        for (int32_t base = ws.begin; base < ws.end; base += 2 * kBatch) {
            const int32_t c0 = base + lane;
            if (base + kBatch < ws.end) load_batch<U>(buf1, ws.row, c0 + kBatch, ws.end);
            use_batch<ROWS, U, XS>(buf0, x_shared, x_global, x_stride_chunks, a.chunks, c0, ws.end, acc);
            if (base + kBatch >= ws.end) break;
            if (base + 2 * kBatch < ws.end) load_batch<U>(buf0, ws.row, c0 + 2 * kBatch, ws.end);
            use_batch<ROWS, U, XS>(buf1, x_shared, x_global, x_stride_chunks, a.chunks, c0 + kBatch, ws.end, acc);
        }
        // Both buffers are spent: the next group's first batch goes out before the reductions.
        const int32_t next = group + gridDim.x;
        if (next < groups) {
            ws = slice_of<EPI>(a, next, warp);
            load_batch<U>(buf0, ws.row, ws.begin + lane, ws.end);
        }

        finish_group<ROWS, EPI>(a, group, acc, partial, best_value, best_index);
    }
    // The next kernel may launch once every block is here, not earlier: a persistent grid's blocks
    // all start at once, and a dependent launched early holds SM slots (waiting) -- with ranks sharing
    // one GPU, slots that another rank's kernels need. Letting it in at a block's last group was measured
    // (1x H100: qkv 19.2 -> 18.8 us, the decode step 5.93 -> 5.91 ms) and not kept: in the run with it
    // (and with the one-kernel prefill attention as the default, since changed too) ranks sharing the
    // GPU at TP 4 and 8 failed 3 of 44 LlamaReferenceIT runs (custom all-reduce timeouts).
    pdl_trigger();

    if (EPI == kArgmax) finish_argmax<ROWS>(a, best_value, best_index);
}

// The 16-byte loads in flight per lane. 4 for every row count: with 8 for one or two rows the kernel
// needed ~100 registers, so 2 blocks per SM; with 4 it needs ~70 and 3 fit, and the finer grain
// streams faster (H100, --bench-linear quick in one lease: qkv 20.3 -> 19.1 us, o_proj 14.5 -> 13.8,
// gate_up 78.5 -> 77.7, down 42.6 -> 41.7; the decode step at 512 5.97 -> 5.84 ms). A lane's chunks
// are summed in the same order whatever U is, so the results do not change.
template <int ROWS>
constexpr int unroll_for() { return 4; }

template <int ROWS, int EPI, bool XS>
int launch_grid(const LinearArgs &a, size_t shared, bool pdl, void *stream) {
    auto kernel = linear_rows_kernel<ROWS, unroll_for<ROWS>(), EPI, XS>;
    const int64_t groups = (int64_t(a.tasks) + kWarps / a.splits - 1) / (kWarps / a.splits);
    int device = 0, sms = 0, per_sm = 0;
    int64_t blocks = groups;
    if (cudaGetDevice(&device) == cudaSuccess &&
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) == cudaSuccess &&
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, shared) == cudaSuccess &&
        sms > 0 && per_sm > 0) {
        blocks = std::min<int64_t>(groups, int64_t(sms) * per_sm);
    }
    return launch(kernel, dim3(static_cast<unsigned int>(blocks)), dim3(kThreads), shared, stream, pdl, a);
}

template <int EPI>
int launch_epilogue(const LinearArgs &a, int32_t rows, bool pdl, void *stream) {
    return with_shape(a, rows, [&](auto r, auto xs, size_t x_bytes) {
        return launch_grid<decltype(r)::value, EPI, decltype(xs)::value>(a, x_bytes, pdl, stream);
    });
}

// The slices per row: enough warps for about 48 per multiprocessor, each slice at least 64
// chunks (1 KiB) long. The argmax form keeps 1 (its blocks' candidates are per task).
int32_t auto_splits(int64_t tasks, int32_t chunks) {
    const int sms = sm_count();
    const int64_t want = int64_t(sms > 0 ? sms : 132) * 48;
    int32_t s = 1;
    while (s < kWarps && tasks * s < want && chunks / (2 * s) >= 64) s *= 2;
    return s;
}

int check_common(const void *w, const void *x, int64_t x_row_stride, const void *y, int64_t y_row_stride,
                 int32_t rows, int32_t n, int32_t k, int32_t k_splits) {
    if (w == nullptr || x == nullptr) return AR4J_LLAMA_ERROR_NULL_POINTER;
    if (rows < 1 || rows > AR4J_LLAMA_MAX_LINEAR_ROWS || n < 1 || k < 1) return AR4J_LLAMA_ERROR_SIZE;
    if (k_splits != 0 && k_splits != 1 && k_splits != 2 && k_splits != 4 && k_splits != 8) {
        return AR4J_LLAMA_ERROR_SPLITS;
    }
    if (x_row_stride < k || (y != nullptr && y_row_stride < n)) return AR4J_LLAMA_ERROR_STRIDE;
    if (k % 8 != 0 || x_row_stride % 8 != 0 || !aligned(w, 16) || !aligned(x, 16) || !aligned(y, 2)) {
        return AR4J_LLAMA_ERROR_MISALIGNED;
    }
    return AR4J_LLAMA_OK;
}

// The kernel ar4j_llama_set_linear_rows_kernel asked for (AR4J_LLAMA_LINEAR_ROWS_*).
std::atomic<int32_t> chosen_kernel{AR4J_LLAMA_LINEAR_ROWS_AUTO};

// Whether the current device runs the bulk-copy ring (sm_90 and newer).
bool ring_runs_here() {
    int device = 0, major = 0;
    return cudaGetDevice(&device) == cudaSuccess &&
           cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess && major >= 9;
}

// The launch of the chosen kernel: the registers kernel unless the ring was asked for (automatic is
// the registers kernel: the faster one where measured, see ar4j_llama_set_linear_rows_kernel).
template <int EPI>
int dispatch(const LinearArgs &a, int32_t rows, bool pdl, void *stream) {
    if (chosen_kernel.load(std::memory_order_relaxed) != AR4J_LLAMA_LINEAR_ROWS_RING) {
        return launch_epilogue<EPI>(a, rows, pdl, stream);
    }
    if (!ring_runs_here()) return AR4J_LLAMA_ERROR_UNSUPPORTED;
    return launch_ring(a, rows, EPI, pdl, stream);
}

}  // namespace

int sm_count() {
    int device = 0, count = 0;
    if (cudaGetDevice(&device) != cudaSuccess) return 0;
    if (cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) return 0;
    return count;
}

}  // namespace linear
}  // namespace ar4j_llama

using namespace ar4j_llama;
using namespace ar4j_llama::linear;

AR4J_LLAMA_API int ar4j_llama_set_linear_rows_kernel(int32_t kernel) {
    if (kernel != AR4J_LLAMA_LINEAR_ROWS_AUTO && kernel != AR4J_LLAMA_LINEAR_ROWS_REGISTERS &&
        kernel != AR4J_LLAMA_LINEAR_ROWS_RING) {
        return AR4J_LLAMA_ERROR_INVALID_ARGUMENT;
    }
    if (kernel == AR4J_LLAMA_LINEAR_ROWS_RING && !ring_runs_here()) return AR4J_LLAMA_ERROR_UNSUPPORTED;
    chosen_kernel.store(kernel, std::memory_order_relaxed);
    return AR4J_LLAMA_OK;
}

AR4J_LLAMA_API int ar4j_llama_linear_rows(const void *w, const void *x, int64_t x_row_stride, void *y,
                                          int64_t y_row_stride, int32_t rows, int32_t n, int32_t k, int32_t pdl,
                                          void *stream) {
    return ar4j_llama_linear_rows_split(w, x, x_row_stride, y, y_row_stride, rows, n, k, 0, pdl, stream);
}

AR4J_LLAMA_API int ar4j_llama_linear_rows_split(const void *w, const void *x, int64_t x_row_stride, void *y,
                                                int64_t y_row_stride, int32_t rows, int32_t n, int32_t k,
                                                int32_t k_splits, int32_t pdl, void *stream) {
    if (y == nullptr) return AR4J_LLAMA_ERROR_NULL_POINTER;
    const int status = check_common(w, x, x_row_stride, y, y_row_stride, rows, n, k, k_splits);
    if (status != AR4J_LLAMA_OK) return status;
    LinearArgs a = {};
    a.w = static_cast<const uint4 *>(w);
    a.x = static_cast<const bf16 *>(x);
    a.x_stride = x_row_stride;
    a.y = static_cast<bf16 *>(y);
    a.y_stride = y_row_stride;
    a.tasks = n;
    a.chunks = k / 8;
    a.splits = k_splits != 0 ? k_splits : auto_splits(n, a.chunks);
    return dispatch<kStore>(a, rows, pdl != 0, stream);
}

AR4J_LLAMA_API int ar4j_llama_linear_rows_silu_mul(const void *w_gate_up, const void *x, int64_t x_row_stride,
                                                   void *out, int64_t out_row_stride, int32_t rows,
                                                   int32_t intermediate, int32_t k, int32_t k_splits, int32_t pdl,
                                                   void *stream) {
    if (out == nullptr) return AR4J_LLAMA_ERROR_NULL_POINTER;
    if (intermediate > INT32_MAX / 2) return AR4J_LLAMA_ERROR_SIZE;
    if (k_splits == 8) return AR4J_LLAMA_ERROR_SPLITS;  // a block must hold a whole gate/up pair
    const int status = check_common(w_gate_up, x, x_row_stride, out, out_row_stride, rows, intermediate, k, k_splits);
    if (status != AR4J_LLAMA_OK) return status;
    LinearArgs a = {};
    a.w = static_cast<const uint4 *>(w_gate_up);
    a.x = static_cast<const bf16 *>(x);
    a.x_stride = x_row_stride;
    a.y = static_cast<bf16 *>(out);
    a.y_stride = out_row_stride;
    a.tasks = 2 * intermediate;
    a.half = intermediate;
    a.chunks = k / 8;
    int32_t s = k_splits != 0 ? k_splits : auto_splits(a.tasks, a.chunks);
    a.splits = s > kWarps / 2 ? kWarps / 2 : s;
    return dispatch<kSiluMul>(a, rows, pdl != 0, stream);
}

AR4J_LLAMA_API size_t ar4j_llama_linear_rows_argmax_workspace_bytes(int32_t rows, int32_t n) {
    if (rows < 1 || rows > AR4J_LLAMA_MAX_LINEAR_ROWS || n < 1) return 0;
    const size_t blocks = (size_t(n) + kWarps - 1) / kWarps;
    return 16 + size_t(rows) * blocks * 8;
}

AR4J_LLAMA_API int ar4j_llama_linear_rows_argmax(const void *w, const void *x, int64_t x_row_stride, void *logits,
                                                 int64_t logits_row_stride, int32_t rows, int32_t n, int32_t k,
                                                 int32_t argmax_cols, int32_t index_offset, int32_t *out_index,
                                                 float *out_value, void *workspace, size_t workspace_bytes,
                                                 int32_t pdl, void *stream) {
    if (out_index == nullptr || workspace == nullptr) return AR4J_LLAMA_ERROR_NULL_POINTER;
    const int status = check_common(w, x, x_row_stride, logits, logits_row_stride, rows, n, k, 0);
    if (status != AR4J_LLAMA_OK) return status;
    if (argmax_cols < 1 || argmax_cols > n || index_offset < 0 || int64_t(index_offset) + n > INT32_MAX) {
        return AR4J_LLAMA_ERROR_SIZE;
    }
    if (!aligned(workspace, 16)) return AR4J_LLAMA_ERROR_MISALIGNED;
    if (workspace_bytes < ar4j_llama_linear_rows_argmax_workspace_bytes(rows, n)) return AR4J_LLAMA_ERROR_WORKSPACE;
    const int64_t blocks = (int64_t(n) + kWarps - 1) / kWarps;
    LinearArgs a = {};
    a.w = static_cast<const uint4 *>(w);
    a.x = static_cast<const bf16 *>(x);
    a.x_stride = x_row_stride;
    a.y = static_cast<bf16 *>(logits);
    a.y_stride = logits_row_stride;
    a.tasks = n;
    a.chunks = k / 8;
    a.splits = 1;
    a.argmax_cols = argmax_cols;
    a.index_offset = index_offset;
    a.out_index = out_index;
    a.out_value = out_value;
    char *base = static_cast<char *>(workspace);
    a.blocks_done = reinterpret_cast<unsigned int *>(base);
    a.candidate_value = reinterpret_cast<float *>(base + 16);
    a.candidate_index = reinterpret_cast<int32_t *>(base + 16 + size_t(rows) * blocks * 4);
    return dispatch<kArgmax>(a, rows, pdl != 0, stream);
}
