package dev.ar4j.internal.nccl;

import dev.ar4j.nccl.NcclUnsupportedException;
import dev.ar4j.nccl.NcclDataType;
import dev.ar4j.nccl.NcclReduction;
import dev.ar4j.nccl.NcclVersion;
import dev.ar4j.nccl.NcclCollectives;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every collective refuses bad arguments with a message naming the call, the rank, what was wrong
 * and what is accepted, before NCCL is called: the communicator here is a scripted one
 * ({@link FakeNcclCalls}, rank 1 of 4 on device 3) whose handle NCCL has never seen, so a call that
 * got past validation would reach native code with it. Buffers are borrowed addresses, never touched.
 */
class NcclCollectivesValidationTest {
    private static final int DEVICE = 3;
    private static final long BASE = 0x10_0000_0000L;

    private FakeNcclCalls nccl;
    private NcclCommunicator comm;
    private NcclCollectives c;
    private CudaStream stream;

    @BeforeEach
    void fakeCommunicator() {
        nccl = new FakeNcclCalls();
        nccl.device = DEVICE;
        nccl.state = () -> NcclErrors.SUCCESS;
        comm = NcclCommInit.nonBlocking(nccl, new NcclSupport(new NcclVersion(2, 30, 7)),
                NcclUniqueId.fromBytes(new byte[NcclUniqueId.BYTES]), 4, 1, Duration.ofSeconds(5), () -> false);
        c = comm;
        stream = CudaStream.borrow(0x1234, DEVICE);
    }

    private static DeviceBuffer buffer(long offset, long bytes) {
        return DeviceBuffer.borrow(BASE + offset, bytes, DEVICE);
    }

