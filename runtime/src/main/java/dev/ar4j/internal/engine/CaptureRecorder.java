package dev.ar4j.internal.engine;

import dev.ar4j.OutOfStepException;
import dev.ar4j.DType;
import dev.ar4j.dispatch.Algorithm;

import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * Graph-capture support of one rank: the open capture scope, the signature of every
 * all-reduce issued while it is open (algorithm, dtype, element count, whether its input was
 * recorded for sharing, in call order), the inputs recorded (unregistered inputs of one-stage and
 * two-stage calls on a capturing stream), and, when the scope closes, the cross-rank comparison of
 * the signatures and the sharing of those inputs.
 */
public final class CaptureRecorder {

    /** Per-call signature bytes: algorithm (1), dtype (1), recorded input (1), count (8). */
    static final int SIGNATURE_BYTES = 11;
    /** The most calls one scope may hold (the signature must fit one rendezvous value). */
    static final int MAX_CALLS = (16 << 20) / SIGNATURE_BYTES - 1;

    private final Group group;
    private final List<long[]> inputs = new ArrayList<>();  // {pointer, bytes} per recorded input
    private ByteBuffer signature = ByteBuffer.allocate(4 + 64 * SIGNATURE_BYTES);
    private int calls;
    private Scope open;

    CaptureRecorder(Group group) {
        this.group = group;
    }

    /** Opens a scope. */
    Scope open() {
        if (open != null) {
            throw new IllegalStateException("a graph capture scope is already open on this communicator");
        }
        if (!inputs.isEmpty()) {
            throw new IllegalStateException(inputs.size() + " all-reduces were captured outside a "
                    + "GraphCapture scope; open the scope before capturing");
        }
        open = new Scope();
        calls = 0;
        signature.clear();
        return open;
    }

    /** Whether a scope is open (then every call's signature is recorded). */
    boolean isOpen() {
        return open != null;
    }

    /** Records one call's signature while a scope is open. */
    void call(Algorithm algorithm, DType dtype, long count, boolean recordedInput) {
        if (open == null) {
            return;
        }
        if (calls >= MAX_CALLS) {
            throw new IllegalStateException("more than " + MAX_CALLS + " all-reduces in one graph capture scope; "
                    + "split the capture into several scopes");
        }
        if (signature.remaining() < SIGNATURE_BYTES) {
            ByteBuffer bigger = ByteBuffer.allocate(signature.capacity() * 2);
            signature.flip();
            bigger.put(signature);
            signature = bigger;
        }
        signature.put((byte) algorithm.ordinal()).put((byte) dtype.ordinal()).put((byte) (recordedInput ? 1 : 0))
                .putLong(count);
        calls++;
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
    OutOfStepException finish(Scope scope, CustomKernelPath kernels) {
        if (open != scope) {
            return null;
        }
        open = null;
        byte[] mine = new byte[signature.position()];
        signature.flip();
        signature.get(mine);
        signature.clear();
        byte[][] all = group.rendezvous.allGather(group.key("capture-signature"), mine, group.timeout);
        String difference = firstDifference(group.rank, all);
        if (difference != null) {
            inputs.clear();
            return new OutOfStepException("ranks captured different all-reduces: " + difference + "; the "
                    + "captured graphs must not be replayed, and this communicator is closed for further use. Every "
                    + "rank must capture the same calls (algorithm, dtype, element count) in the same order");
        }
        int mineInputs = inputs.size();
        if (mineInputs == 0 || kernels == null) {
            inputs.clear();
            return null;
        }
        int pending = kernels.graphPendingCount();
        if (pending != mineInputs) {
            inputs.clear();
            return new OutOfStepException("the kernel library recorded " + pending + " graph inputs but the "
                    + "communicator " + mineInputs + " on rank " + group.rank + "; the captured graphs must not be "
                    + "replayed");
        }
        long[] pointers = new long[mineInputs];
        long[] bytes = new long[mineInputs];
        for (int i = 0; i < mineInputs; i++) {
            pointers[i] = inputs.get(i)[0];
            bytes[i] = inputs.get(i)[1];
        }
        inputs.clear();
        long[][] shared = group.share(pointers, bytes);
        int ws = group.worldSize;
        long[] rows = new long[mineInputs * ws];
        for (int i = 0; i < mineInputs; i++) {
            System.arraycopy(shared[i], 0, rows, i * ws, ws);
        }
        kernels.registerGraphInputs(rows);
        return null;
    }

    /**
     * The first difference between this rank's signature and another rank's, in words, or null
     * when all agree. Pure (tests call it directly).
     */
    static String firstDifference(int rank, byte[][] all) {
        byte[] mine = all[rank];
        for (int r = 0; r < all.length; r++) {
            if (r == rank) {
                continue;
            }
            byte[] theirs = all[r];
            if (theirs.length % SIGNATURE_BYTES != 0) {
                return "rank " + r + " sent a malformed capture signature (" + theirs.length + " bytes)";
            }
            int n = Math.min(mine.length, theirs.length) / SIGNATURE_BYTES;
            for (int i = 0; i < n; i++) {
                int at = i * SIGNATURE_BYTES;
                if (!java.util.Arrays.equals(mine, at, at + SIGNATURE_BYTES, theirs, at, at + SIGNATURE_BYTES)) {
                    return "call " + i + " of the scope is " + describe(mine, at) + " on rank " + rank + " but "
                            + describe(theirs, at) + " on rank " + r;
                }
            }
            if (mine.length != theirs.length) {
                return "rank " + rank + " captured " + mine.length / SIGNATURE_BYTES + " all-reduces, rank " + r
                        + " captured " + theirs.length / SIGNATURE_BYTES;
            }
        }
        return null;
    }

    private static String describe(byte[] signature, int at) {
        try {
            ByteBuffer b = ByteBuffer.wrap(signature, at, SIGNATURE_BYTES);
            int algorithm = b.get();
            int dtype = b.get();
            boolean recorded = b.get() != 0;
            long count = b.getLong();
            String a = algorithm >= 0 && algorithm < Algorithm.values().length ? Algorithm.values()[algorithm].name()
                    : "algorithm #" + algorithm;
            String d = dtype >= 0 && dtype < DType.values().length ? DType.values()[dtype].name() : "dtype #" + dtype;
            return a + " of " + count + " x " + d + (recorded ? " (input shared at scope close)" : "");
        } catch (BufferUnderflowException e) {
            return "a truncated record";
        }
    }

    /** One open capture scope (the public {@code GraphCapture} closes it through {@link Engine#finishCapture}). */
    public static final class Scope {
        private Scope() {
        }
    }
}
