/**
 * ar4j's own CUDA kernels through their flat C ABI ({@code cuda/include/ar4j/custom_all_reduce.h}
 * and {@code residual_rmsnorm.h}): the custom all-reduce (push, one-stage, two-stage), the
 * fused all-reduce + residual add + RMSNorm, and the unfused residual add + RMSNorm.
 *
 * <ul>
 *   <li>{@link dev.ar4j.internal.kernels.CustomAllReduceKernels}: the ABI's constants and calls; the
 *       library is loaded from the {@code ar4j-cuda} jar on first use.</li>
 *   <li>{@link dev.ar4j.internal.kernels.CustomAllReduceContext}: one rank's native context (owned, closed
 *       once, used by one thread at a time, except for the watchdog's
 *       {@link dev.ar4j.internal.kernels.CustomAllReduceContext#poison(int) poison} and
 *       {@link dev.ar4j.internal.kernels.CustomAllReduceContext#readFailure() readFailure}).</li>
 *   <li>{@link dev.ar4j.internal.kernels.ResidualRmsNorm}: the residual add + RMSNorm kernel, the epilogue
 *       of an all-reduce made by NCCL or a custom algorithm.</li>
 *   <li>{@link dev.ar4j.internal.kernels.KernelFailure}, {@link dev.ar4j.internal.kernels.KernelTimeout} and
 *       {@link dev.ar4j.internal.kernels.LaunchGeometry}: what a rank knows of its group's failure (poison,
 *       its kernels' timeout record, a launch-geometry mismatch);
 *       {@link dev.ar4j.CustomAllReduceException}: a non-zero status the C ABI returned.</li>
 * </ul>
 * The C ABI takes an explicit algorithm and never decides: {@link dev.ar4j.dispatch} does.
 */
package dev.ar4j.internal.kernels;
