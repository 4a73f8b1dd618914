package dev.ar4j.benchmarks.perf;

import dev.ar4j.Communicator;
import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.nccl.Nccl;
import dev.ar4j.nccl.NcclCollectives;
import dev.ar4j.nccl.NcclWindow;

import java.nio.charset.StandardCharsets;

/**
 * The buffers of the {@code nccl-symm} baseline: {@code ncclMemAlloc} memory registered as NCCL
 * symmetric windows ({@code NCCL_WIN_COLL_SYMMETRIC}, NCCL 2.27 or newer), so that NCCL may use its
 * symmetric-memory kernels. Set up collectively; every step's outcome is shared, so that all
 * ranks skip the baseline together when one of them cannot set it up.
 */
final class SymmetricBuffers {
    /** The first NCCL version with symmetric windows (2.27.0). */
    static final int FIRST_VERSION = 22700;


    private final DeviceBuffer in;
    private final DeviceBuffer out;
    private final NcclWindow inWindow;
    private final NcclWindow outWindow;

    private SymmetricBuffers(DeviceBuffer in, DeviceBuffer out, NcclWindow inWindow, NcclWindow outWindow) {
        this.in = in;
        this.out = out;
        this.inWindow = inWindow;
        this.outWindow = outWindow;
    }

    /**
     * The outcome of the setup: buffers, or the reason every rank skips the baseline.
     *
     * @param buffers    the buffers, or null when skipped
     * @param skipReason why the baseline is skipped, or null
     */
    record Outcome(SymmetricBuffers buffers, String skipReason) {
    }

    /**
     * Allocates and registers an input (and, if {@code withOutput}, an output) of {@code bytes}
     * bytes on the calling thread's current device. Collective.
     */
    static Outcome open(NcclCollectives nccl, Communicator comm, long bytes, boolean withOutput) {
        int version = Nccl.version();
        if (version < FIRST_VERSION) {
            return new Outcome(null, "NCCL " + Nccl.formatVersion(version) + " has no symmetric windows (needs 2.27 or "
                    + "newer)");
        }
        DeviceBuffer in = null;
        DeviceBuffer out = null;
        String failure = null;
        try {
            in = Nccl.memAlloc(bytes);
            out = withOutput ? Nccl.memAlloc(bytes) : null;
        } catch (RuntimeException e) {
            failure = "ncclMemAlloc(" + bytes + " bytes) failed: " + e.getMessage();
        }
        String anyFailure = firstFailure(comm, failure);
        if (anyFailure != null) {
            if (out != null) {
                out.close();
            }
            if (in != null) {
                in.close();
            }
            return new Outcome(null, anyFailure);
        }
        NcclWindow inWindow = null;
        NcclWindow outWindow = null;
        try {
            inWindow = nccl.registerWindow(in, NcclWindow.COLLECTIVE_SYMMETRIC);
            outWindow = out == null ? null : nccl.registerWindow(out, NcclWindow.COLLECTIVE_SYMMETRIC);
        } catch (RuntimeException | LinkageError e) {
            failure = "ncclCommWindowRegister(NCCL_WIN_COLL_SYMMETRIC) failed: " + e.getMessage();
        }
        anyFailure = firstFailure(comm, failure);
        if (anyFailure != null) {
            // Deregistering is collective and some rank failed to register: leave the buffers and
            // windows to the end of the process (NCCL releases windows when the communicator goes).
            return new Outcome(null, anyFailure);
        }
        return new Outcome(new SymmetricBuffers(in, out, inWindow, outWindow), null);
    }

    /** Shares every rank's failure (or none) and returns the first one, naming its rank, or null. */
    private static String firstFailure(Communicator comm, String mine) {
        byte[][] all = comm.exchange((mine == null ? "" : mine).getBytes(StandardCharsets.UTF_8));
        for (int r = 0; r < all.length; r++) {
            if (all[r].length > 0) {
                return "rank " + r + ": " + new String(all[r], StandardCharsets.UTF_8);
            }
        }
        return null;
    }

    /** The registered input. */
    DeviceBuffer in() {
        return in;
    }

    /** The registered output, or null when only in-place runs were asked for. */
    DeviceBuffer out() {
        return out;
    }

    /** Deregisters the windows (collective, same order on every rank) and frees the memory. */
    void close() {
        if (outWindow != null) {
            outWindow.close();
        }
        inWindow.close();
        if (out != null) {
            out.close();
        }
        in.close();
    }
}