    private static void refused(Executable call, String... fragments) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call);
        for (String fragment : fragments) {
            assertTrue(e.getMessage().contains(fragment), "'" + fragment + "' missing from: " + e.getMessage());
        }
    }

    @Test
    void allReduceChecksSizesDevicesStreamAndOverlap() {
        refused(() -> c.allReduce(buffer(0, 64), buffer(4096, 60), 16, NcclDataType.FLOAT32, NcclReduction.SUM, stream),
                "ncclAllReduce on rank 1 of 4: the receive buffer has 60 bytes; the call needs 64 (16 x ncclFloat32)");
        refused(() -> c.allReduce(buffer(0, 64), DeviceBuffer.borrow(BASE + 4096, 64, 0), 16, NcclDataType.FLOAT32,
                NcclReduction.SUM, stream), "the receive buffer is on device 0 but this communicator uses device 3");
        refused(() -> c.allReduce(buffer(0, 64), buffer(4096, 64), 16, NcclDataType.FLOAT32, NcclReduction.SUM,
                CudaStream.borrow(0x1234, 1)), "the stream belongs to device 1 but this communicator uses device 3");
        refused(() -> c.allReduce(buffer(0, 64), buffer(32, 64), 16, NcclDataType.FLOAT32, NcclReduction.MAX, stream),
                "overlaps the receive buffer", "but is not in place", "send and receive starting at the same address");
        refused(() -> c.allReduce(buffer(0, 64), buffer(0, 64), -1, NcclDataType.FLOAT32, NcclReduction.SUM, stream),
                "count must be >= 0 (elements), got -1");
        refused(() -> c.allReduce(1L, 2L, -5, NcclDataType.INT8, NcclReduction.SUM, 0L), "count must be >= 0");
        refused(() -> c.allReduce(buffer(0, 64), buffer(0, 64), Long.MAX_VALUE / 2, NcclDataType.FLOAT64,
                NcclReduction.SUM, stream), "overflow a 64-bit byte count");
        assertThrows(NullPointerException.class,
                () -> c.allReduce(buffer(0, 64), buffer(0, 64), 4, null, NcclReduction.SUM, stream));
        assertThrows(NullPointerException.class,
                () -> c.allReduce(1L, 1L, 4, NcclDataType.FLOAT32, null, 0L));
    }

    @Test
    void allGatherNeedsNranksTimesTheSendCountAndOnlyItsInPlaceLayout() {
        // 8 float32 per rank: receive needs 4 x 32 = 128 bytes.
        refused(() -> c.allGather(buffer(0, 32), buffer(4096, 127), 8, NcclDataType.FLOAT32, stream),
                "ncclAllGather on rank 1 of 4: the receive buffer has 127 bytes; the call needs 128 (4 ranks x 8 x"
                        + " ncclFloat32)");
        refused(() -> c.allGather(buffer(0, 31), buffer(4096, 128), 8, NcclDataType.FLOAT32, stream),
                "the send buffer has 31 bytes; the call needs 32");
        // In place is send == receive + rank * 32 (rank 1): any other overlap is refused.
        refused(() -> c.allGather(buffer(4096, 32), buffer(4096, 128), 8, NcclDataType.FLOAT32, stream),
                "not in place", "receive.slice(rank * sendBytes, sendBytes)");
        refused(() -> c.allGather(buffer(4096 + 64, 32), buffer(4096, 128), 8, NcclDataType.FLOAT32, stream),
                "not in place");
    }

    @Test
    void reduceScatterNeedsNranksTimesTheReceiveCountAndOnlyItsInPlaceLayout() {
        refused(() -> c.reduceScatter(buffer(0, 31), buffer(4096, 8), 2, NcclDataType.INT32, NcclReduction.SUM, stream),
                "the send buffer has 31 bytes; the call needs 32 (4 ranks x 2 x ncclInt32)");
        refused(() -> c.reduceScatter(buffer(0, 32), buffer(4096, 7), 2, NcclDataType.INT32, NcclReduction.SUM, stream),
                "the receive buffer has 7 bytes; the call needs 8 (2 x ncclInt32)");
        // In place is receive == send + rank * 8 = send + 8; the receive at send + 16 is rank 2's block.
        refused(() -> c.reduceScatter(buffer(0, 32), buffer(16, 8), 2, NcclDataType.INT32, NcclReduction.SUM, stream),
                "not in place", "send.slice(rank * receiveBytes, receiveBytes)");
    }

    @Test
    void rootedAndPointToPointCallsCheckTheRank() {
        refused(() -> c.broadcast(buffer(0, 16), buffer(4096, 16), 4, NcclDataType.FLOAT32, 4, stream),
                "ncclBroadcast on rank 1 of 4: root must be a rank of this communicator, in [0, 4), got 4");
        refused(() -> c.reduce(buffer(0, 16), buffer(4096, 16), 4, NcclDataType.FLOAT32, NcclReduction.SUM, -1,
                stream), "root must be a rank of this communicator, in [0, 4), got -1");
        refused(() -> c.send(buffer(0, 16), 4, NcclDataType.FLOAT32, 9, stream),
                "ncclSend on rank 1 of 4: peer must be a rank of this communicator, in [0, 4), got 9");
        refused(() -> c.recv(buffer(0, 16), 4, NcclDataType.FLOAT32, -3, stream), "ncclRecv on rank 1 of 4: peer");
        refused(() -> c.recv(7L, 4, NcclDataType.FLOAT32, 4, 0L), "peer must be a rank");
        refused(() -> c.send(buffer(0, 15), 4, NcclDataType.FLOAT32, 0, stream),
                "the send buffer has 15 bytes; the call needs 16");
        refused(() -> c.recv(buffer(0, 15), 4, NcclDataType.FLOAT32, 0, stream),
                "the receive buffer has 15 bytes; the call needs 16");
    }

    @Test
    void rootOnlyBuffersAreCheckedOnTheRootAndMayBeNullElsewhere() {
        // This is rank 1: as the root of a broadcast it needs a send buffer of the full size.
        refused(() -> c.broadcast(buffer(0, 8), buffer(4096, 16), 4, NcclDataType.FLOAT32, 1, stream),
                "the send buffer has 8 bytes; the call needs 16");
        assertThrows(NullPointerException.class,
                () -> c.broadcast(null, buffer(4096, 16), 4, NcclDataType.FLOAT32, 1, stream));
        refused(() -> c.reduce(buffer(0, 16), buffer(4096, 8), 4, NcclDataType.FLOAT32, NcclReduction.SUM, 1, stream),
                "the receive buffer has 8 bytes; the call needs 16");
        assertThrows(NullPointerException.class,
                () -> c.reduce(buffer(0, 16), null, 4, NcclDataType.FLOAT32, NcclReduction.SUM, 1, stream));
        // Off the root the receive of a broadcast is still checked.
        refused(() -> c.broadcast(null, buffer(4096, 8), 4, NcclDataType.FLOAT32, 0, stream),
                "the receive buffer has 8 bytes; the call needs 16");
        // On the root, the root-only buffer may be the other one (in place) but must not overlap it otherwise;
        // the message names the send side first for both calls.
        refused(() -> c.broadcast(buffer(0, 16), buffer(8, 16), 4, NcclDataType.FLOAT32, 1, stream),
                "ncclBroadcast", "the send buffer [0x" + Long.toHexString(BASE) + ", +16 bytes) overlaps the receive "
                        + "buffer [0x" + Long.toHexString(BASE + 8) + ", +16 bytes)");
        refused(() -> c.reduce(buffer(8, 16), buffer(0, 16), 4, NcclDataType.FLOAT32, NcclReduction.SUM, 1, stream),
                "ncclReduce", "the send buffer [0x" + Long.toHexString(BASE + 8) + ", +16 bytes) overlaps the receive "
                        + "buffer [0x" + Long.toHexString(BASE) + ", +16 bytes)");
    }

    @Test
    void fp8ReductionsAreRefusedOnAnOlderGpuButNotFp8Gathers() {
        nccl.computeCapability = 8;
        NcclUnsupportedException e = assertThrows(NcclUnsupportedException.class, () -> c.allReduce(buffer(0, 16),
                buffer(4096, 16), 16, NcclDataType.FLOAT8_E4M3, NcclReduction.SUM, stream));
        assertTrue(e.getMessage().startsWith("ncclAllReduce on rank 1 of 4: NCCL reduces ncclFloat8e4m3 (ncclSum)"),
                e.getMessage());
        assertThrows(NcclUnsupportedException.class, () -> c.reduceScatter(buffer(0, 64), buffer(4096, 16), 16,
                NcclDataType.FLOAT8_E5M2, NcclReduction.MIN, stream));
        assertThrows(NcclUnsupportedException.class, () -> c.reduce(buffer(0, 16), buffer(4096, 16), 16,
                NcclDataType.FLOAT8_E5M2, NcclReduction.PROD, 0, stream));
        // An fp8 all-gather passes the support check: the size check is what stops this one.
        refused(() -> c.allGather(buffer(0, 16), buffer(4096, 63), 16, NcclDataType.FLOAT8_E4M3, stream),
                "the receive buffer has 63 bytes; the call needs 64 (4 ranks x 16 x ncclFloat8e4m3)");
    }

    @Test
    void anOlderNcclRefusesFp8AndAvgBeforeNcclIsCalled() {
        NcclCommunicator old = NcclCommInit.nonBlocking(nccl, new NcclSupport(new NcclVersion(2, 9, 6)),
                NcclUniqueId.fromBytes(new byte[NcclUniqueId.BYTES]), 4, 1, Duration.ofSeconds(5), () -> false);
        NcclUnsupportedException avg = assertThrows(NcclUnsupportedException.class, () -> old
                .allReduce(1L, 1L, 4, NcclDataType.FLOAT32, NcclReduction.AVG, 0L));
        assertTrue(avg.getMessage().contains("ncclAvg needs NCCL 2.10.0 or newer; the loaded NCCL is 2.9.6"),
                avg.getMessage());
        assertThrows(NcclUnsupportedException.class, () -> old.allGather(1L, 2L, 4,
                NcclDataType.FLOAT8_E5M2, 0L));
        assertThrows(NcclUnsupportedException.class, () -> old.broadcast(1L, 2L, 4,
                NcclDataType.BFLOAT16, 0, 0L));
        assertThrows(NcclUnsupportedException.class, () -> old.send(1L, 4, NcclDataType.BFLOAT16, 0, 0L));
    }

    @Test
    void aClosedCommunicatorRefusesEveryCall() {
        comm.close();
        assertEquals(1, nccl.count("finalize"));
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> c.allGather(1L, 2L, 4, NcclDataType.INT64, 0L));
        assertEquals("ncclAllGather on rank 1 of 4: the communicator is closed or aborted", e.getMessage());
        assertThrows(IllegalStateException.class, () -> c.send(1L, 4, NcclDataType.INT64, 0, 0L));
        assertThrows(IllegalStateException.class, comm::handle);
        assertThrows(IllegalStateException.class, () -> comm.split(0, 0));
    }

    @Test
    void overlapRuleAcceptsDisjointAndInPlaceRanges() {
        NcclArguments.checkOverlap("x", "", 0, 64, 64, 64, false, "r");
        NcclArguments.checkOverlap("x", "", 64, 64, 0, 64, false, "r");
        NcclArguments.checkOverlap("x", "", 32, 32, 0, 128, true, "r");
        NcclArguments.checkOverlap("x", "", 0, 0, 0, 64, false, "r");
        refused(() -> NcclArguments.checkOverlap("x", "", 63, 64, 0, 64, false, "the rule"), "x: the send buffer",
                "in place: the rule");
    }
}
