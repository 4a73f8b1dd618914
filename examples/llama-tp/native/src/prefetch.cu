// An L2 prefetch of a weight the step reads next: the decode step's kernels between two products
// (RoPE, attention, the norms) read little from memory, so the next product's weight can be
// brought into L2 while they run and then streamed from there (ar4j_llama_prefetch_l2 in kernels.h).
//
// Each thread asks for pieces of kPiece bytes: on sm_90 and newer with one bulk prefetch
// (cp.async.bulk.prefetch.L2, carried out by the copy engine of the SM after the thread moves
// on), below it with a prefetch.global.L2 per 128-byte line. Nothing waits for the data: the
// instruction is a hint, and whether the bytes are still in L2 when read decides only the speed.
#include <algorithm>

#include "common.cuh"

namespace ar4j_llama {
namespace {

constexpr int kThreads = 32;
constexpr size_t kPiece = 16384;

__device__ __forceinline__ void prefetch_piece(const char *p, uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
#else
    for (uint32_t off = 0; off < bytes; off += 128) asm volatile("prefetch.global.L2 [%0];" ::"l"(p + off));
#endif
}

// The next kernel may start at once (this one only reads W, which no kernel writes); the wait
// before the exit keeps the stream's order: a kernel that waits on this one waits on all before it.
__global__ void __launch_bounds__(kThreads) prefetch_l2_kernel(const char *p, size_t bytes) {
    pdl_trigger();
    const size_t pieces = (bytes + kPiece - 1) / kPiece;
    for (size_t i = size_t(blockIdx.x) * kThreads + threadIdx.x; i < pieces; i += size_t(gridDim.x) * kThreads) {
        const size_t begin = i * kPiece;
        const size_t left = bytes - begin;
        prefetch_piece(p + begin, uint32_t(left < kPiece ? left : kPiece));
    }
    pdl_wait();
}

}  // namespace
}  // namespace ar4j_llama

using namespace ar4j_llama;

AR4J_LLAMA_API int ar4j_llama_prefetch_l2(const void *p, size_t bytes, int32_t pdl, void *stream) {
    if (p == nullptr) return AR4J_LLAMA_ERROR_NULL_POINTER;
    if (bytes == 0 || bytes % 16 != 0) return AR4J_LLAMA_ERROR_SIZE;
    if (!aligned(p, 16)) return AR4J_LLAMA_ERROR_MISALIGNED;
    int device = 0, sms = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || sms < 1) {
        sms = 132;
    }
    const size_t pieces = (bytes + kPiece - 1) / kPiece;
    const size_t blocks = std::min<size_t>(size_t(sms), (pieces + kThreads - 1) / kThreads);
    return launch(prefetch_l2_kernel, dim3(static_cast<unsigned int>(blocks)), dim3(kThreads), 0, stream, pdl != 0,
                  static_cast<const char *>(p), bytes);
}
