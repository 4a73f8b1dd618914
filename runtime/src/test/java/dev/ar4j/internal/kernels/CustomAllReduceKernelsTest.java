package dev.ar4j.internal.kernels;

import dev.ar4j.CustomAllReduceException;
import dev.ar4j.DType;
import dev.ar4j.bindings.customar.custom_all_reduce_h;
import dev.ar4j.internal.platform.NativeLibraries;
import dev.ar4j.internal.platform.TestLibraries;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import dev.ar4j.bindings.customar.ar4j_failure_info;
import dev.ar4j.bindings.customar.ar4j_timeout_info;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * libar4j_custom_ar loaded from the ar4j-cuda jar, and its host-side argument validation, which
 * runs before any CUDA call and so needs no GPU.
 */
class CustomAllReduceKernelsTest {
    private static final List<String> STATUS_NAMES = List.of(
            "AR4J_SUCCESS", "AR4J_ERROR_NULL_POINTER", "AR4J_ERROR_WORLD_SIZE", "AR4J_ERROR_RANK",
            "AR4J_ERROR_SIZE_NOT_MULTIPLE_OF_16", "AR4J_ERROR_MISALIGNED", "AR4J_ERROR_EMPTY", "AR4J_ERROR_TOO_LARGE",
            "AR4J_ERROR_NOT_REGISTERED", "AR4J_ERROR_DTYPE", "AR4J_ERROR_ALGORITHM", "AR4J_ERROR_DEADLINE",
            "AR4J_ERROR_CAPACITY", "AR4J_ERROR_ALREADY_REGISTERED", "AR4J_ERROR_GRAPH_COUNT", "AR4J_ERROR_WRONG_DEVICE",
            "AR4J_ERROR_CUDA", "AR4J_ERROR_PEER_TIMEOUT", "AR4J_ERROR_LAUNCH_CONFIG", "AR4J_ERROR_INVALID_ARGUMENT",
            "AR4J_ERROR_GEOMETRY_MISMATCH", "AR4J_ERROR_POISONED", "AR4J_ERROR_CONCURRENT_USE",
            "AR4J_ERROR_ALREADY_LAUNCHED", "AR4J_ERROR_NOT_FUSED", "AR4J_ERROR_HIDDEN_TOO_LARGE",
            "AR4J_ERROR_ROW_NOT_MULTIPLE_OF_16", "AR4J_ERROR_SLOT_IN_USE");

    private static final long MAX_BYTES = 8 << 20;
    private static final int MAX_BUFFERS = 16;
    private static final long DEADLINE_NS = 5_000_000_000L;

    /** Made-up, 16-byte aligned signal addresses: validation rejects the call before anything touches them. */
    private static long[] signals(int n) {
        long[] pointers = new long[n];
        for (int r = 0; r < n; r++) {
            pointers[r] = 0x7f00_0000_0000L + (long) r * 0x10_0000;
        }
        return pointers;
    }

    @BeforeEach
    void loadLibrary() {
        TestLibraries.requireCustomAllReduce();
    }

    @Test
    void loadsFromTheJarUnlessGivenAPath() {
        NativeLibraries.LoadedLibrary loaded = NativeLibraries.customAllReduce();
        assertTrue(loaded.path().getFileName().toString().equals("libar4j_custom_ar.so"), loaded.toString());
        if (System.getProperty("ar4j.customar.path") == null && System.getenv("AR4J_CUSTOMAR_PATH") == null) {
            assertTrue(loaded.origin().startsWith("ar4j-cuda jar"), loaded.origin());
            assertTrue(loaded.path().getParent().getFileName().toString().matches("[0-9a-f]{64}"), loaded.toString()); // the cache's <sha256>/
        }
        assertTrue(CustomAllReduceKernels.abiVersion() > 0);
    }

    @Test
    void everyStatusHasItsName() {
        for (int status = 0; status < STATUS_NAMES.size(); status++) {
            assertEquals(STATUS_NAMES.get(status), CustomAllReduceKernels.statusName(status));
            assertFalse(CustomAllReduceKernels.statusMessage(status).isBlank(), "message of " + status);
        }
        assertEquals("AR4J_UNKNOWN_STATUS", CustomAllReduceKernels.statusName(STATUS_NAMES.size()));
        assertEquals("AR4J_UNKNOWN_STATUS", CustomAllReduceKernels.statusName(-1));
        assertEquals(custom_all_reduce_h.AR4J_ERROR_SLOT_IN_USE(), STATUS_NAMES.size() - 1,
                "the list above covers every status of the header");
    }

