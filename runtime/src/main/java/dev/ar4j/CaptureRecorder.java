package dev.ar4j;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * Graph-capture support of one rank: the open {@link GraphCapture} scope, the inputs recorded
 * while it is open (unregistered inputs of one-stage and two-stage calls issued on a capturing
 * stream), and, when the scope closes, the cross-rank check and the sharing of those inputs.
 */
final class CaptureRecorder {

    private final Group group;
    private final List<long[]> inputs = new ArrayList<>();  // {pointer, bytes} per captured call
    private GraphCapture open;

    CaptureRecorder(Group group) {
        this.group = group;
    }

    /** Opens a scope. */
    GraphCapture open(Communicator owner) {
        if (open != null) {
            throw new IllegalStateException("a graph capture scope is already open on this communicator");
        }
        if (!inputs.isEmpty()) {
            throw new IllegalStateException(inputs.size() + " all-reduces were captured outside a "
                    + "GraphCapture scope; open the scope before capturing");
        }
        open = new GraphCapture(owner);
        return open;
    }

    /** Records one captured input; refuses it outside a scope (a replay would read unmapped memory). */
    void record(long in, long bytes) {
        if (open == null) {
            throw new IllegalStateException("an unregistered input is being captured into a CUDA graph "
                    + "outside a GraphCapture scope: its peers' pointers would never be shared and a "
                    + "replay would read unmapped memory. Open comm.graphCapture() before capturing, "
                    + "or register(..) the buffer");
        }
        inputs.add(new long[] {in, bytes});
    }

    /**
     * Closes {@code scope} (collective): compares what the ranks captured and shares the inputs.
     * Does nothing for a scope that is not the open one.
     *
     * @param kernels the custom-kernel path, or null when the kernels are not set up
     * @return null on success, otherwise the failure that makes the communicator unusable
     *         (the caller marks it failed and throws it)
     */
    IllegalStateException finish(GraphCapture scope, CustomKernelPath kernels) {
        if (open != scope) {
            return null;
        }
        open = null;
        int mine = inputs.size();
        byte[][] counts = group.rendezvous.allGather(group.key("capture-count"),
                ByteBuffer.allocate(4).putInt(mine).array(), group.timeout);
        StringBuilder mismatch = new StringBuilder();
        for (int r = 0; r < counts.length; r++) {
            int theirs = ByteBuffer.wrap(counts[r]).getInt();
            if (theirs != mine) {
                mismatch.append(" rank ").append(r).append(": ").append(theirs).append(';');
            }
        }
        if (!mismatch.isEmpty()) {
            inputs.clear();
            return new IllegalStateException("ranks captured different numbers of zero-copy all-reduces (this rank "
                    + group.rank + ": " + mine + ";" + mismatch + "); the captured graphs must not be replayed, and "
                    + "this communicator is closed for further use");
        }
        if (mine == 0 || kernels == null) {
            inputs.clear();
            return null;
        }
        int pending = kernels.graphPendingCount();
        if (pending != mine) {
            throw new IllegalStateException("the kernel library recorded " + pending + " graph inputs but the "
                    + "communicator " + mine);
        }
        long[] pointers = new long[mine];
        long[] bytes = new long[mine];
        for (int i = 0; i < mine; i++) {
            pointers[i] = inputs.get(i)[0];
            bytes[i] = inputs.get(i)[1];
        }
        inputs.clear();
        long[][] shared = group.share(pointers, bytes);
        int ws = group.worldSize;
        long[] rows = new long[mine * ws];
        for (int i = 0; i < mine; i++) {
            System.arraycopy(shared[i], 0, rows, i * ws, ws);
        }
        kernels.registerGraphInputs(rows);
        return null;
    }
}
