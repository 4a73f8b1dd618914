package dev.ar4j.internal.engine;

import dev.ar4j.DType;
import dev.ar4j.PeerTimeoutException;
import dev.ar4j.internal.engine.FailureState.Failure;
import dev.ar4j.internal.engine.FailureState.Kind;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.dispatch.Algorithm;
import dev.ar4j.dispatch.Decision;
import dev.ar4j.internal.kernels.ResidualRmsNorm;

import java.util.Objects;

/**
 * The all-reduce + residual add + RMSNorm calls of one communicator
 * ({@code Communicator.allReduceResidualRmsNorm}, {@code Communicator.explainResidualRmsNorm}):
 * one fused kernel when {@link FusedNormRoute} says so, run under the call guard, otherwise the
 * all-reduce as {@link AllReduceCalls} decides it followed by the separate
 * {@link dev.ar4j.internal.kernels.ResidualRmsNorm} kernel. In a group of one rank there is nothing
 * to all-reduce: the call is that one kernel on the input, and nothing else.
 */
final class ResidualNormCalls {

    private final int device;
    private final boolean solo;  // world size 1
    private final boolean pdl;   // launch the separate kernel with programmatic dependent launch
    private final Dispatchers dispatchers;
    private final CustomKernelPath kernels;  // null when the topology rules the kernels out
    private final CaptureRecorder capture;
    private final CallGuard guard;
    private final Containment containment;
    private final AllReduceCalls allReduces;

    ResidualNormCalls(GroupParts parts, CaptureRecorder capture, CallGuard guard, Containment containment,
                      AllReduceCalls allReduces, boolean pdl) {
        this.device = parts.group().device;
        this.solo = parts.group().worldSize == 1;
        this.pdl = pdl;
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
        if (solo) {
            solo(shape, in, residual, weight, out, residualOut, eps, dtype, stream);
            return false;
        }
        if (kernels != null && FusedNormRoute.fusableRow(hidden, dtype)
                && fused(shape, in, residual, weight, out, residualOut, eps, dtype, stream)) {
            return true;
        }
        allReduces.buffers(in, out, dtype, stream);
        ResidualRmsNorm.launch(dtype, out.address(), residual.address(), weight.address(), out.address(),
                residualOut.address(), shape.rows(), shape.hidden(), eps, stream.handle(), pdl);
        return false;
    }

    /**
     * World size 1: the residual add + RMSNorm kernel on the input itself (the all-reduce of one rank is
     * its input), one launch and nothing else; recorded for an open capture scope like any call.
     */
    private void solo(NormShape shape, DeviceBuffer in, DeviceBuffer residual, DeviceBuffer weight, DeviceBuffer out,
                      DeviceBuffer residualOut, float eps, DType dtype, CudaStream stream) {
        guard.enter("allReduceResidualRmsNorm");
        try {
            if (capture.isOpen()) {
                capture.call(Algorithm.LOCAL, dtype, shape.count(), false);
            }
            ResidualRmsNorm.launch(dtype, in.address(), residual.address(), weight.address(), out.address(),
                    residualOut.address(), shape.rows(), shape.hidden(), eps, stream.handle(), pdl);
        } finally {
            guard.exit();
        }
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
        if (solo) {
            return describeSolo(d, hidden, dtype, pdl);
        }
        FusedNormRoute route = kernels == null ? FusedNormRoute.UNFUSED
                : FusedNormRoute.of(d.algorithm(), hidden, dtype, registeredInput, false, bytes, kernels.stagingBytes());
        return route.describe(d, hidden, dtype);
    }

    /** What a group of one rank runs: one residual add + RMSNorm kernel and nothing else. */
    static String describeSolo(Decision decision, int hidden, DType dtype, boolean pdl) {
        boolean packs = (long) hidden * dtype.byteSize() % 16 == 0;
        return decision.reason() + ": one residual add + RMSNorm kernel on the input and nothing else (no "
                + "all-reduce, no copy; " + (packs ? "16-byte loads on 16-byte aligned buffers" : "element loads: a row "
                + "of " + hidden + " " + dtype + " is not a multiple of 16 bytes") + "; programmatic dependent launch "
                + (pdl ? "requested (in effect on compute capability 9.0 and newer)" : "off") + ")";
    }
}