    @Test
    void nullContextIsRejected() {
        assertEquals(custom_all_reduce_h.AR4J_ERROR_NULL_POINTER(),
                custom_all_reduce_h.ar4j_set_launch_config(MemorySegment.NULL, 36, 512));
        assertEquals(custom_all_reduce_h.AR4J_ERROR_NULL_POINTER(),
                custom_all_reduce_h.ar4j_registered_count(MemorySegment.NULL, MemorySegment.NULL));
        assertEquals(custom_all_reduce_h.AR4J_SUCCESS(), custom_all_reduce_h.ar4j_context_destroy(MemorySegment.NULL),
                "destroying NULL is accepted and ignored");
        CustomAllReduceException e = assertThrows(CustomAllReduceException.class, () -> CustomAllReduceKernels.check(
                custom_all_reduce_h.ar4j_set_launch_config(MemorySegment.NULL, 36, 512), "ar4j_set_launch_config"));
        assertEquals(1, e.status());
        assertEquals("AR4J_ERROR_NULL_POINTER", e.statusName());
        assertEquals("ar4j_set_launch_config", e.call());
        assertTrue(e.getMessage().startsWith("ar4j_set_launch_config failed: AR4J_ERROR_NULL_POINTER (1): "), e.getMessage());
    }

    @Test
    void worldSizeThreeIsRejected() {
        CustomAllReduceException e = assertThrows(CustomAllReduceException.class,
                () -> CustomAllReduceKernels.createContext(signals(3), 0, 3, MAX_BYTES, MAX_BUFFERS, DEADLINE_NS));
        assertEquals("AR4J_ERROR_WORLD_SIZE", e.statusName());
        assertEquals(2, e.status());
        assertTrue(e.call().startsWith("ar4j_context_create(rank 0, world size 3"), e.call());
    }

    @Test
    void rankOutsideTheWorldIsRejected() {
        CustomAllReduceException e = assertThrows(CustomAllReduceException.class,
                () -> CustomAllReduceKernels.createContext(signals(4), 5, 4, MAX_BYTES, MAX_BUFFERS, DEADLINE_NS));
        assertEquals("AR4J_ERROR_RANK", e.statusName());
        assertEquals("AR4J_ERROR_RANK", assertThrows(CustomAllReduceException.class,
                () -> CustomAllReduceKernels.createContext(signals(4), -1, 4, MAX_BYTES, MAX_BUFFERS, DEADLINE_NS)).statusName());
    }

    @Test
    void zeroDeadlineIsRejected() {
        CustomAllReduceException e = assertThrows(CustomAllReduceException.class,
                () -> CustomAllReduceKernels.createContext(signals(2), 0, 2, MAX_BYTES, MAX_BUFFERS, 0));
        assertEquals("AR4J_ERROR_DEADLINE", e.statusName());
    }

    @Test
    void nullOrMisalignedSignalsAreRejected() {
        long[] withNull = signals(2);
        withNull[1] = 0;
        assertEquals("AR4J_ERROR_NULL_POINTER", assertThrows(CustomAllReduceException.class,
                () -> CustomAllReduceKernels.createContext(withNull, 0, 2, MAX_BYTES, MAX_BUFFERS, DEADLINE_NS)).statusName());
        long[] misaligned = signals(2);
        misaligned[0] += 8;
        assertEquals("AR4J_ERROR_MISALIGNED", assertThrows(CustomAllReduceException.class,
                () -> CustomAllReduceKernels.createContext(misaligned, 0, 2, MAX_BYTES, MAX_BUFFERS, DEADLINE_NS)).statusName());
    }

