package dev.ar4j.kernels;

import dev.ar4j.DType;
import dev.ar4j.bindings.customar.custom_all_reduce_h;
import dev.ar4j.internal.NativeLibraries;
import dev.ar4j.internal.TestLibraries;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
            "AR4J_ERROR_CUDA", "AR4J_ERROR_PEER_TIMEOUT", "AR4J_ERROR_LAUNCH_CONFIG", "AR4J_ERROR_INVALID_ARGUMENT");

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
        assertEquals(custom_all_reduce_h.AR4J_ERROR_INVALID_ARGUMENT(), STATUS_NAMES.size() - 1,
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
        CustomArException e = assertThrows(CustomArException.class, () -> CustomAllReduceKernels.check(
                custom_all_reduce_h.ar4j_set_launch_config(MemorySegment.NULL, 36, 512), "ar4j_set_launch_config"));
        assertEquals(1, e.status());
        assertEquals("AR4J_ERROR_NULL_POINTER", e.statusName());
        assertEquals("ar4j_set_launch_config", e.call());
        assertTrue(e.getMessage().startsWith("ar4j_set_launch_config failed: AR4J_ERROR_NULL_POINTER (1): "), e.getMessage());
    }

    @Test
    void worldSizeThreeIsRejected() {
        CustomArException e = assertThrows(CustomArException.class,
                () -> CustomAllReduceKernels.createContext(signals(3), 0, 3, MAX_BYTES, MAX_BUFFERS, DEADLINE_NS));
        assertEquals("AR4J_ERROR_WORLD_SIZE", e.statusName());
        assertEquals(2, e.status());
        assertTrue(e.call().startsWith("ar4j_context_create(rank 0, world size 3"), e.call());
    }

    @Test
    void rankOutsideTheWorldIsRejected() {
        CustomArException e = assertThrows(CustomArException.class,
                () -> CustomAllReduceKernels.createContext(signals(4), 5, 4, MAX_BYTES, MAX_BUFFERS, DEADLINE_NS));
        assertEquals("AR4J_ERROR_RANK", e.statusName());
        assertEquals("AR4J_ERROR_RANK", assertThrows(CustomArException.class,
                () -> CustomAllReduceKernels.createContext(signals(4), -1, 4, MAX_BYTES, MAX_BUFFERS, DEADLINE_NS)).statusName());
    }

    @Test
    void zeroDeadlineIsRejected() {
        CustomArException e = assertThrows(CustomArException.class,
                () -> CustomAllReduceKernels.createContext(signals(2), 0, 2, MAX_BYTES, MAX_BUFFERS, 0));
        assertEquals("AR4J_ERROR_DEADLINE", e.statusName());
    }

    @Test
    void nullOrMisalignedSignalsAreRejected() {
        long[] withNull = signals(2);
        withNull[1] = 0;
        assertEquals("AR4J_ERROR_NULL_POINTER", assertThrows(CustomArException.class,
                () -> CustomAllReduceKernels.createContext(withNull, 0, 2, MAX_BYTES, MAX_BUFFERS, DEADLINE_NS)).statusName());
        long[] misaligned = signals(2);
        misaligned[0] += 8;
        assertEquals("AR4J_ERROR_MISALIGNED", assertThrows(CustomArException.class,
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
        CustomArException e = assertThrows(CustomArException.class,
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
        assertEquals(3, CustomAllReduceKernels.ALGO_ONE_SHOT_PUSH);
        assertEquals(8, CustomAllReduceKernels.MAX_RANKS);
        assertEquals(2, DType.BFLOAT16.kernelCode());
    }
}
