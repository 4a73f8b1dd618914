/**
 * ar4j's custom all-reduce kernels (one-shot push, one-stage, two-stage) through their flat C
 * ABI ({@code cuda/include/ar4j/custom_all_reduce.h}).
 *
 * <ul>
 *   <li>{@link dev.ar4j.kernels.CustomAllReduceKernels}: the ABI's constants and calls; the
 *       library is loaded from the {@code ar4j-cuda} jar on first use.</li>
 *   <li>{@link dev.ar4j.kernels.CustomArContext}: one rank's native context (owned, closed
 *       once, used by one thread at a time).</li>
 *   <li>{@link dev.ar4j.kernels.KernelTimeout}: how long a kernel waits for its peers before it
 *       gives up; {@link dev.ar4j.kernels.CustomArException}: a status the C ABI returned.</li>
 * </ul>
 * The C ABI takes an explicit algorithm and never decides: {@link dev.ar4j.dispatch} does.
 */
package dev.ar4j.kernels;
