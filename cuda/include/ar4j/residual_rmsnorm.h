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
 * order, the fused kernels' order). This is the unfused path (after an all-reduce through NCCL or a custom kernel) and
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

/* Flags of ar4j_residual_rmsnorm_ex (ABI 0.8.0). */
enum ar4j_rmsnorm_flags {
    /* Launch with programmatic stream serialization (programmatic dependent launch): the kernel
     * may start while the previous kernel of the stream still runs, and waits for it
     * (griddepcontrol.wait) before its first load; it lets the next kernel launch at once. Only
     * where the device has compute capability 9.0 or newer and the library holds machine code for
     * it (ar4j_rmsnorm_pdl_capable); elsewhere the flag changes nothing. */
    AR4J_RMSNORM_PDL = 1
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

/*
 * ar4j_residual_rmsnorm with flags (AR4J_RMSNORM_PDL, or 0: then the same as
 * ar4j_residual_rmsnorm); an unknown flag is AR4J_ERROR_INVALID_ARGUMENT. Since ABI 0.8.0.
 * Rows of a multiple of 16 bytes on 16-byte aligned buffers take 16-byte loads and stores; every
 * form computes the same bits. The launch is stream-ordered and never synchronises, so it can be
 * captured into a CUDA graph.
 */
int ar4j_residual_rmsnorm_ex(int32_t dtype, const void *in, const void *residual, const void *weight,
                             void *out, void *residual_out, size_t rows, size_t hidden, float eps,
                             void *stream, uint32_t flags);

/* Whether AR4J_RMSNORM_PDL takes effect on the calling thread's current device: *out = 1 when it
 * has compute capability 9.0 or newer and the library holds machine code for it, else 0 (also
 * without a usable device). AR4J_ERROR_NULL_POINTER for a NULL out. Since ABI 0.8.0. */
int ar4j_rmsnorm_pdl_capable(int32_t *out);

/* The cudaError_t of the calling thread's last ar4j_residual_rmsnorm that failed with
 * AR4J_ERROR_CUDA (0 if none). */
int ar4j_rmsnorm_last_cuda_error(void);

#ifdef __cplusplus
}
#endif

#endif /* AR4J_RESIDUAL_RMSNORM_H */
