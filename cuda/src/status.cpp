// The status codes' names and messages, the ABI version (include/ar4j/custom_all_reduce.h), and
// the CUDA error record behind AR4J_ERROR_CUDA (cuda_failed, ar4j_last_cuda_error).

#include "context_internal.h"

namespace {

// CUDA error of the last failed ar4j_context_create on this thread (no context to hold it).
thread_local int create_cuda_error = 0;

}  // namespace

namespace ar4j::host {

int cuda_failed(ar4j_context *ctx, cudaError_t e) {
    if (ctx != nullptr) {
        ctx->last_cuda_error = static_cast<int>(e);
    } else {
        create_cuda_error = static_cast<int>(e);
    }
    return AR4J_ERROR_CUDA;
}

}  // namespace ar4j::host

AR4J_API int ar4j_last_cuda_error(const ar4j_context *ctx) {
    return ctx == nullptr ? create_cuda_error : ctx->last_cuda_error;
}

AR4J_API const char *ar4j_status_name(int status) {
    switch (status) {
        case AR4J_SUCCESS: return "AR4J_SUCCESS";
        case AR4J_ERROR_NULL_POINTER: return "AR4J_ERROR_NULL_POINTER";
        case AR4J_ERROR_WORLD_SIZE: return "AR4J_ERROR_WORLD_SIZE";
        case AR4J_ERROR_RANK: return "AR4J_ERROR_RANK";
        case AR4J_ERROR_SIZE_NOT_MULTIPLE_OF_16: return "AR4J_ERROR_SIZE_NOT_MULTIPLE_OF_16";
        case AR4J_ERROR_MISALIGNED: return "AR4J_ERROR_MISALIGNED";
        case AR4J_ERROR_EMPTY: return "AR4J_ERROR_EMPTY";
        case AR4J_ERROR_TOO_LARGE: return "AR4J_ERROR_TOO_LARGE";
        case AR4J_ERROR_NOT_REGISTERED: return "AR4J_ERROR_NOT_REGISTERED";
        case AR4J_ERROR_DTYPE: return "AR4J_ERROR_DTYPE";
        case AR4J_ERROR_ALGORITHM: return "AR4J_ERROR_ALGORITHM";
        case AR4J_ERROR_DEADLINE: return "AR4J_ERROR_DEADLINE";
        case AR4J_ERROR_CAPACITY: return "AR4J_ERROR_CAPACITY";
        case AR4J_ERROR_ALREADY_REGISTERED: return "AR4J_ERROR_ALREADY_REGISTERED";
        case AR4J_ERROR_GRAPH_COUNT: return "AR4J_ERROR_GRAPH_COUNT";
        case AR4J_ERROR_WRONG_DEVICE: return "AR4J_ERROR_WRONG_DEVICE";
        case AR4J_ERROR_CUDA: return "AR4J_ERROR_CUDA";
        case AR4J_ERROR_PEER_TIMEOUT: return "AR4J_ERROR_PEER_TIMEOUT";
        case AR4J_ERROR_LAUNCH_CONFIG: return "AR4J_ERROR_LAUNCH_CONFIG";
        case AR4J_ERROR_INVALID_ARGUMENT: return "AR4J_ERROR_INVALID_ARGUMENT";
        case AR4J_ERROR_GEOMETRY_MISMATCH: return "AR4J_ERROR_GEOMETRY_MISMATCH";
        case AR4J_ERROR_POISONED: return "AR4J_ERROR_POISONED";
        case AR4J_ERROR_CONCURRENT_USE: return "AR4J_ERROR_CONCURRENT_USE";
        case AR4J_ERROR_ALREADY_LAUNCHED: return "AR4J_ERROR_ALREADY_LAUNCHED";
        case AR4J_ERROR_NOT_FUSED: return "AR4J_ERROR_NOT_FUSED";
        case AR4J_ERROR_HIDDEN_TOO_LARGE: return "AR4J_ERROR_HIDDEN_TOO_LARGE";
        case AR4J_ERROR_ROW_NOT_MULTIPLE_OF_16: return "AR4J_ERROR_ROW_NOT_MULTIPLE_OF_16";
        case AR4J_ERROR_SLOT_IN_USE: return "AR4J_ERROR_SLOT_IN_USE";
        default: return "AR4J_UNKNOWN_STATUS";
    }
}

