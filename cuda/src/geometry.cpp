// The side channel's copy and the launch-geometry words a context publishes in its Signal: the
// bottom of the host side with status.cpp (context.cpp publishes, failure.cpp compares and reads).

#include <cstdint>
#include <mutex>

#include "context_internal.h"

namespace ar4j::host {

// Copies between host staging and device words on the side stream and waits for the copies
// only (never for the kernels: the stream is non-blocking). Caller holds side_mutex.
cudaError_t side_copy(ar4j_context *ctx, void *dst, const void *src, size_t bytes) {
    cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, ctx->side);
    if (e == cudaSuccess) e = cudaStreamSynchronize(ctx->side);
    return e;
}

// The launch geometry word a context publishes in its Signal (see ar4j_set_launch_config): from
// bit 63 down, the tag 0xA5, this library's ABI version, the 1-/2-stage (max_blocks, threads / 32),
// the push grid (blocks, threads / 32) and the fused kernels' block threads / 32, all of which the
// ranks of a group must agree on.
unsigned long long geometry_word(int max_blocks, int threads) {
    return (kGeometryTag << 56) | ((unsigned long long)(ar4j_abi_version() & 0xffff) << 40) |
           ((unsigned long long)(max_blocks & 0xff) << 32) | ((unsigned long long)((threads / 32) & 0xff) << 24) |
           ((unsigned long long)(ar4j::kPushBlocks & 0xff) << 16) |
           ((unsigned long long)((ar4j::kPushThreads / 32) & 0xff) << 8) |
           (unsigned long long)((ar4j::kNormThreads / 32) & 0xff);
}
static_assert(AR4J_MAX_BLOCKS <= 0xff && AR4J_MAX_THREADS / 32 <= 0xff && ar4j::kNormThreads % 32 == 0,
              "the geometry word's 8-bit fields");

cudaError_t publish_geometry(ar4j_context *ctx) {
    std::lock_guard<std::mutex> lock(ctx->side_mutex);
    RelaxedCapture relaxed;
    DeviceScope scope(ctx->device);
    if (!scope.ok) return scope.error;
    ctx->staging[0] = geometry_word(ctx->max_blocks, ctx->threads);
    ctx->staging[1] = ctx->identity;
    ctx->staging[2] = ar4j::make_variants_word(ctx->variants, ctx->max_bytes);
    return side_copy(ctx, &ctx->self->geometry, ctx->staging, 3 * sizeof(unsigned long long));
}

}  // namespace ar4j::host
