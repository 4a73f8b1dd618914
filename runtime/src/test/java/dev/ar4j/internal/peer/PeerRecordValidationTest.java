package dev.ar4j.internal.peer;

import dev.ar4j.OutOfStepException;
import dev.ar4j.internal.rendezvous.InProcessRendezvous;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Peer IPC records are checked before the kernels write through them: an offset and size outside
 * the peer's allocation (+64 GiB, -1 MiB, Long.MAX_VALUE), or a handle of this rank's own memory,
 * is refused naming the rank that sent it. Two ranks on two threads, fake IPC handles.
 */
class PeerRecordValidationTest {

    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final long BYTES = 4096;

    /** Rank 1 lies about where its buffer is: offset {@code forgedOffset} in its first allocation. */
    private static Throwable exchangeWithForgedOffset(long forgedOffset) throws Exception {
        FakeIpc ipc = new FakeIpc();
        IpcPeerMemory.Exporter liar = (pointer, offsetOut) -> {
            offsetOut[0] = forgedOffset;
            return FakeIpc.handle(1, 0);
        };
        return runRank0(ipc, liar);
    }

    private static Throwable runRank0(FakeIpc ipc, IpcPeerMemory.Exporter rank1Exporter) throws Exception {
        InProcessRendezvous group = InProcessRendezvous.create(2);
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            Future<Throwable> rank0 = pool.submit(() -> attempt(new IpcPeerMemory(group.forRank(0), TIMEOUT,
                    ipc.exporter(0), ipc.opener()), FakeIpc.base(0, 0)));
            Future<Throwable> rank1 = pool.submit(() -> attempt(new IpcPeerMemory(group.forRank(1), TIMEOUT,
                    rank1Exporter, ipc.opener()), FakeIpc.base(1, 0)));
            rank1.get(30, TimeUnit.SECONDS);
            return rank0.get(30, TimeUnit.SECONDS);
        } finally {
            pool.shutdownNow();
        }
    }

    private static Throwable attempt(IpcPeerMemory memory, long pointer) {
        try (memory) {
            memory.exchange(pointer, BYTES);
            return null;
        } catch (RuntimeException e) {
            return e;
        }
    }

    @Test
    void anHonestRecordIsAccepted() throws Exception {
        FakeIpc ipc = new FakeIpc();
        assertNull(runRank0(ipc, ipc.exporter(1)));
    }

    @Test
    void offsetsOutsideThePeersAllocationAreRefusedNamingTheRank() throws Exception {
        for (long forged : new long[] {64L << 30, -(1L << 20), Long.MAX_VALUE, FakeIpc.ALLOCATION_BYTES - BYTES + 16}) {
            Throwable e = exchangeWithForgedOffset(forged);
            assertInstanceOf(OutOfStepException.class, e, "offset " + forged + " was accepted");
            assertTrue(e.getMessage().contains("rank 1") && e.getMessage().contains("refused"), e.getMessage());
        }
        assertNull(exchangeWithForgedOffset(FakeIpc.ALLOCATION_BYTES - BYTES), "the last offset that fits");
    }

    @Test
    void aHandleOfThisRanksOwnMemoryIsRefused() throws Exception {
        FakeIpc ipc = new FakeIpc();
        IpcPeerMemory.Exporter mirror = (pointer, offsetOut) -> {
            offsetOut[0] = 0;
            return FakeIpc.handle(0, 0);  // rank 0's own allocation, sent back by rank 1
        };
        Throwable e = runRank0(ipc, mirror);
        assertInstanceOf(OutOfStepException.class, e);
        assertTrue(e.getMessage().contains("rank 1") && e.getMessage().contains("own allocation"), e.getMessage());
    }

    @Test
    void inOneProcessAPointerOutsideThePeersAllocationIsRefused() throws Exception {
        // Rank 1's allocation: [0x10000, +64 KiB). Rank 1 claims 4 KiB at its last 2 KiB.
        DirectPeerMemory.RangeOf ranges = pointer -> {
            if (pointer >= 0x10000 && pointer < 0x20000) {
                return new long[] {0x10000, 0x10000};
            }
            if (pointer >= 0x40000 && pointer < 0x50000) {
                return new long[] {0x40000, 0x10000};
            }
            throw new IllegalArgumentException("CUDA_ERROR_NOT_FOUND");
        };
        for (long[] claim : new long[][] {{0x1f800, 0}, {0x90000, 0}}) {
            InProcessRendezvous group = InProcessRendezvous.create(2);
            ExecutorService pool = Executors.newFixedThreadPool(2);
            try {
                Future<Throwable> rank0 = pool.submit(() -> attemptDirect(new DirectPeerMemory(group.forRank(0),
                        TIMEOUT, ranges), 0x40000));
                Future<Throwable> rank1 = pool.submit(() -> attemptDirect(new DirectPeerMemory(group.forRank(1),
                        TIMEOUT, ranges), claim[0]));
                rank1.get(30, TimeUnit.SECONDS);
                Throwable e = rank0.get(30, TimeUnit.SECONDS);
                assertInstanceOf(OutOfStepException.class, e, "0x" + Long.toHexString(claim[0]) + " was accepted");
                assertTrue(e.getMessage().contains("rank 1") && e.getMessage().contains("refused"), e.getMessage());
            } finally {
                pool.shutdownNow();
            }
        }
    }

    private static Throwable attemptDirect(DirectPeerMemory memory, long pointer) {
        try {
            memory.exchange(pointer, BYTES);
            return null;
        } catch (RuntimeException e) {
            return e;
        }
    }
}