AR4J_API const char *ar4j_status_message(int status) {
    switch (status) {
        case AR4J_SUCCESS: return "success";
        case AR4J_ERROR_NULL_POINTER: return "a required pointer argument was NULL";
        case AR4J_ERROR_WORLD_SIZE: return "world size must be 2, 4, 6 or 8";
        case AR4J_ERROR_RANK: return "rank must be in [0, world size)";
        case AR4J_ERROR_SIZE_NOT_MULTIPLE_OF_16:
            return "element count times element size must be a multiple of 16 bytes";
        case AR4J_ERROR_MISALIGNED: return "device pointers must be 16-byte aligned";
        case AR4J_ERROR_EMPTY: return "element count must be at least 1";
        case AR4J_ERROR_TOO_LARGE:
            return "the byte size exceeds the registered buffer (ONE_STAGE, also fused), the context's maximum "
                   "(max_bytes, TWO_STAGE) or AR4J_PUSH_MAX_BYTES (PUSH, also fused), or max_bytes is so "
                   "large that the signal block's size does not fit in a size_t";
        case AR4J_ERROR_NOT_REGISTERED:
            return "the input lies in no registered buffer and the stream is not capturing a graph";
        case AR4J_ERROR_DTYPE: return "dtype must be AR4J_DTYPE_FLOAT32, AR4J_DTYPE_FLOAT16 or AR4J_DTYPE_BFLOAT16";
        case AR4J_ERROR_ALGORITHM:
            return "algorithm must be AR4J_ALGO_ONE_STAGE, AR4J_ALGO_TWO_STAGE or AR4J_ALGO_PUSH";
        case AR4J_ERROR_DEADLINE: return "the deadline must be greater than zero nanoseconds";
        case AR4J_ERROR_CAPACITY: return "the registration table is full (max_buffers)";
        case AR4J_ERROR_ALREADY_REGISTERED: return "the buffer overlaps a registered buffer";
        case AR4J_ERROR_GRAPH_COUNT:
            return "the number of graph inputs registered differs from the number recorded during capture";
        case AR4J_ERROR_WRONG_DEVICE: return "the calling thread's current CUDA device is not the context's device";
        case AR4J_ERROR_CUDA: return "a CUDA runtime call failed (see ar4j_last_cuda_error)";
        case AR4J_ERROR_PEER_TIMEOUT:
            return "a kernel gave up waiting for a peer; the context is unusable (see ar4j_read_timeout)";
        case AR4J_ERROR_LAUNCH_CONFIG:
            return "blocks must be in [1, 128] and threads a multiple of 32 in [32, 1024]";
        case AR4J_ERROR_INVALID_ARGUMENT:
            return "an argument is outside its documented range, or buffers overlap where the call forbids it (in "
                   "ar4j_all_reduce_residual_rmsnorm with AR4J_ALGO_ONE_STAGE no output may overlap the input, "
                   "which the peers read during the whole launch: copy the input elsewhere for an in-place call)";
        case AR4J_ERROR_GEOMETRY_MISMATCH:
            return "a peer publishes a different launch geometry (blocks, threads, push grid, fused block or library "
                   "ABI version) or none; every rank must run the same library version and call ar4j_set_launch_config "
                   "with the same values before the group's first call (see ar4j_read_failure)";
        case AR4J_ERROR_POISONED:
            return "the group is poisoned: a rank gave up, aborted or detected misuse; outputs of its kernels are NaN; "
                   "dispose the context and make a new group (see ar4j_read_failure)";
        case AR4J_ERROR_CONCURRENT_USE:
            return "another thread is inside a call on this context; a context is used by one host thread at a time";
        case AR4J_ERROR_ALREADY_LAUNCHED:
            return "the context has launched already; launch geometry and debug seeds are accepted only before the "
                   "first all-reduce";
        case AR4J_ERROR_NOT_FUSED:
            return "the algorithm has no fused all-reduce + residual + RMSNorm kernel (AR4J_ALGO_PUSH and "
                   "AR4J_ALGO_ONE_STAGE have one): call ar4j_all_reduce, then ar4j_residual_rmsnorm";
        case AR4J_ERROR_HIDDEN_TOO_LARGE:
            return "hidden exceeds AR4J_FUSED_MAX_HIDDEN, the largest row the fused kernel normalises";
        case AR4J_ERROR_ROW_NOT_MULTIPLE_OF_16:
            return "hidden times the element size must be a multiple of 16 bytes for the fused kernel";
        case AR4J_ERROR_SLOT_IN_USE:
            return "a captured CUDA graph (or an executable graph instantiated from it) still names this buffer: "
                   "destroy those graphs first, then unregister again (CUDA releases a destroyed graph's hold "
                   "shortly after the destroy call)";
        default: return "unknown status code";
    }
}

AR4J_API int ar4j_abi_version(void) { return 800; }
