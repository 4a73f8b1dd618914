/*
 * ar4j residual add + RMSNorm: the epilogue of a tensor-parallel all-reduce, as one kernel.
 *
 *   residual_out = in + residual                                 (rounded to dtype)
 *   out          = residual_out * rsqrt(mean(residual_out^2) + eps) * weight
 *
 * over rows = count / hidden rows of hidden elements each. Arithmetic is fp32 whatever the
 * dtype: each element of residual_out is rounded to the dtype once, and the norm is computed
 * from those rounded values, so the result is a function of the stored residual_out alone and
 * the same on every rank for the same inputs (the row's sum of squares is reduced in a fixed
 * order). This is the unfused path (after an all-reduce through NCCL or a custom kernel) and
 * the reference that fused kernels are checked against.
 *
 * Status codes are those of ar4j/custom_all_reduce.h.
 */
#ifndef AR4J_RESIDUAL_RMSNORM_H
#define AR4J_RESIDUAL_RMSNORM_H

#include <stddef.h>
#include <stdint.h>

#include "ar4j/custom_all_reduce.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Limits of ar4j_residual_rmsnorm. */
enum ar4j_rmsnorm_limits {
    AR4J_RMSNORM_MAX_HIDDEN = 65536
};

/*
 * Launches the residual add + RMSNorm on stream (a cudaStream_t; NULL is the legacy stream)
 * of the calling thread's current device.
 * in, residual: rows * hidden elements of dtype; weight: hidden elements of dtype.
 * out, residual_out: rows * hidden elements of dtype. out may equal in; residual_out may
 *   equal in or residual; out must not equal residual_out or residual.
 * hidden: 1 .. AR4J_RMSNORM_MAX_HIDDEN; rows >= 1; eps: finite and > 0.
 * Returns AR4J_SUCCESS once the kernel is enqueued, AR4J_ERROR_CUDA when the launch failed
 * (the cudaError_t through ar4j_rmsnorm_last_cuda_error()), or the status naming the bad
 * argument.
 */
int ar4j_residual_rmsnorm(int32_t dtype, const void *in, const void *residual, const void *weight,
                          void *out, void *residual_out, size_t rows, size_t hidden, float eps,
                          void *stream);

/* The cudaError_t of the calling thread's last ar4j_residual_rmsnorm that failed with
 * AR4J_ERROR_CUDA (0 if none). */
int ar4j_rmsnorm_last_cuda_error(void);

#ifdef __cplusplus
}
#endif

#endif /* AR4J_RESIDUAL_RMSNORM_H */