    @Test
    void signalCountMustMatchTheWorldSizeInJava() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> CustomAllReduceKernels.createContext(signals(2), 0, 4, MAX_BYTES, MAX_BUFFERS, DEADLINE_NS));
        assertTrue(e.getMessage().contains("worldSize is 4 but 2 signal pointers"), e.getMessage());
    }

    @Test
    void validArgumentsWithoutDriverFailAtTheFirstCudaCallAndSayWhich() {
        Assumptions.assumeFalse(TestLibraries.cudaDriverInstalled(), "a driver is installed; this checks the driver-less error");
        CustomAllReduceException e = assertThrows(CustomAllReduceException.class,
                () -> CustomAllReduceKernels.createContext(signals(2), 0, 2, MAX_BYTES, MAX_BUFFERS, DEADLINE_NS));
        assertEquals("AR4J_ERROR_CUDA", e.statusName());
        assertTrue(e.getMessage().contains("the CUDA error was cudaErrorInsufficientDriver (35)"), e.getMessage());
    }

    @Test
    void signalSizeGrowsWithTheLargestCall() {
        long small = CustomAllReduceKernels.signalSize(1 << 20);
        long large = CustomAllReduceKernels.signalSize(8 << 20);
        assertTrue(small > 0 && large >= small, small + " then " + large);
        assertThrows(IllegalArgumentException.class, () -> CustomAllReduceKernels.signalSize(-1));
    }

    @Test
    void constantsMatchTheHeader() {
        assertEquals(1, CustomAllReduceKernels.ALGO_ONE_STAGE);
        assertEquals(2, CustomAllReduceKernels.ALGO_TWO_STAGE);
        assertEquals(3, CustomAllReduceKernels.ALGO_PUSH);
        assertEquals(8, CustomAllReduceKernels.MAX_RANKS);
        assertEquals(2, DType.BFLOAT16.kernelCode());
    }

    @Test
    void theLibraryHasTheAbiTheseBindingsWereMadeFor() {
        assertEquals(CustomAllReduceKernels.EXPECTED_ABI_VERSION, CustomAllReduceKernels.abiVersion());
    }

    @Test
    void javaStatusNamesEqualTheLibrarys() {
        for (int status = -1; status <= STATUS_NAMES.size(); status++) {
            assertEquals(CustomAllReduceKernels.statusName(status), CustomAllReduceException.nameOf(status), "status " + status);
        }
    }

    @Test
    void newStatusesAndReasonsMatchTheHeader() {
        assertEquals(20, CustomAllReduceKernels.STATUS_GEOMETRY_MISMATCH);
        assertEquals(21, CustomAllReduceKernels.STATUS_POISONED);
        assertEquals(22, CustomAllReduceKernels.STATUS_CONCURRENT_USE);
        assertEquals(23, CustomAllReduceKernels.STATUS_ALREADY_LAUNCHED);
        assertEquals(17, CustomAllReduceKernels.STATUS_PEER_TIMEOUT);
        int[] reasons = {CustomAllReduceKernels.POISON_TIMEOUT, CustomAllReduceKernels.POISON_ABORT,
                CustomAllReduceKernels.POISON_PEER_LOST, CustomAllReduceKernels.POISON_CONCURRENT_USE,
                CustomAllReduceKernels.POISON_GEOMETRY, CustomAllReduceKernels.POISON_UNREGISTERED};
        List<String> names = List.of("TIMEOUT", "ABORT", "PEER_LOST", "CONCURRENT_USE", "GEOMETRY", "UNREGISTERED");
        for (int i = 0; i < reasons.length; i++) {
            assertEquals(i + 1, reasons[i]);
            assertEquals(names.get(i), CustomAllReduceKernels.poisonReasonName(reasons[i]));
        }
        assertEquals("NONE", CustomAllReduceKernels.poisonReasonName(0));
        assertEquals("REASON_77", CustomAllReduceKernels.poisonReasonName(77));
    }

    @Test
    void exceptionsSayWhetherTheGroupFailed() {
        CustomAllReduceException poisoned = CustomAllReduceKernels.exception(21, "ar4j_all_reduce", null);
        assertTrue(poisoned.isPoisoned() && poisoned.groupFailed());
        assertEquals("AR4J_ERROR_POISONED", poisoned.statusName());
        CustomAllReduceException geometry = CustomAllReduceKernels.exception(20, "ar4j_all_reduce", null);
        assertTrue(geometry.isGeometryMismatch() && geometry.groupFailed());
        CustomAllReduceException timeout = CustomAllReduceKernels.exception(17, "ar4j_all_reduce", null);
        assertTrue(timeout.isPeerTimeout() && timeout.groupFailed());
        CustomAllReduceException concurrent = CustomAllReduceKernels.exception(22, "ar4j_all_reduce", null);
        assertTrue(concurrent.isConcurrentUse());
        assertFalse(concurrent.groupFailed(), "a refused second thread leaves the group intact");
        assertFalse(CustomAllReduceKernels.exception(4, "ar4j_all_reduce", null).groupFailed());
    }

    @Test
    void newEntryPointsRejectANullContext() {
        int nullPointer = custom_all_reduce_h.AR4J_ERROR_NULL_POINTER();
        assertEquals(nullPointer, custom_all_reduce_h.ar4j_poison(MemorySegment.NULL, 2));
        assertEquals(nullPointer, custom_all_reduce_h.ar4j_read_failure(MemorySegment.NULL, MemorySegment.NULL));
        assertEquals(nullPointer, custom_all_reduce_h.ar4j_check_geometry(MemorySegment.NULL));
        assertEquals(nullPointer, custom_all_reduce_h.ar4j_set_pdl(MemorySegment.NULL, 1));
        assertEquals(nullPointer, custom_all_reduce_h.ar4j_pdl_active(MemorySegment.NULL, MemorySegment.NULL));
        assertEquals(nullPointer, custom_all_reduce_h.ar4j_debug_seed_push_generation(MemorySegment.NULL, 1L << 32));
    }

    @Test
    void poisonReasonIsValidatedBeforeTheLibrary() {
        CustomAllReduceContext detached = new CustomAllReduceContext(MemorySegment.NULL, 0, 2);
        IllegalArgumentException low = assertThrows(IllegalArgumentException.class, () -> detached.poison(0));
        assertTrue(low.getMessage().contains("[1, 255]"), low.getMessage());
        assertThrows(IllegalArgumentException.class, () -> detached.poison(256));
        CustomAllReduceException e = assertThrows(CustomAllReduceException.class,
                () -> detached.poison(CustomAllReduceKernels.POISON_ABORT));
        assertEquals("AR4J_ERROR_NULL_POINTER", e.statusName());
        assertEquals("ar4j_poison(ABORT)", e.call());
        assertEquals("AR4J_ERROR_NULL_POINTER",
                assertThrows(CustomAllReduceException.class, detached::readFailure).statusName());
        assertEquals("AR4J_ERROR_NULL_POINTER",
                assertThrows(CustomAllReduceException.class, detached::checkGeometry).statusName());
        assertEquals("AR4J_ERROR_NULL_POINTER",
                assertThrows(CustomAllReduceException.class, () -> detached.setPdl(true)).statusName());
    }

    @Test
    void aFailureRecordIsDecoded() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment info = ar4j_failure_info.allocate(arena);
            ar4j_failure_info.poisoned(info, 1);
            ar4j_failure_info.origin_rank(info, 0);
            ar4j_failure_info.reason(info, CustomAllReduceKernels.POISON_TIMEOUT);
            ar4j_failure_info.peer(info, 1);
            ar4j_failure_info.block(info, 3);
            ar4j_failure_info.geometry_mismatch(info, 1);
            ar4j_failure_info.geometry_peer(info, 1);
            ar4j_failure_info.local_max_blocks(info, 132);
            ar4j_failure_info.local_threads(info, 512);
            ar4j_failure_info.local_push_blocks(info, 32);
            ar4j_failure_info.local_push_threads(info, 256);
            ar4j_failure_info.peer_max_blocks(info, 114);
            ar4j_failure_info.peer_threads(info, 512);
            ar4j_failure_info.peer_push_blocks(info, 32);
            ar4j_failure_info.peer_push_threads(info, 256);
            MemorySegment t = ar4j_failure_info.timeout(info);
            ar4j_timeout_info.timed_out(t, 1);
            ar4j_timeout_info.peer(t, 1);
            ar4j_timeout_info.block(t, 3);
            ar4j_timeout_info.barrier(t, 0);
            ar4j_timeout_info.flag(t, -1);
            ar4j_failure_info.poison_word(info, 0x8001_01ff_0000_0003L);
            KernelFailure f = KernelFailure.from(info);
            assertTrue(f.poisoned() && f.failed() && f.geometryMismatch());
            assertEquals(0, f.originRank());
            assertEquals(1, f.peer());
            assertEquals(3, f.block());
            assertEquals(new LaunchGeometry(132, 512, 32, 256), f.localGeometry());
            assertEquals(new LaunchGeometry(114, 512, 32, 256), f.peerGeometry());
            assertEquals(new KernelTimeout(true, 1, 3, 0, 0xffff_ffffL), f.timeout());
            assertEquals(0x8001_01ff_0000_0003L, f.poisonWord());
            assertEquals("poisoned by rank 0 (TIMEOUT: its block 3 gave up waiting for rank 1); launch geometry "
                    + "132 x 512 (push 32 x 256) here, 114 x 512 (push 32 x 256) on rank 1; this rank's block 3 timed "
                    + "out at barrier 0 waiting for rank 1", f.describe());

            MemorySegment healthy = ar4j_failure_info.allocate(arena);
            ar4j_failure_info.origin_rank(healthy, -1);
            KernelFailure h = KernelFailure.from(healthy);
            assertFalse(h.failed());
            assertNull(h.peerGeometry());
            assertEquals("healthy", h.describe());
        }
    }
}
