package dev.ar4j.internal.nccl;

import dev.ar4j.nccl.NcclDataType;

import dev.ar4j.nccl.NcclException;
import dev.ar4j.nccl.NcclTimeoutException;
import dev.ar4j.nccl.NcclVersion;
import dev.ar4j.nccl.NcclGroup;
import dev.ar4j.nccl.Nccl;
import dev.ar4j.DType;
import dev.ar4j.internal.platform.TestLibraries;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** NCCL on a CPU machine: version, unique ids, and the errors it reports without a GPU. */
class NcclTest {

    @BeforeEach
    void loadNccl() {
        TestLibraries.requireNccl();
    }

    @Test
    void reportsVersion230() {
        int version = Nccl.version();
        assertTrue(version >= 23000 && version < 23100, "expected NCCL 2.30.x, got " + version);
        assertTrue(Nccl.versionString().startsWith("2.30."), Nccl.versionString());
        assertEquals(Nccl.formatVersion(version), Nccl.versionString());
    }

    @Test
    void formatsBothVersionEncodings() {
        assertEquals("2.30.7", Nccl.formatVersion(23007));
        assertEquals("2.28.9", Nccl.formatVersion(22809));
        assertEquals("2.7.8", Nccl.formatVersion(2708));
        assertThrows(IllegalArgumentException.class, () -> Nccl.formatVersion(-1));
    }

    @Test
    void uniqueIdIs128BytesAndRoundTrips() {
        NcclUniqueId id = NcclUniqueId.generate();
        byte[] bytes = id.toBytes();
        assertEquals(128, bytes.length);
        assertFalse(Arrays.equals(bytes, new byte[128]), "an id is not all zeros");
        NcclUniqueId copy = NcclUniqueId.fromBytes(bytes);
        assertEquals(id, copy);
        assertEquals(id.hashCode(), copy.hashCode());
        assertArrayEquals(bytes, copy.toBytes());

        bytes[0] ^= 1;
        assertEquals(id, copy, "the id copied its bytes");
        assertNotEquals(id, NcclUniqueId.generate(), "each generated id is new");
    }

