package dev.ar4j.internal.engine;

import dev.ar4j.DType;
import dev.ar4j.PeerTimeoutException;
import dev.ar4j.internal.engine.FailureState.Failure;
import dev.ar4j.internal.engine.FailureState.Kind;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.dispatch.Algorithm;
import dev.ar4j.dispatch.AllReduceDispatcher;
import dev.ar4j.dispatch.Decision;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Objects;

/**
 * The all-reduce calls of one communicator ({@code Communicator.allReduce}): the buffer form's
 * argument checks, then, under the call guard, the decision (an unregistered input on a capturing
 * stream counts as zero-copy: it is recorded and shared when the capture scope closes), the
 * signature recorded for an open capture scope, and the launch on NCCL or a custom kernel. A
 * kernel that gave up waiting for a peer fails the communicator.
 */
final class AllReduceCalls {

    private final Group group;
    private final Dispatchers dispatchers;
    private final NcclPath nccl;             // null when built with nccl(false)
    private final CustomKernelPath kernels;  // null when the topology rules the kernels out
    private final CaptureRecorder capture;
    private final CallGuard guard;
    private final Containment containment;
    private final MemorySegment captureScratch = Arena.ofAuto().allocate(ValueLayout.JAVA_INT);

    AllReduceCalls(GroupParts parts, CaptureRecorder capture, CallGuard guard, Containment containment) {
        this.group = parts.group();
        this.dispatchers = parts.dispatchers();
        this.nccl = parts.nccl();
        this.kernels = parts.kernels();
        this.capture = capture;
        this.guard = guard;
        this.containment = containment;
    }

    /** {@code Communicator.allReduce(DeviceBuffer, DeviceBuffer, DType, CudaStream)}: the checks, then {@link #run}. */
    void buffers(DeviceBuffer in, DeviceBuffer out, DType dtype, CudaStream stream) {
        Objects.requireNonNull(in, "in");
        Objects.requireNonNull(out, "out");
        Objects.requireNonNull(dtype, "dtype");
        Objects.requireNonNull(stream, "stream");
        if (in.byteSize() != out.byteSize()) {
            throw new IllegalArgumentException("input (" + in.byteSize() + " bytes) and output (" + out.byteSize()
                    + " bytes) differ in size");
        }
        if (in.device() != group.device || out.device() != group.device) {
            throw new IllegalArgumentException("buffers are on GPU " + in.device() + "/" + out.device()
                    + " but this communicator drives GPU " + group.device);
        }
        if (in.byteSize() % dtype.byteSize() != 0) {
            throw new IllegalArgumentException(in.byteSize() + " bytes is not a whole number of " + dtype + " elements");
        }
        run(dispatchers.configured, in.address(), out.address(), in.byteSize() / dtype.byteSize(), dtype,
                stream.handle());
    }

    /** One all-reduce on raw addresses, decided by {@code dispatcher}; returns the decision carried out. */
    Decision run(AllReduceDispatcher dispatcher, long in, long out, long count, DType dtype, long stream) {
        Objects.requireNonNull(dtype, "dtype");
        if (count <= 0) {
            throw new IllegalArgumentException("element count must be positive, got " + count);
        }
        guard.enter("allReduce");
        try {
            long bytes = count * dtype.byteSize();
            boolean aligned = ((in | out) & 15) == 0;
            boolean zeroCopy = kernels != null && kernels.isRegistered(in, bytes);
            Decision decision = dispatcher.decide(bytes, dtype, aligned, zeroCopy);
            // An unregistered input inside a graph capture is zero-copy too (recorded, shared when the
            // capture scope closes); ask the stream only when it can change the decision or the path.
            boolean recorded = false;
            if (!zeroCopy && kernels != null && decision.algorithm() != Algorithm.PUSH && aligned && bytes % 16 == 0
                    && !kernels.touchesRetired(in, bytes) && CudaStream.isCapturing(stream, captureScratch)) {
                zeroCopy = true;
                recorded = true;
                decision = dispatcher.decide(bytes, dtype, aligned, true);
            }
            Algorithm algorithm = decision.algorithm();
            if (capture.isOpen()) {
                capture.call(algorithm, dtype, count, recorded && algorithm != Algorithm.NCCL
                        && algorithm != Algorithm.PUSH);
            }
            switch (algorithm) {
                case NCCL -> {
                    if (nccl == null) {
                        throw Dispatchers.ncclRefusal(group.rank, bytes, dtype, decision);
                    }
                    nccl.allReduce(in, out, count, dtype, stream);
                }
                case PUSH -> kernels.launch(algorithm, dtype, in, out, count, stream);
                case ONE_STAGE, TWO_STAGE -> {
                    if (decision.staged()) {
                        kernels.launchStaged(algorithm, dtype, in, out, count, stream);
                    } else {
                        if (recorded) {
                            capture.record(in, bytes);
                        }
                        kernels.launch(algorithm, dtype, in, out, count, stream);
                    }
                }
                case LOCAL -> LocalCopy.allReduce(in, out, bytes, stream);
                case AUTO -> throw new IllegalStateException("a decision is never AUTO: " + decision);
            }
            return decision;
        } catch (PeerTimeoutException e) {
            containment.contain(new Failure(Kind.PEER_TIMEOUT, e.peer(), e.getMessage(), e));
            throw e;
        } finally {
            guard.exit();
        }
    }
}
