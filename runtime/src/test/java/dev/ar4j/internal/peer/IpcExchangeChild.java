package dev.ar4j.internal.peer;

import dev.ar4j.rendezvous.Rendezvous;
import dev.ar4j.internal.rendezvous.TcpRendezvous;

import java.time.Duration;

/**
 * One rank of {@link IpcPeerMemoryProcessTest}: {@code IpcExchangeChild rank worldSize port
 * sizeOfSecondBuffer}. Exchanges three pointers (two in one allocation), checks every peer
 * pointer, prints "OK" and the open/close events; exits non-zero with the reason otherwise.
 */
public final class IpcExchangeChild {

    public static void main(String[] args) {
        int rank = Integer.parseInt(args[0]);
        int worldSize = Integer.parseInt(args[1]);
        int port = Integer.parseInt(args[2]);
        long secondSize = Long.parseLong(args[3]);
        try {
            System.out.println(run(rank, worldSize, port, secondSize));
            System.exit(0);
        } catch (Throwable t) {
            System.out.println("ERROR " + t.getMessage());
            System.exit(3);
        }
    }

    static String run(int rank, int worldSize, int port, long secondSize) {
        FakeIpc ipc = new FakeIpc();
        Duration timeout = Duration.ofSeconds(20);
        try (Rendezvous rv = TcpRendezvous.builder().rank(rank).worldSize(worldSize).serverHost("127.0.0.1")
                .serverPort(port).connectTimeout(timeout).closeLinger(Duration.ofSeconds(2)).connect();
             IpcPeerMemory memory = new IpcPeerMemory(rv, timeout, ipc.exporter(rank), ipc.opener())) {
            long[] pointers = {FakeIpc.base(rank, 0) + 4096, FakeIpc.base(rank, 1), FakeIpc.base(rank, 0) + 8192};
            long[] sizes = {4096, secondSize, 1024};
            long[][] shared = memory.exchange(pointers, sizes);
            long[] offsets = {4096, 0, 8192};
            int[] allocations = {0, 1, 0};
            for (int i = 0; i < 3; i++) {
                for (int r = 0; r < worldSize; r++) {
                    long want = r == rank ? pointers[i]
                            : FakeIpc.mappedBase(FakeIpc.handle(r, allocations[i])) + offsets[i];
                    if (shared[i][r] != want) {
                        throw new AssertionError("buffer " + i + " of rank " + r + ": got 0x"
                                + Long.toHexString(shared[i][r]) + ", want 0x" + Long.toHexString(want));
                    }
                }
            }
            // The same allocation again: served from the cache, nothing new opened.
            long[] again = memory.exchange(FakeIpc.base(rank, 0) + 64, 16);
            int opened = memory.openMappings();
            if (opened != 2 * (worldSize - 1)) {
                throw new AssertionError("opened " + opened + " mappings, want " + 2 * (worldSize - 1));
            }
            for (int r = 0; r < worldSize; r++) {
                long want = r == rank ? FakeIpc.base(rank, 0) + 64 : FakeIpc.mappedBase(FakeIpc.handle(r, 0)) + 64;
                if (again[r] != want) {
                    throw new AssertionError("cached exchange, rank " + r + ": wrong pointer");
                }
            }
            memory.close();
            memory.close();  // idempotent
            long opens = ipc.events.stream().filter(e -> e.startsWith("open")).count();
            long closes = ipc.events.stream().filter(e -> e.startsWith("close")).count();
            if (opens != closes) {
                throw new AssertionError(opens + " opens but " + closes + " closes: " + ipc.events);
            }
            return "OK rank " + rank + " opens " + opens + " closes " + closes;
        }
    }
}
