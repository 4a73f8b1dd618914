package dev.ar4j.cuda;

import dev.ar4j.internal.cuda.IpcMapping;
import dev.ar4j.internal.cuda.IpcBufferExport;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;

/**
 * One process of {@link IpcTwoProcessIT}: on device {@code rank}, fills a buffer with a pattern
 * that names the rank, publishes its {@link IpcBufferExport} in the exchange directory, opens the
 * peer's, reads the peer's data back and compares it exactly; then checks that the mapping closes
 * once. The buffer lies at an offset inside its allocation, so the export's offset is exercised.
 * Prints {@code IPC-OK rank=R} and exits 0 on success; exits 1 with the reason otherwise.
 *
 * <p>Arguments: rank (0 or 1), exchange directory, element count (ints).
 */
public final class IpcPeerMain {
    private static final Duration WAIT = Duration.ofSeconds(60);
    static final long OFFSET = 256;

    private IpcPeerMain() {
    }

    static int value(int rank, long index) {
        return rank * 1_000_000_007 + (int) (index * 2654435761L);
    }

    public static void main(String[] args) throws Exception {
        int rank = Integer.parseInt(args[0]);
        Path exchange = Path.of(args[1]);
        long ints = Long.parseLong(args[2]);
        int peer = 1 - rank;
        long bytes = ints * Integer.BYTES;
        try {
            Cuda.setDevice(rank);
            try (Arena arena = Arena.ofConfined(); DeviceBuffer allocation = DeviceBuffer.allocate(OFFSET + bytes)) {
                DeviceBuffer mine = allocation.slice(OFFSET, bytes);
                MemorySegment host = arena.allocate(ValueLayout.JAVA_INT, ints);
                for (long i = 0; i < ints; i++) {
                    host.setAtIndex(ValueLayout.JAVA_INT, i, value(rank, i));
                }
                mine.copyFrom(host);

                IpcBufferExport export = IpcBufferExport.of(mine);
                check(export.offset() == OFFSET, "export offset " + export.offset() + ", expected " + OFFSET);
                GpuTestSupport.writeAtomically(exchange.resolve("rank" + rank + ".export"), export.toBytes());

                IpcBufferExport theirs = IpcBufferExport.fromBytes(
                        GpuTestSupport.awaitFile(exchange.resolve("rank" + peer + ".export"), WAIT));
                check(theirs.byteSize() == bytes, "peer exported " + theirs.byteSize() + " bytes, expected " + bytes);
                check(!theirs.handle().equals(export.handle()), "the peer's handle equals mine");

                IpcMapping mapping = theirs.handle().open();
                DeviceBuffer view = mapping.view(theirs.offset(), theirs.byteSize());
                check(view.device() == rank, "view on device " + view.device());
                MemorySegment readBack = arena.allocate(ValueLayout.JAVA_INT, ints);
                view.copyTo(readBack);
                long wrong = 0;
                long firstWrong = -1;
                for (long i = 0; i < ints; i++) {
                    if (readBack.getAtIndex(ValueLayout.JAVA_INT, i) != value(peer, i)) {
                        wrong++;
                        if (firstWrong < 0) {
                            firstWrong = i;
                        }
                    }
                }
                check(wrong == 0, wrong + " of " + ints + " ints differ from the peer's data, first at " + firstWrong);

                mapping.close();
                mapping.close(); // a second cudaIpcCloseMemHandle would fail: close runs once
                check(!view.isOpen(), "the view outlived its mapping");
                try {
                    view.address();
                    check(false, "a view of a closed mapping was usable");
                } catch (IllegalStateException expected) {
                    // the documented behaviour
                }

                // Keep my allocation alive until the peer has read it.
                GpuTestSupport.writeAtomically(exchange.resolve("rank" + rank + ".done"), new byte[0]);
                GpuTestSupport.awaitFile(exchange.resolve("rank" + peer + ".done"), WAIT);
            }
            System.out.println("IPC-OK rank=" + rank + " ints=" + ints);
            System.exit(0);
        } catch (Throwable t) {
            System.out.println("IPC-FAILED rank=" + rank + ": " + t);
            t.printStackTrace(System.out);
            System.exit(1);
        }
    }

    private static void check(boolean condition, String failure) {
        if (!condition) {
            throw new AssertionError(failure);
        }
    }
}
