package dev.ar4j.internal.nccl;

import dev.ar4j.nccl.NcclDataType;
import dev.ar4j.nccl.NcclReduction;
import dev.ar4j.nccl.NcclCollectives;
import dev.ar4j.DType;
import dev.ar4j.cuda.Cuda;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.cuda.GpuTestSupport;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * NCCL with world size 1 on one GPU: every collective equals its definition for every type and
 * reduction ({@link NcclCollectiveChecks}), the argument checks refuse real buffers, the blocking
 * init still works, and close/abort end a communicator that did work.
 */
@Tag("gpu")
@Timeout(value = 300, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class NcclSingleGpuIT {
    private static final Duration INIT = Duration.ofSeconds(60);

    @BeforeEach
    void deviceZero() {
        GpuTestSupport.requireGpus(1);
        Cuda.setDevice(0);
    }

    @Test
    void everyCollectiveEqualsItsDefinitionForEveryTypeAndReduction() {
        long seed = new SplittableRandom().nextLong();
        try (NcclCommunicator comm = NcclCommInit.nonBlocking(NcclUniqueId.generate(), 1, 0, INIT, () -> false);
             CudaStream stream = CudaStream.create()) {
            assertFalse(comm.isBlocking());
            assertEquals(0, comm.device());
            NcclCollectiveChecks checks = new NcclCollectiveChecks(comm, stream, seed);
            checks.runAll(new long[]{1, 1003, (1 << 16) + 7});
            // 12 types x 3 counts x (5 reductions x 2 x 3 collectives + 2 x 2 + send/recv), plus split.
            assertTrue(checks.checked() > 12L * 66_000 * 35, "compared " + checks.checked() + " elements (seed " + seed + ")");
            assertTrue(comm.asyncError().isEmpty());
            assertFalse(comm.isFailed());
        }
    }

    @Test
    void badArgumentsOnARealCommunicatorGiveNamedExceptions() {
        try (NcclCommunicator comm = NcclCommInit.nonBlocking(NcclUniqueId.generate(), 1, 0, INIT, () -> false);
             CudaStream stream = CudaStream.create();
             DeviceBuffer small = DeviceBuffer.allocate(60);
             DeviceBuffer big = DeviceBuffer.allocate(4096)) {
            NcclCollectives c = comm;
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> c.allReduce(big, small, 16, NcclDataType.FLOAT32, NcclReduction.SUM, stream));
            assertEquals("ncclAllReduce on rank 0 of 1: the receive buffer has 60 bytes; the call needs 64"
                    + " (16 x ncclFloat32)", e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> c.allGather(big.slice(8, 64), big, 16,
                    NcclDataType.FLOAT32, stream), "overlapping, not in place");
            assertThrows(IllegalArgumentException.class, () -> c.broadcast(big, big, 4, NcclDataType.INT8, 1, stream));
            assertThrows(IllegalArgumentException.class, () -> c.send(big, 4, NcclDataType.INT8, 1, stream));
            assertThrows(IllegalArgumentException.class, () -> comm.split(-7, 0));
            assertFalse(comm.isFailed(), "refused arguments leave the communicator usable");
            c.allReduce(big, big, 16, NcclDataType.FLOAT32, NcclReduction.SUM, stream);
            stream.synchronize();
        }
    }

    @Test
    void theBlockingInitStillWorksAndClosesByDestroying() {
        try (Arena arena = Arena.ofConfined();
             NcclCommunicator comm = NcclCommInit.blocking(NcclUniqueId.generate(), 1, 0);
             CudaStream stream = CudaStream.create();
             DeviceBuffer buffer = DeviceBuffer.allocate(4 * 1000)) {
            assertTrue(comm.isBlocking());
            assertEquals(NcclCommunicator.BLOCKING_WAIT_TIMEOUT, comm.timeout());
            MemorySegment host = arena.allocate(ValueLayout.JAVA_FLOAT, 1000);
            for (int i = 0; i < 1000; i++) {
                host.setAtIndex(ValueLayout.JAVA_FLOAT, i, i * 0.25f);
            }
            buffer.copyFrom(host);
            comm.allReduce(buffer, buffer, 1000, NcclDataType.of(DType.FLOAT32), NcclReduction.SUM, stream);
            stream.synchronize();
            MemorySegment back = arena.allocate(ValueLayout.JAVA_FLOAT, 1000);
            buffer.copyTo(back);
            assertEquals(-1, host.mismatch(back));
        }
    }

    @Test
    void abortFromAnotherThreadAfterWorkEndsTheCommunicatorOnce() throws Exception {
        NcclCommunicator comm = NcclCommInit.nonBlocking(NcclUniqueId.generate(), 1, 0, INIT, () -> false);
        try (CudaStream stream = CudaStream.create(); DeviceBuffer buffer = DeviceBuffer.allocate(1 << 20)) {
            for (int i = 0; i < 10; i++) {
                comm.allReduce(buffer, buffer, (1 << 20) / 2, NcclDataType.BFLOAT16, NcclReduction.MAX,
                        stream);
            }
            CompletableFuture.runAsync(comm::abort).get(30, TimeUnit.SECONDS);
            assertFalse(comm.isOpen());
            stream.synchronize();
            comm.close();
            comm.abort();
            assertThrows(IllegalStateException.class, () -> comm.allReduce(buffer, buffer, 4,
                    NcclDataType.FLOAT32, NcclReduction.SUM, stream));
        }
    }
}
