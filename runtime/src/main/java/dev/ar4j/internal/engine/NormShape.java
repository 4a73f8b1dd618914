package dev.ar4j.internal.engine;

import dev.ar4j.DType;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.internal.kernels.ResidualRmsNorm;

import java.util.Objects;

/**
 * The checked shape of an all-reduce + residual add + RMSNorm call: {@code count} elements in
 * {@code rows} rows of {@code hidden}. {@link #check} refuses, before any GPU work, what neither
 * the fused kernel nor the unfused path can do, with a message saying what is accepted.
 */
record NormShape(long count, long rows, int hidden) {

    static NormShape check(int device, DeviceBuffer in, DeviceBuffer residual, DeviceBuffer weight, DeviceBuffer out,
                           DeviceBuffer residualOut, int hidden, float eps, DType dtype, CudaStream stream) {
        Objects.requireNonNull(in, "in");
        Objects.requireNonNull(residual, "residual");
        Objects.requireNonNull(weight, "weight");
        Objects.requireNonNull(out, "out");
        Objects.requireNonNull(residualOut, "residualOut");
        Objects.requireNonNull(dtype, "dtype");
        Objects.requireNonNull(stream, "stream");
        if (hidden < 1 || hidden > ResidualRmsNorm.MAX_HIDDEN) {
            throw new IllegalArgumentException("hidden must be 1 to " + ResidualRmsNorm.MAX_HIDDEN + " elements, got "
                    + hidden);
        }
        if (!(eps > 0f) || !Float.isFinite(eps)) {
            throw new IllegalArgumentException("eps must be finite and greater than 0, got " + eps);
        }
        long rowBytes = (long) hidden * dtype.byteSize();
        long bytes = in.byteSize();
        if (bytes == 0 || bytes % rowBytes != 0) {
            throw new IllegalArgumentException("in holds " + bytes + " bytes, which is not a whole, non-zero number of "
                    + "rows of " + hidden + " " + dtype + " elements (" + rowBytes + " bytes a row)");
        }
        for (DeviceBuffer b : new DeviceBuffer[] {residual, out, residualOut}) {
            if (b.byteSize() != bytes) {
                throw new IllegalArgumentException("in, residual, out and residualOut must have the same size: in has "
                        + bytes + " bytes, " + b + " has " + b.byteSize());
            }
        }
        if (weight.byteSize() < rowBytes) {
            throw new IllegalArgumentException("weight holds " + weight.byteSize() + " bytes but needs " + hidden + " "
                    + dtype + " elements (" + rowBytes + " bytes)");
        }
        for (DeviceBuffer b : new DeviceBuffer[] {in, residual, weight, out, residualOut}) {
            if (b.device() != device) {
                throw new IllegalArgumentException(b + " is on GPU " + b.device() + " but this communicator drives GPU "
                        + device);
            }
        }
        if (out.address() == residual.address() || out.address() == residualOut.address()) {
            throw new IllegalArgumentException("out must not be residual or residualOut (out may be in; residualOut "
                    + "may be in or residual)");
        }
        return new NormShape(bytes / dtype.byteSize(), bytes / rowBytes, hidden);
    }
}
