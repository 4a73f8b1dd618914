// What the kernels' translation units share: the export macro, bf16 rounding, PDL, the launch
// helper, argument checks and the device-side error word.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <cmath>
#include <utility>

#include "ar4j_llama/kernels.h"

// The library is built with -fvisibility=hidden: only AR4J_LLAMA_API functions are exported.
#define AR4J_LLAMA_API extern "C" __attribute__((visibility("default")))

namespace ar4j_llama {

using bf16 = __nv_bfloat16;

// x rounded to bf16 (nearest even) and back: the value a bf16 tensor op of PyTorch stores.
__device__ __forceinline__ float round_bf16(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }

// Programmatic dependent launch: wait for the preceding grid's memory before the first global
// access; then let the next grid start its own prologue (it waits for this grid in turn).
// Both are no-ops below sm_90 and in a launch without the attribute.
__device__ __forceinline__ void pdl_enter() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// The two halves of pdl_enter, for a kernel that does work before the wait which does not
// depend on the preceding grid (see the kernel's own comment for why that work is safe).
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// The 32-bit shared-memory address of a generic pointer into shared memory (for PTX operands).
__device__ __forceinline__ uint32_t shared_address(const void *p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// ---- cp.async (sm_80+): 16 bytes global -> shared, through L2 only ----
__device__ __forceinline__ void cp_async16(void *shared, const void *global) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(shared_address(shared)), "l"(global) : "memory");
}
// The same, or 16 zero bytes without a read when !in (global is then not read: any valid address).
__device__ __forceinline__ void cp_async16_or_zero(void *shared, const void *global, bool in) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(shared_address(shared)), "l"(global),
                 "r"(in ? 16 : 0)
                 : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
// Waits until at most `pending` of this thread's newest groups are in flight.
template <int pending>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(pending) : "memory"); }

// A running softmax pair (m, l): the max of the scores seen and the sum of exp(s - m) over them;
// (any, 0) is the empty pair. The decode attention and the prefill softmax fold scores and merge
// pairs with these, so both round alike.
__device__ __forceinline__ void softmax_add(float &m, float &l, float s) {
    if (s > m) {
        l = __fadd_rn(__fmul_rn(l, expf(m - s)), 1.0f);  // from the empty pair (-inf, 0): exp(-inf) = 0, so 1
        m = s;
    } else if (s != -INFINITY) {  // a -inf score weighs 0 (expf(-inf - -inf) would be NaN)
        l = __fadd_rn(l, expf(s - m));
    }
}

// (m, l) <- the pair of both ranges. Symmetric in its two arguments (max and + commute), so a
// butterfly leaves the same bits in every lane.
__device__ __forceinline__ void softmax_merge(float &m, float &l, float m2, float l2) {
    if (l2 == 0.0f) return;
    if (l == 0.0f) {
        m = m2;
        l = l2;
        return;
    }
    const float mx = fmaxf(m, m2);
    l = __fadd_rn(__fmul_rn(l, expf(m - mx)), __fmul_rn(l2, expf(m2 - mx)));
    m = mx;
}

// Whether (a, ia) comes before (b, ib) in torch.argmax's order: a NaN is the maximum, then the
// larger value, then the lower index (among equal values, and among NaNs). A total order, so any
// reduction order picks the same winner: the argmax kernels, the LM head's fused argmax and the
// pick between vocabulary shards all use it.
__device__ __forceinline__ bool argmax_wins(float a, int32_t ia, float b, int32_t ib) {
    const bool a_nan = isnan(a);
    const bool b_nan = isnan(b);
    if (a_nan || b_nan) return a_nan && b_nan ? ia < ib : a_nan;
    if (a != b) return a > b;
    return ia < ib;
}

// Records code in the caller's device status word unless an earlier error is there.
__device__ __forceinline__ void report(int32_t *device_status, int32_t code) {
    if (device_status != nullptr) atomicCAS(device_status, 0, code);
}

// Launches kernel on stream, with programmatic stream serialization when pdl is set.
template <typename... KernelArgs, typename... Args>
inline int launch(void (*kernel)(KernelArgs...), dim3 grid, dim3 block, size_t shared_bytes,
                  void *stream, bool pdl, Args &&...args) {
    cudaLaunchConfig_t config = {};
    config.gridDim = grid;
    config.blockDim = block;
    config.dynamicSmemBytes = shared_bytes;
    config.stream = static_cast<cudaStream_t>(stream);
    cudaLaunchAttribute attribute[1];
    if (pdl) {
        attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attribute[0].val.programmaticStreamSerializationAllowed = 1;
        config.attrs = attribute;
        config.numAttrs = 1;
    }
    cudaError_t error = cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
    return static_cast<int>(error);
}

// Raises the kernel's dynamic shared memory limit to bytes when it is lower (never lowers it: a
// graph captured earlier may hold a launch of more). The default limit is 48 KiB less the kernel's
// static shared memory, which a comparison with 48 KiB alone would miss. Only the first launch of a
// size sets it: setting a function attribute is not a free call -- the runtime may wait in it for
// work in flight on the device, and with ranks sharing one GPU that work can be a peer's all-reduce
// kernel waiting for this rank's next launch.
template <typename Kernel>
int allow_shared(Kernel kernel, size_t bytes) {
    cudaFuncAttributes attributes;
    cudaError_t error = cudaFuncGetAttributes(&attributes, kernel);
    if (error != cudaSuccess) return static_cast<int>(error);
    if (bytes <= size_t(attributes.maxDynamicSharedSizeBytes)) return 0;
    return static_cast<int>(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
}

// Blocks for a grid-stride loop over count elements, threads per block.
inline unsigned int stride_blocks(int64_t count, int threads) {
    int64_t blocks = (count + threads - 1) / threads;
    const int64_t cap = int64_t(1) << 20;
    return static_cast<unsigned int>(blocks < cap ? blocks : cap);
}

inline bool aligned(const void *p, size_t bytes) {
    return (reinterpret_cast<uintptr_t>(p) % bytes) == 0;
}

inline bool valid_head_dim(int32_t head_dim) {
    return head_dim >= 2 && head_dim <= AR4J_LLAMA_MAX_HEAD_DIM && head_dim % 2 == 0;
}

// Host check of the positions of n tokens when they are start_pos + t (positions NULL).
inline bool valid_start(const int32_t *positions, int32_t start_pos, int32_t n, int32_t max_positions) {
    if (positions != nullptr) return true;
    return start_pos >= 0 && int64_t(start_pos) + n <= int64_t(max_positions);
}

}  // namespace ar4j_llama
