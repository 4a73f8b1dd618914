package dev.ar4j.internal.nccl;

import dev.ar4j.nccl.NcclTimeoutException;
import dev.ar4j.nccl.NcclAbortedException;
import dev.ar4j.nccl.NcclDataType;
import dev.ar4j.nccl.NcclReduction;
import dev.ar4j.cuda.Cuda;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.cuda.GpuTestSupport;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * NCCL world size 2 on one GPU with rank 1 never started: rank 0's non-blocking init ends with
 * a named timeout within its deadline (or at once when cancelled), aborted, and never hangs;
 * NCCL keeps working in the same JVM afterwards. One JVM, one GPU.
 */
@Tag("gpu")
@Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class NcclInitTimeoutIT {

    @BeforeEach
    void deviceZero() {
        GpuTestSupport.requireGpus(1);
        Cuda.setDevice(0);
    }

    @Test
    void aRankThatNeverStartsGivesANamedTimeoutWithinTheDeadline() {
        Duration timeout = Duration.ofSeconds(5);
        long start = System.nanoTime();
        NcclTimeoutException e = assertThrows(NcclTimeoutException.class,
                () -> NcclCommInit.nonBlocking(NcclUniqueId.generate(), 2, 0, timeout, () -> false));
        long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertTrue(millis >= 5_000 && millis < 15_000, "ended " + millis + " ms after the start; the deadline was 5 s");
        assertEquals(0, e.rank());
        assertEquals(2, e.nranks());
        assertEquals(timeout, e.timeout());
        assertEquals("ncclInProgress", e.resultName());
        assertTrue(e.getMessage().startsWith("ncclCommInitRankConfig(rank 0 of 2, non-blocking): the group did not form"
                + " within 5 s"), e.getMessage());
        assertTrue(e.getMessage().contains("a rank never started"), e.getMessage());
        worldOfOneStillWorks();
    }

    @Test
    void cancellingEndsTheWaitAtOnce() {
        long start = System.nanoTime();
        long cancelAt = start + TimeUnit.SECONDS.toNanos(1);
        NcclAbortedException e = assertThrows(NcclAbortedException.class,
                () -> NcclCommInit.nonBlocking(NcclUniqueId.generate(), 2, 0, Duration.ofMinutes(10),
                        () -> System.nanoTime() > cancelAt));
        long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertTrue(millis >= 1_000 && millis < 10_000, "ended " + millis + " ms after the start; cancelled at 1 s");
        assertEquals(0, e.rank());
        assertTrue(e.getMessage().contains("cancelled"), e.getMessage());
        worldOfOneStillWorks();
    }

    private static void worldOfOneStillWorks() {
        try (NcclCommunicator comm = NcclCommInit.nonBlocking(NcclUniqueId.generate(), 1, 0, Duration.ofSeconds(60), () -> false);
             CudaStream stream = CudaStream.create();
             DeviceBuffer buffer = DeviceBuffer.allocate(1024)) {
            buffer.fill(0);
            comm.allReduce(buffer, buffer, 256, NcclDataType.FLOAT32, NcclReduction.SUM, stream);
            stream.synchronize();
            assertTrue(comm.asyncError().isEmpty());
        }
    }
}
