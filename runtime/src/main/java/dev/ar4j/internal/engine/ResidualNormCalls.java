package dev.ar4j.internal.engine;

import dev.ar4j.DType;
import dev.ar4j.PeerTimeoutException;
import dev.ar4j.internal.engine.FailureState.Failure;
import dev.ar4j.internal.engine.FailureState.Kind;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.dispatch.Algorithm;
import dev.ar4j.dispatch.Decision;

import java.util.Objects;

/**
 * The all-reduce + residual add + RMSNorm calls of one communicator
 * ({@code Communicator.allReduceResidualRmsNorm}, {@code Communicator.explainResidualRmsNorm}):
 * one fused kernel when {@link FusedNormRoute} says so, run under the call guard, otherwise the
 * all-reduce as {@link AllReduceCalls} decides it followed by the separate
 * {@link dev.ar4j.internal.kernels.ResidualRmsNorm} kernel.
 */
final class ResidualNormCalls {

    private final int device;
    private final Dispatchers dispatchers;
    private final CustomKernelPath kernels;  // null when the topology rules the kernels out
    private final CaptureRecorder capture;
    private final CallGuard guard;
    private final Containment containment;
    private final AllReduceCalls allReduces;

    ResidualNormCalls(GroupParts parts, CaptureRecorder capture, CallGuard guard, Containment containment,
                      AllReduceCalls allReduces) {
        this.device = parts.group().device;
        this.dispatchers = parts.dispatchers();
        this.kernels = parts.kernels();
        this.capture = capture;
        this.guard = guard;
        this.containment = containment;
        this.allReduces = allReduces;
    }

    /** {@code Communicator.allReduceResidualRmsNorm}: true when a fused kernel ran. */
    boolean run(DeviceBuffer in, DeviceBuffer residual, DeviceBuffer weight, DeviceBuffer out, DeviceBuffer residualOut,
                int hidden, float eps, DType dtype, CudaStream stream) {
        NormShape shape = NormShape.check(device, in, residual, weight, out, residualOut, hidden, eps, dtype, stream);
        if (kernels != null && FusedNormRoute.fusableRow(hidden, dtype)
                && fused(shape, in, residual, weight, out, residualOut, eps, dtype, stream)) {
            return true;
        }
        allReduces.buffers(in, out, dtype, stream);
        dev.ar4j.internal.kernels.ResidualRmsNorm.launch(dtype, out, residual, weight, out, residualOut, hidden, eps, stream);
        return false;
    }

    /** Runs the call as one fused kernel if its route is fused; false (nothing enqueued) otherwise. */
    private boolean fused(NormShape shape, DeviceBuffer in, DeviceBuffer residual, DeviceBuffer weight,
                          DeviceBuffer out, DeviceBuffer residualOut, float eps, DType dtype, CudaStream stream) {
        guard.enter("allReduceResidualRmsNorm");
        try {
            long bytes = shape.count() * dtype.byteSize();
            long i = in.address(), o = out.address(), ro = residualOut.address();
            boolean aligned = ((i | residual.address() | weight.address() | o | ro) & 15) == 0;
            boolean registered = kernels.isRegistered(i, bytes);
            Algorithm algorithm = dispatchers.configured.decide(bytes, dtype, aligned, registered).algorithm();
            FusedNormRoute route = FusedNormRoute.of(algorithm, shape.hidden(), dtype, registered,
                    FusedNormRoute.overlaps(o, i, bytes) || FusedNormRoute.overlaps(ro, i, bytes), bytes,
                    kernels.stagingBytes());
            if (route == FusedNormRoute.UNFUSED) {
                return false;
            }
            // The input is never recorded for sharing: a one-stage call reads a registered buffer (its
            // own, or the staging buffer after a copy that a replay repeats).
            if (capture.isOpen()) {
                capture.call(algorithm, dtype, shape.count(), false);
            }
            if (route == FusedNormRoute.ONE_STAGE_STAGED) {
                kernels.launchResidualRmsNormStaged(dtype, i, residual.address(), weight.address(), o, ro, shape.rows(),
                        shape.hidden(), eps, stream.handle());
            } else {
                kernels.launchResidualRmsNorm(algorithm, dtype, i, residual.address(), weight.address(), o, ro,
                        shape.rows(), shape.hidden(), eps, stream.handle());
            }
            return true;
        } catch (PeerTimeoutException e) {
            containment.contain(new Failure(Kind.PEER_TIMEOUT, e.peer(), e.getMessage(), e));
            throw e;
        } finally {
            guard.exit();
        }
    }

    /** {@code Communicator.explainResidualRmsNorm(long, int, DType, boolean)}. */
    String explain(long bytes, int hidden, DType dtype, boolean registeredInput) {
        Objects.requireNonNull(dtype, "dtype");
        if (hidden < 1 || bytes <= 0 || bytes % ((long) hidden * dtype.byteSize()) != 0) {
            throw new IllegalArgumentException(bytes + " bytes is not a whole, positive number of rows of " + hidden
                    + " " + dtype + " elements");
        }
        Decision d = dispatchers.configured.decide(bytes, dtype, true, registeredInput);
        FusedNormRoute route = kernels == null ? FusedNormRoute.UNFUSED
                : FusedNormRoute.of(d.algorithm(), hidden, dtype, registeredInput, false, bytes, kernels.stagingBytes());
        return route.describe(d, hidden, dtype);
    }
}
