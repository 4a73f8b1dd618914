package dev.ar4j.internal.nccl;

import dev.ar4j.nccl.Nccl;
import dev.ar4j.cuda.Cuda;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.GpuTestSupport;

import java.nio.file.Path;
import java.time.Duration;

/**
 * One rank of {@link NcclCollectivesTwoProcessIT}: rank 0 makes the unique id and writes it to the
 * exchange directory; every rank joins a non-blocking communicator on device {@code rank} and runs
 * {@link NcclCollectiveChecks} (every collective, type and reduction, exact against the
 * definition). Prints {@code NCCL-COLLECTIVES-OK rank=R checked=N} and exits 0, or prints the
 * failure with its causes and exits 1.
 *
 * <p>Arguments: rank, nranks, exchange directory, seed.
 */
public final class NcclCollectivesPeerMain {
    private static final Duration WAIT = Duration.ofSeconds(60);

    private NcclCollectivesPeerMain() {
    }

    public static void main(String[] args) {
        int rank = Integer.parseInt(args[0]);
        int nranks = Integer.parseInt(args[1]);
        Path exchange = Path.of(args[2]);
        long seed = Long.parseLong(args[3]);
        try {
            Cuda.setDevice(rank);
            Path idFile = exchange.resolve("nccl-collectives.id");
            NcclUniqueId id;
            if (rank == 0) {
                id = NcclUniqueId.generate();
                GpuTestSupport.writeAtomically(idFile, id.toBytes());
            } else {
                id = NcclUniqueId.fromBytes(GpuTestSupport.awaitFile(idFile, WAIT));
            }
            long checked;
            try (NcclCommunicator comm = NcclCommInit.nonBlocking(id, nranks, rank, WAIT, () -> false);
                 CudaStream stream = CudaStream.create()) {
                if (comm.rank() != rank || comm.nranks() != nranks || comm.device() != rank) {
                    throw new AssertionError("unexpected communicator " + comm);
                }
                NcclCollectiveChecks checks = new NcclCollectiveChecks(comm, stream, seed);
                checks.runAll(new long[]{1, 1003, (1 << 16) + 7});
                checked = checks.checked();
            }
            System.out.println("NCCL-COLLECTIVES-OK rank=" + rank + " checked=" + checked + " seed=" + seed + " nccl="
                    + Nccl.versionString());
            System.exit(0);
        } catch (Throwable t) {
            System.out.println("NCCL-COLLECTIVES-FAILED rank=" + rank + " seed=" + seed + ": " + describe(t));
            System.exit(1);
        }
    }

    /** The failure, its causes and where each was thrown, as text for the parent's assertion message. */
    static String describe(Throwable t) {
        StringBuilder out = new StringBuilder();
        for (Throwable x = t; x != null; x = x.getCause()) {
            out.append(x == t ? "" : "\ncaused by: ").append(x);
            StackTraceElement[] frames = x.getStackTrace();
            for (int i = 0; i < Math.min(12, frames.length); i++) {
                out.append("\n    at ").append(frames[i]);
            }
        }
        return out.toString();
    }
}
