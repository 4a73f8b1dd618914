package dev.ar4j;

import dev.ar4j.cuda.Cuda;
import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.dispatch.Algorithm;
import dev.ar4j.group.RegisteredRanges;
import dev.ar4j.kernels.CustomAllReduceKernels;
import dev.ar4j.kernels.CustomArContext;
import dev.ar4j.kernels.CustomArException;
import dev.ar4j.kernels.KernelTimeout;

/**
 * The custom-kernel path of one rank: its {@link CustomArContext} (owned, destroyed once), the
 * registered address ranges, and the launch of one all-reduce (zero-copy or through the staging
 * buffer). A kernel timeout becomes a {@link PeerTimeoutException} naming the peer.
 */
final class CustomKernelPath implements AutoCloseable {

    private final Group group;
    private final CustomArContext kernels;
    private final RegisteredRanges registered;
    private final long stagingAddress;

    private CustomKernelPath(Group group, CustomArContext kernels, RegisteredRanges registered, long stagingAddress) {
        this.group = group;
        this.kernels = kernels;
        this.registered = registered;
        this.stagingAddress = stagingAddress;
    }

    /**
     * Allocates and shares the signal block and staging buffer, creates the context and registers
     * the staging buffer (collective). On failure the context is closed; the group's buffers stay
     * with the group, which the caller closes.
     */
    static CustomKernelPath open(Group group, long stagingBytes, int maxRegistrations, long kernelTimeoutNanos,
                                 int launchBlocks, int launchThreads) {
        long signalBytes = CustomAllReduceKernels.signalSize(stagingBytes);
        long[][] shared = group.openSharedBuffers(signalBytes, stagingBytes);
        CustomArContext ctx = CustomAllReduceKernels.createContext(shared[0], group.rank, group.worldSize, stagingBytes,
                maxRegistrations, kernelTimeoutNanos);
        try {
            if (launchBlocks > 0) {
                ctx.setLaunchConfig(launchBlocks, launchThreads);
            }
            ctx.registerBuffer(shared[1], stagingBytes);
            RegisteredRanges ranges = new RegisteredRanges();
            ranges.add(group.staging().address(), stagingBytes);
            return new CustomKernelPath(group, ctx, ranges, group.staging().address());
        } catch (RuntimeException e) {
            Closing.quietly(e, ctx);
            throw e;
        }
    }

    /** Whether [in, in + bytes) lies in a registered buffer (the staging buffer included). */
    boolean isRegistered(long in, long bytes) {
        return registered.contains(in, bytes);
    }

    /** Launches on the caller's input (registered, recorded in a capture, or any input for push). */
    void launch(Algorithm algorithm, DType dtype, long in, long out, long count, long stream) {
        try {
            kernels.allReduce(algorithm.kernelCode(), dtype, in, out, count, stream);
        } catch (CustomArException e) {
            if (e.status() == CustomAllReduceKernels.STATUS_PEER_TIMEOUT) {
                throw peerTimeout(kernels.readTimeout(false), e);
            }
            throw e;
        }
    }

    /** Copies the input into the staging buffer and launches on it. */
    void launchStaged(Algorithm algorithm, DType dtype, long in, long out, long count, long stream) {
        Cuda.memcpyDeviceToDeviceAsync(stagingAddress, in, count * dtype.byteSize(), stream);
        launch(algorithm, dtype, stagingAddress, out, count, stream);
    }

    /** Shares {@code buffer} with every rank and registers it (collective). */
    void register(DeviceBuffer buffer) {
        long[] pointers = group.share(new long[] {buffer.address()}, new long[] {buffer.byteSize()})[0];
        kernels.registerBuffer(pointers, buffer.byteSize());
        registered.add(buffer.address(), buffer.byteSize());
    }

    /** Graph inputs the kernel library recorded during capture and not yet registered. */
    int graphPendingCount() {
        return kernels.graphPendingCount();
    }

    /** Registers the pending graph inputs: row i holds every rank's pointer for the i-th input. */
    void registerGraphInputs(long[] rows) {
        kernels.registerGraphInputs(rows);
    }

    /** The kernels' timeout record (not cleared). */
    KernelTimeout readTimeout() {
        return kernels.readTimeout(false);
    }

    /** The exception for a recorded kernel timeout; {@code cause} may be null. */
    PeerTimeoutException peerTimeout(KernelTimeout t, Throwable cause) {
        String message = "rank " + group.rank + ": a custom all-reduce kernel gave up waiting for rank " + t.peer()
                + " (block " + t.block() + ", barrier " + t.barrier() + ") after the kernel timeout; that rank is "
                + "dead, hung or made different calls. This communicator is unusable: close it and build a new group";
        return new PeerTimeoutException(message, t.peer(), cause);
    }

    @Override
    public void close() {
        kernels.close();
    }
}
