// The few-rows linear layer's second kernel (sm_90 and newer): W reaches the SMs through a ring of
// bulk copies (cp.async.bulk, the TMA unit's one-dimensional form) into shared memory instead of
// through registers, so how many bytes are in flight no longer depends on registers or on where
// the compiler places the loads.
//
// Each warp owns a ring of kStages slots of kPiece 16-byte chunks and an mbarrier per slot. Its
// work is the same sequence of slices as the registers kernel's (linear.cu): for each of its
// block's groups, its slice [begin, end) of a row of W, cut into pieces of at most kPiece chunks.
// Lane 0 keeps the ring kStages pieces ahead: it fills every slot before the programmatic-
// dependent-launch wait (W never depends on the previous kernel), and refills a slot as soon as
// the warp has read it into registers. A lane takes the chunks lane, lane + 32, ... of each piece,
// which are the chunks and the order the registers kernel gives it, so both produce the same bits.
//
// Measured against the registers kernel (1x H100, 2026-12-06, --bench-linear quick, each launch a
// different W, one lease): qkv 23.9 against 19.1 us, o_proj 18.1 against 13.8, gate_up 79.8 against
// 77.3, down 43.7 against 41.8, the LM head 338.9 against 333.2; the decode step 6.29 against 5.85 ms.
// A block of 128 KiB of ring cannot sit beside the previous kernel's, so a product's start does not
// overlap the previous one's end; letting the next kernel in at the last copy put the ring ahead on
// gate_up (75.9) and down (40.1) but is not safe with ranks sharing a GPU (see linear.cu). It is not
// the default; it stays selectable for GPUs whose memory needs more bytes in flight than 3 blocks of
// registers keep (the H200's 4.8 TB/s), where it has not been measured.
#include <algorithm>

#include "linear_common.cuh"

namespace ar4j_llama {
namespace linear {

// The bulk-copy and mbarrier instructions (sm_90); in a named namespace, since the kernels of
// the older architectures' passes (compiled empty) do not use them.
namespace bulk {

__device__ __forceinline__ void barrier_init(uint64_t *bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(shared_address(bar)) : "memory");
#endif
}

// The barrier's phase `parity` has completed (all its bytes have landed). Bounded: past the deadline
// the kernel traps, so the launch fails (the next synchronisation names the error) instead of hanging.
__device__ __forceinline__ void barrier_wait(uint64_t *bar, uint32_t parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    constexpr uint64_t kDeadlineNs = 2000000000ull;  // a slot's copy lands in microseconds: 2 s means it was lost
    uint32_t done = 0;
    uint64_t start = 0;
    for (uint32_t spins = 0;; ++spins) {
        asm volatile(
            "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
            : "=r"(done)
            : "r"(shared_address(bar)), "r"(parity)
            : "memory");
        if (done) return;
        uint64_t now;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
        if (spins == 0) start = now;
        if (now - start > kDeadlineNs) __trap();
    }
#endif
}

// One bulk copy of bytes from global src into the slot dst, completing on bar. W is read once:
// evict-first in L2, so it does not push out the activations and the KV cache.
__device__ __forceinline__ void bulk_copy(void *dst, const void *src, uint32_t bytes, uint64_t *bar,
                                          uint64_t policy) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(shared_address(bar)), "r"(bytes)
                 : "memory");
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;" ::
            "r"(shared_address(dst)),
        "l"(src), "r"(bytes), "r"(shared_address(bar)), "l"(policy)
        : "memory");
#endif
}

__device__ __forceinline__ uint64_t evict_first_policy() {
    uint64_t policy = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
#endif
    return policy;
}

// Orders this thread's earlier shared-memory accesses (and the barrier inits) before its later
// bulk copies (the async proxy).
__device__ __forceinline__ void fence_async_proxy() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

}  // namespace bulk

namespace {

using namespace bulk;


// The ring's shape, the best of those measured (1x H100, --bench-linear quick, one lease): 4 slots
// of 4 KiB per warp (128 KiB per block, one block per SM). 2 slots of 4 KiB, 4 of 2 KiB, or 2
// blocks per SM streamed slower.
constexpr int kU = 8;
constexpr int kStages = 4;
constexpr int kBlocksPerSm = 1;
constexpr int32_t kPiece = 32 * kU;  // chunks per slot
constexpr size_t kRingBytes = size_t(kWarps) * kStages * kPiece * 16;

// A warp's position in its sequence of pieces: group, slice and the first chunk of the next piece.
// Every lane keeps it (the branches are warp-uniform); lane 0 issues the copies.
template <int EPI>
struct PieceCursor {
    int32_t group;
    int32_t groups;
    WarpSlice ws;
    int32_t c;

