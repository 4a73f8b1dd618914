// Y = X · Wᵀ for a few rows of X: the decode and verify steps' linear layers, which stream the
// weight through the SMs once (ar4j_llama_linear_rows in kernels.h).
#include "common.cuh"

namespace ar4j_llama {
namespace {

constexpr int kLinearThreads = 256;              // 8 warps, one output feature each
constexpr int kWarpsPerBlock = kLinearThreads / 32;
// 16-byte loads of W in flight per lane: 8 for one or two rows of X, 4 above (registers).
template <int ROWS>
constexpr int unroll_for() { return ROWS <= 2 ? 8 : 4; }

// 16 bytes of W, not kept in L1 (each is read once); the read-only path.
__device__ __forceinline__ uint4 load_streaming(const uint4 *p) {
    uint4 v;
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p));
    return v;
}

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

// One warp per output feature; lane l reads the 16-byte chunks l, l + 32, ... of W's row and
// the same chunks of every row of X (L1/L2 hits: every warp of the grid reads the same X).
template <int ROWS>
__global__ void __launch_bounds__(kLinearThreads) linear_rows_kernel(const uint4 *__restrict__ w,
                                                                     const bf16 *__restrict__ x, int64_t x_stride,
                                                                     bf16 *__restrict__ y, int64_t y_stride,
                                                                     int32_t n, int32_t chunks) {
    pdl_enter();
    const int lane = threadIdx.x & 31;
    const int64_t feature = int64_t(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
    if (feature >= n) return;
    const uint4 *row = w + feature * chunks;
    const uint4 *xr[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) xr[r] = reinterpret_cast<const uint4 *>(x + r * x_stride);
    float acc[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) acc[r] = 0.0f;

    constexpr int kUnroll = unroll_for<ROWS>();
    int c = lane;
    for (; c + 32 * (kUnroll - 1) < chunks; c += 32 * kUnroll) {
        uint4 wv[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) wv[u] = load_streaming(row + c + 32 * u);
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
            for (int r = 0; r < ROWS; ++r) acc[r] = dot8(wv[u], __ldg(xr[r] + c + 32 * u), acc[r]);
        }
    }
    for (; c < chunks; c += 32) {
        const uint4 wv = load_streaming(row + c);
#pragma unroll
        for (int r = 0; r < ROWS; ++r) acc[r] = dot8(wv, __ldg(xr[r] + c), acc[r]);
    }
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
#pragma unroll
        for (int offset = 16; offset > 0; offset >>= 1) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], offset);
    }
    if (lane == 0) {
#pragma unroll
        for (int r = 0; r < ROWS; ++r) y[r * y_stride + feature] = __float2bfloat16_rn(acc[r]);
    }
}

template <int ROWS>
int launch_linear_rows(const void *w, const void *x, int64_t x_stride, void *y, int64_t y_stride, int32_t n,
                       int32_t k, bool pdl, void *stream) {
    const unsigned int blocks = static_cast<unsigned int>((int64_t(n) + kWarpsPerBlock - 1) / kWarpsPerBlock);
    return launch(linear_rows_kernel<ROWS>, dim3(blocks), dim3(kLinearThreads), 0, stream, pdl,
                  static_cast<const uint4 *>(w), static_cast<const bf16 *>(x), x_stride, static_cast<bf16 *>(y),
                  y_stride, n, k / 8);
}

}  // namespace
}  // namespace ar4j_llama

using namespace ar4j_llama;

AR4J_LLAMA_API int ar4j_llama_linear_rows(const void *w, const void *x, int64_t x_row_stride, void *y,
                                          int64_t y_row_stride, int32_t rows, int32_t n, int32_t k, int32_t pdl,
                                          void *stream) {
    if (w == nullptr || x == nullptr || y == nullptr) return AR4J_LLAMA_ERROR_NULL_POINTER;
    if (rows < 1 || rows > AR4J_LLAMA_MAX_LINEAR_ROWS || n < 1 || k < 1) return AR4J_LLAMA_ERROR_SIZE;
    if (x_row_stride < k || y_row_stride < n) return AR4J_LLAMA_ERROR_STRIDE;
    if (k % 8 != 0 || x_row_stride % 8 != 0 || !aligned(w, 16) || !aligned(x, 16) || !aligned(y, 2)) {
        return AR4J_LLAMA_ERROR_MISALIGNED;
    }
    const bool use_pdl = pdl != 0;
    switch (rows) {
        case 1: return launch_linear_rows<1>(w, x, x_row_stride, y, y_row_stride, n, k, use_pdl, stream);
        case 2: return launch_linear_rows<2>(w, x, x_row_stride, y, y_row_stride, n, k, use_pdl, stream);
        case 3: return launch_linear_rows<3>(w, x, x_row_stride, y, y_row_stride, n, k, use_pdl, stream);
        case 4: return launch_linear_rows<4>(w, x, x_row_stride, y, y_row_stride, n, k, use_pdl, stream);
        case 5: return launch_linear_rows<5>(w, x, x_row_stride, y, y_row_stride, n, k, use_pdl, stream);
        case 6: return launch_linear_rows<6>(w, x, x_row_stride, y, y_row_stride, n, k, use_pdl, stream);
        case 7: return launch_linear_rows<7>(w, x, x_row_stride, y, y_row_stride, n, k, use_pdl, stream);
        default: return launch_linear_rows<8>(w, x, x_row_stride, y, y_row_stride, n, k, use_pdl, stream);
    }
}
