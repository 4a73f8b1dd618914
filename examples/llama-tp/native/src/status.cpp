// The library's version and the names of its status codes (host only).
#include <cuda_runtime.h>

#include "ar4j_llama/kernels.h"

#define AR4J_LLAMA_API extern "C" __attribute__((visibility("default")))

AR4J_LLAMA_API int ar4j_llama_abi_version(void) { return AR4J_LLAMA_ABI_VERSION; }

AR4J_LLAMA_API const char *ar4j_llama_error_string(int code) {
    switch (code) {
        case AR4J_LLAMA_OK: return "ok";
        case AR4J_LLAMA_ERROR_NULL_POINTER: return "a required pointer argument was NULL";
        case AR4J_LLAMA_ERROR_SIZE: return "a count or dimension is outside its documented range";
        case AR4J_LLAMA_ERROR_HEAD_DIM: return "head_dim is not even or outside 2..256";
        case AR4J_LLAMA_ERROR_GQA: return "n_heads is not a multiple of n_kv_heads";
        case AR4J_LLAMA_ERROR_POSITION: return "a position is outside [0, max_positions)";
        case AR4J_LLAMA_ERROR_TOKEN_ID: return "a token id is outside [0, vocab)";
        case AR4J_LLAMA_ERROR_VOCAB_RANGE: return "the vocabulary shard is not 0 <= vocab_start < vocab_end <= vocab";
        case AR4J_LLAMA_ERROR_DTYPE: return "unknown dtype (expected AR4J_LLAMA_DTYPE_FLOAT32 or _BFLOAT16)";
        case AR4J_LLAMA_ERROR_WORKSPACE: return "the attention workspace is smaller than ar4j_llama_attention_workspace_bytes()";
        case AR4J_LLAMA_ERROR_SPLITS: return "num_splits is outside 1..AR4J_LLAMA_MAX_SPLITS";
        case AR4J_LLAMA_ERROR_STRIDE: return "a row (or cache sequence) stride is smaller than what it must hold";
        case AR4J_LLAMA_ERROR_MISALIGNED: return "a pointer or row stride is not aligned as documented";
        case AR4J_LLAMA_ERROR_INVALID_ARGUMENT: return "an argument is outside its documented range";
        case AR4J_LLAMA_ERROR_LOGITS: return "a row of logits to sample from has no finite value";
        case AR4J_LLAMA_ERROR_UNSUPPORTED: return "the current device cannot run what was asked for (the bulk-copy ring needs sm_90 or newer)";
        default: break;
    }
    if (code > 0 && code < 10000) return cudaGetErrorString(static_cast<cudaError_t>(code));
    return "unknown status";
}