    @Test
    void uniqueIdLengthIsChecked() {
        for (int length : new int[]{0, 127, 129}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> NcclUniqueId.fromBytes(new byte[length]));
            assertEquals("an NCCL unique id is exactly 128 bytes (NCCL_UNIQUE_ID_BYTES); got " + length, e.getMessage());
        }
    }

    @Test
    void rankArgumentsAreCheckedBeforeNccl() {
        NcclUniqueId id = NcclUniqueId.fromBytes(new byte[128]);
        assertThrows(IllegalArgumentException.class, () -> NcclCommInit.blocking(id, 2, 2));
        assertThrows(IllegalArgumentException.class, () -> NcclCommInit.blocking(id, 2, -1));
        assertThrows(IllegalArgumentException.class, () -> NcclCommInit.blocking(id, 0, 0));
    }

    @Test
    void initWithoutGpuRaisesNcclExceptionWithNcclsOwnMessages() {
        Assumptions.assumeFalse(TestLibraries.cudaDriverInstalled(), "a driver is installed; this checks the driver-less error");
        NcclException e = assertThrows(NcclException.class,
                () -> NcclCommInit.blocking(NcclUniqueId.generate(), 2, 0));
        assertEquals(1, e.code());
        assertEquals("ncclUnhandledCudaError", e.resultName());
        assertTrue(e.errorString().startsWith("unhandled cuda error"), e.errorString());
        assertTrue(e.lastError().contains("CUDA driver version is insufficient"), e.lastError());
        assertEquals("ncclCommInitRank(rank 0 of 2)", e.call());
        assertTrue(e.getMessage().contains("; NCCL's last error: "), e.getMessage());

        NcclException alloc = assertThrows(NcclException.class, () -> Nccl.memAlloc(1 << 20));
        assertEquals("ncclUnhandledCudaError", alloc.resultName());
        assertEquals("ncclMemAlloc(1048576 bytes)", alloc.call());
    }

    @Test
    void nonBlockingInitArgumentsAreCheckedBeforeNccl() {
        NcclUniqueId id = NcclUniqueId.fromBytes(new byte[128]);
        assertThrows(IllegalArgumentException.class, () -> NcclCommInit.nonBlocking(id, 2, 2, Duration.ofSeconds(1), () -> false));
        IllegalArgumentException zero = assertThrows(IllegalArgumentException.class,
                () -> NcclCommInit.nonBlocking(id, 2, 0, Duration.ZERO, () -> false));
        assertEquals("the NCCL init timeout must be positive, got 0 ms", zero.getMessage());
        assertThrows(IllegalArgumentException.class, () -> NcclCommInit.nonBlocking(id, 2, 0, Duration.ofMillis(-5), () -> false));
        assertThrows(NullPointerException.class, () -> NcclCommInit.nonBlocking(id, 2, 0, null, () -> false));
        assertThrows(NullPointerException.class, () -> NcclCommInit.nonBlocking(id, 2, 0, Duration.ofSeconds(1), null));
    }

    @Test
    void nonBlockingInitWithoutGpuFailsFastWithNcclsErrorNotATimeout() {
        Assumptions.assumeFalse(TestLibraries.cudaDriverInstalled(), "a driver is installed; this checks the driver-less error");
        long start = System.nanoTime();
        NcclException e = assertThrows(NcclException.class,
                () -> NcclCommInit.nonBlocking(NcclUniqueId.generate(), 2, 0, Duration.ofSeconds(60), () -> false));
        long millis = (System.nanoTime() - start) / 1_000_000;
        assertEquals(NcclException.class, e.getClass(), "NCCL's own error, not a timeout or abort: " + e);
        assertTrue(millis < 20_000, "failed fast, took " + millis + " ms");
        assertEquals("ncclUnhandledCudaError", e.resultName());
        assertTrue(e.call().startsWith("ncclCommInitRankConfig(rank 0 of 2, non-blocking)"), e.call());
        assertTrue(e.getMessage().contains("A CUDA call inside NCCL failed"), e.getMessage());
    }

    @Test
    void aGroupStartsAndEndsOnTheCallingThreadOnly() throws Exception {
        GroupScope outer = GroupScope.start();
        try {
            assertEquals(outer, GroupScope.current());
            try (GroupScope inner = GroupScope.start()) {
                assertEquals(inner, GroupScope.current());
                IllegalStateException early = assertThrows(IllegalStateException.class, outer::close);
                assertTrue(early.getMessage().contains("inner NcclGroup"), early.getMessage());
            }
            assertEquals(outer, GroupScope.current());
            AtomicReference<Throwable> fromOther = new AtomicReference<>();
            Thread other = new Thread(() -> {
                try {
                    outer.close();
                } catch (Throwable t) {
                    fromOther.set(t);
                }
            });
            other.start();
            other.join(10_000);
            IllegalStateException e = assertInstanceOf(IllegalStateException.class, fromOther.get());
            assertTrue(e.getMessage().contains("closed on the thread that started it"), e.getMessage());
            assertTrue(outer.isOpen());
        } finally {
            outer.close();
        }
        assertFalse(outer.isOpen());
        assertEquals(null, GroupScope.current());
        outer.close();
    }

    @Test
    void aGroupsEndWaitsOutEveryCommunicatorItUsedAndTimesOutBounded() {
        // Real ncclGroupStart/End (nothing enqueued in NCCL), scripted communicators joined to the group.
        FakeNcclCalls settling = new FakeNcclCalls();
        settling.state = () -> NcclErrors.SUCCESS;
        NcclCommunicator a = NcclCommInit.nonBlocking(settling, new NcclSupport(new NcclVersion(2, 30, 7)),
                NcclUniqueId.fromBytes(new byte[128]), 2, 0, Duration.ofSeconds(10), () -> false);
        FakeNcclCalls stuck = new FakeNcclCalls();
        stuck.state = () -> NcclErrors.SUCCESS;
        NcclCommunicator b = NcclCommInit.nonBlocking(stuck, new NcclSupport(new NcclVersion(2, 30, 7)),
                NcclUniqueId.fromBytes(new byte[128]), 2, 1, Duration.ofMillis(200), () -> false);
        settling.polls.set(0);
        settling.state = FakeNcclCalls.inProgressThen(25, NcclErrors.SUCCESS);
        stuck.state = () -> NcclErrors.IN_PROGRESS;
        GroupScope group = GroupScope.start();
        for (NcclCommunicator comm : new NcclCommunicator[]{a, b, a}) {
            comm.protocol().enter("ncclSend");
            comm.protocol().exit();
        }
        assertEquals(java.util.List.of(a.protocol(), b.protocol()), group.members(), "each communicator joined once, in order");
        long start = System.nanoTime();
        NcclTimeoutException e = assertThrows(NcclTimeoutException.class, group::close);
        assertTrue(System.nanoTime() - start < 5_000_000_000L, "bounded by b's 200 ms timeout");
        assertEquals(1, e.rank());
        assertTrue(e.getMessage().startsWith("ncclGroupEnd on rank 1 of 2: NCCL still reported ncclInProgress"),
                e.getMessage());
        assertEquals(26, settling.polls.get(), "a's state was polled until it settled");
        assertTrue(a.isOpen() && !a.isFailed());
        assertFalse(b.isOpen(), "the communicator that timed out was aborted");
        assertEquals(1, stuck.count("abort"));
        assertEquals(null, GroupScope.current());
    }

    @Test
    void dataTypesAreNcclsCodes() {
        assertEquals(7, NcclDataType.of(DType.FLOAT32).code());
        assertEquals(6, NcclDataType.of(DType.FLOAT16).code());
        assertEquals(9, NcclDataType.of(DType.BFLOAT16).code());
    }
}
