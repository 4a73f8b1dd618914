package dev.ar4j.internal.kernels;

import dev.ar4j.DType;
import java.util.Objects;

/**
 * The argument rules of the fused all-reduce + residual + RMSNorm
 * ({@link CustomAllReduceContext#allReduceResidualRmsNorm}): algorithm, sizes, eps, addresses and which buffers may
 * overlap, each broken rule an {@link IllegalArgumentException} that names it, before any native call.
 */
final class FusedArguments {

    private FusedArguments() {
    }

    /** The rules of {@link CustomAllReduceContext#allReduceResidualRmsNorm}, checked without any native call. */
    static void check(int algorithm, DType dtype, long in, long residual, long weight, long out,
                      long residualOut, long rows, int hidden, float eps) {
        Objects.requireNonNull(dtype, "dtype");
        boolean push = algorithm == CustomAllReduceKernels.ALGO_PUSH;
        if (!push && algorithm != CustomAllReduceKernels.ALGO_ONE_STAGE) {
            throw new IllegalArgumentException("algorithm " + algorithm + " has no fused all-reduce + residual + RMSNorm "
                    + "kernel; ALGO_PUSH (" + CustomAllReduceKernels.ALGO_PUSH + ") and ALGO_ONE_STAGE ("
                    + CustomAllReduceKernels.ALGO_ONE_STAGE + ") have one (call allReduce, then ResidualRmsNorm.launch, "
                    + "for the others)");
        }
        if (hidden < 1 || hidden > CustomAllReduceKernels.FUSED_MAX_HIDDEN) {
            throw new IllegalArgumentException("hidden must be 1 to " + CustomAllReduceKernels.FUSED_MAX_HIDDEN
                    + " elements, got " + hidden);
        }
        long rowBytes = (long) hidden * dtype.byteSize();
        if (rowBytes % 16 != 0) {
            throw new IllegalArgumentException("hidden * element size must be a multiple of 16 bytes for the fused "
                    + "kernel; " + hidden + " " + dtype + " elements are " + rowBytes + " bytes");
        }
        if (push) {
            long maxRows = CustomAllReduceKernels.PUSH_MAX_BYTES / rowBytes;
            if (rows < 1 || rows > maxRows) {
                throw new IllegalArgumentException("rows must be 1 to " + maxRows + " (rows * hidden * element size at "
                        + "most " + CustomAllReduceKernels.PUSH_MAX_BYTES + " bytes, the push limit, with " + rowBytes
                        + " bytes a row), got " + rows);
            }
        } else if (rows < 1 || rows > Long.MAX_VALUE / rowBytes) {
            // The registration bounds a one-stage call; the library checks it.
            throw new IllegalArgumentException("rows must be at least 1 (and rows * hidden * element size within the "
                    + "registered buffer), got " + rows);
        }
        if (!(eps > 0f) || !Float.isFinite(eps)) {
            throw new IllegalArgumentException("eps must be finite and greater than 0, got " + eps);
        }
        checkAddress(in, "in");
        checkAddress(residual, "residual");
        checkAddress(weight, "weight");
        checkAddress(out, "out");
        checkAddress(residualOut, "residualOut");
        long bytes = rows * rowBytes;
        if (!push && (overlaps(out, bytes, in, bytes) || overlaps(residualOut, bytes, in, bytes))) {
            throw new IllegalArgumentException((overlaps(out, bytes, in, bytes) ? "out" : "residualOut")
                    + " overlaps in, which the one-stage kernel's peers read during the whole launch: no output of a "
                    + "fused one-stage call may overlap its input, not even equal it (copy the input into a registered "
                    + "buffer first, as Communicator does through its staging buffer)");
        }
        if (overlaps(out, bytes, residualOut, bytes)) {
            throw new IllegalArgumentException("out and residualOut overlap");
        }
        if (out != in && overlaps(out, bytes, in, bytes)) {
            throw new IllegalArgumentException("out overlaps in without being equal to it (in place is out == in)");
        }
        if (overlaps(out, bytes, residual, bytes)) {
            throw new IllegalArgumentException("out overlaps residual (the kernel reads residual after writing out "
                    + "elsewhere); out may be in, residualOut may be residual or in");
        }
        if (residualOut != residual && overlaps(residualOut, bytes, residual, bytes)) {
            throw new IllegalArgumentException("residualOut overlaps residual without being equal to it");
        }
        if (residualOut != in && overlaps(residualOut, bytes, in, bytes)) {
            throw new IllegalArgumentException("residualOut overlaps in without being equal to it");
        }
        if (overlaps(weight, rowBytes, out, bytes) || overlaps(weight, rowBytes, residualOut, bytes)) {
            throw new IllegalArgumentException("weight overlaps out or residualOut (every row reads weight)");
        }
    }

    /** A device address: not 0, 16-byte aligned (no allocation: this runs on every fused call). */
    private static void checkAddress(long address, String name) {
        if (address == 0) {
            throw new IllegalArgumentException(name + " must not be 0 (a device address)");
        }
        if ((address & 15) != 0) {
            throw new IllegalArgumentException(name + " must be 16-byte aligned, got 0x" + Long.toHexString(address));
        }
    }

    private static boolean overlaps(long a, long aBytes, long b, long bBytes) {
        return Long.compareUnsigned(a, b + bBytes) < 0 && Long.compareUnsigned(b, a + aBytes) < 0;
    }
}