    __device__ __forceinline__ void start(const LinearArgs &a, int32_t first_group, int32_t all_groups, int warp) {
        group = first_group;
        groups = all_groups;
        if (group < groups) {
            ws = slice_of<EPI>(a, group, warp);
            c = ws.begin;
        }
        skip_empty(a, warp);
    }
    // Moves past slices without chunks (the tasks past the last of a partial group).
    __device__ __forceinline__ void skip_empty(const LinearArgs &a, int warp) {
        while (group < groups && c >= ws.end) {
            group += gridDim.x;
            if (group < groups) {
                ws = slice_of<EPI>(a, group, warp);
                c = ws.begin;
            }
        }
    }
    __device__ __forceinline__ bool done() const { return group >= groups; }
    // Issues the next piece into slot (lane 0) and moves on.
    __device__ __forceinline__ void issue(const LinearArgs &a, uint4 *slot, uint64_t *bar, uint64_t policy, int lane,
                                          int warp) {
        const int32_t count = min(kPiece, ws.end - c);
        if (lane == 0) bulk_copy(slot, ws.row + c, uint32_t(count) * 16u, bar, policy);
        c += count;
        skip_empty(a, warp);
    }
};

template <int ROWS, int EPI, bool XS>
__global__ void __launch_bounds__(kThreads) linear_ring_kernel(const LinearArgs a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(128) uint4 ring_shared[];
    __shared__ __align__(8) uint64_t full[kWarps][kStages];
    const int warp = threadIdx.x >> 5;
    const int lane = threadIdx.x & 31;
    const int tasks_per_group = kWarps / a.splits;
    const int32_t groups = (a.tasks + tasks_per_group - 1) / tasks_per_group;
    uint4 *ring = ring_shared + size_t(warp) * kStages * kPiece;
    uint4 *x_shared = ring_shared + kRingBytes / 16;

    if (lane == 0) {
        for (int s = 0; s < kStages; ++s) barrier_init(&full[warp][s]);
        fence_async_proxy();
    }
    __syncwarp();
    const uint64_t policy = evict_first_policy();
    // The weights do not depend on the previous kernel: the whole ring is filled before the wait.
    PieceCursor<EPI> producer;
    producer.start(a, blockIdx.x, groups, warp);
    for (int s = 0; s < kStages && !producer.done(); ++s) {
        producer.issue(a, ring + s * kPiece, &full[warp][s], policy, lane, warp);
    }
    pdl_wait();

    const uint4 *x_global = reinterpret_cast<const uint4 *>(a.x);
    const int64_t x_stride_chunks = a.x_stride / 8;
    if (XS) copy_x_to_shared<ROWS>(x_shared, x_global, x_stride_chunks, a.chunks);

    __shared__ float partial[kWarps][ROWS];
    float best_value = 0.0f;
    int32_t best_index = -1;
    uint32_t consumed = 0;  // pieces this warp has read: piece n sits in slot n % kStages, phase n / kStages

    for (int32_t group = blockIdx.x; group < groups; group += gridDim.x) {
        const WarpSlice ws = slice_of<EPI>(a, group, warp);
        float acc[ROWS];
#pragma unroll
        for (int r = 0; r < ROWS; ++r) acc[r] = 0.0f;
        for (int32_t base = ws.begin; base < ws.end; base += kPiece) {
            const uint32_t slot = consumed % kStages;
            barrier_wait(&full[warp][slot], (consumed / kStages) & 1u);
            const uint4 *piece = ring + slot * kPiece;
            uint4 buf[kU];
#pragma unroll
            for (int u = 0; u < kU; ++u) {
                buf[u] = base + lane + 32 * u < ws.end ? piece[lane + 32 * u] : make_uint4(0, 0, 0, 0);
            }
            __syncwarp();
            // The slot is read: it takes the piece kStages ahead.
            if (!producer.done()) {
                if (lane == 0) fence_async_proxy();
                producer.issue(a, ring + slot * kPiece, &full[warp][slot], policy, lane, warp);
            }
            ++consumed;
            use_batch<ROWS, kU, XS>(buf, x_shared, x_global, x_stride_chunks, a.chunks, base + lane, ws.end, acc);
        }
        finish_group<ROWS, EPI>(a, group, acc, partial, best_value, best_index);
    }
    pdl_trigger();  // as the registers kernel (linear.cu): once every block has read all its W
    if (EPI == kArgmax) finish_argmax<ROWS>(a, best_value, best_index);
#endif
}

template <int ROWS, int EPI, bool XS>
int launch_grid(const LinearArgs &a, size_t x_bytes, bool pdl, void *stream) {
    auto kernel = linear_ring_kernel<ROWS, EPI, XS>;
    const size_t shared = kRingBytes + x_bytes;
    // Above the default 48 KiB of dynamic shared memory: raised at the first launch of a size.
    const int error = allow_shared(kernel, shared);
    if (error != 0) return error;
    const int64_t groups = (int64_t(a.tasks) + kWarps / a.splits - 1) / (kWarps / a.splits);
    const int sms = sm_count();
    const int64_t blocks = std::min<int64_t>(groups, int64_t(sms > 0 ? sms : 1) * kBlocksPerSm);
    return launch(kernel, dim3(static_cast<unsigned int>(blocks)), dim3(kThreads), shared, stream, pdl, a);
}

template <int EPI>
int launch_epilogue(const LinearArgs &a, int32_t rows, bool pdl, void *stream) {
    return with_shape(a, rows, [&](auto r, auto xs, size_t x_bytes) {
        return launch_grid<decltype(r)::value, EPI, decltype(xs)::value>(a, x_bytes, pdl, stream);
    });
}

}  // namespace

int launch_ring(const LinearArgs &a, int32_t rows, int epilogue, bool pdl, void *stream) {
    switch (epilogue) {
        case kStore: return launch_epilogue<kStore>(a, rows, pdl, stream);
        case kSiluMul: return launch_epilogue<kSiluMul>(a, rows, pdl, stream);
        default: return launch_epilogue<kArgmax>(a, rows, pdl, stream);
    }
}

}  // namespace linear
}  // namespace ar4j_llama
