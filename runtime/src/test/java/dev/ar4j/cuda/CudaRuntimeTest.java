package dev.ar4j.cuda;

import dev.ar4j.internal.cuda.CudaErrors;
import dev.ar4j.internal.cuda.IpcMemHandle;
import dev.ar4j.internal.cuda.AllocationRange;

import dev.ar4j.NativeLibraryException;
import dev.ar4j.internal.platform.TestLibraries;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The CUDA runtime on a machine without a GPU driver: versions, error mapping, the documented failures. */
class CudaRuntimeTest {

    private static void assumeNoDriver() {
        Assumptions.assumeFalse(TestLibraries.cudaDriverInstalled(),
                "an NVIDIA driver is installed here; these tests check the driver-less behaviour (the GPU ITs cover the rest)");
    }

    @Test
    void versionsAreReportedAndFormatted() {
        assertTrue(Cuda.runtimeVersion() >= 12000);
        assertTrue(Cuda.driverVersion() >= 0);
        assertEquals("13.0", Cuda.formatVersion(13000));
        assertEquals("12.8", Cuda.formatVersion(12080));
        assertThrows(IllegalArgumentException.class, () -> Cuda.formatVersion(-1));
    }

    @Test
    void deviceDiscoveryWithoutDriverSaysTheDriverIsMissing() {
        assumeNoDriver();
        CudaDriverMissingException e = assertThrows(CudaDriverMissingException.class, Cuda::deviceCount);
        assertEquals("cudaGetDeviceCount", e.call());
        assertEquals(35, e.code());
        assertEquals("cudaErrorInsufficientDriver", e.errorName());
        assertEquals("CUDA driver version is insufficient for CUDA runtime version", e.errorDescription());
        assertTrue(e.getMessage().startsWith("cudaGetDeviceCount failed: cudaErrorInsufficientDriver (35): "), e.getMessage());
        assertTrue(e.getMessage().contains("No NVIDIA driver was found"), e.getMessage());
    }

    @Test
    void allocationWithoutDriverRaisesTheSameDocumentedException() {
        assumeNoDriver();
        assertThrows(CudaDriverMissingException.class, () -> DeviceBuffer.allocate(1024));
        assertThrows(CudaDriverMissingException.class, () -> PinnedHostBuffer.allocate(1024));
        assertThrows(CudaDriverMissingException.class, () -> IpcMemHandle.ofAllocation(0x10000));
    }

    @Test
    void driverApiWithoutDriverExplainsWhereItLooked() {
        assumeNoDriver();
        NativeLibraryException e = assertThrows(NativeLibraryException.class, () -> AllocationRange.of(0x10000));
        assertTrue(e.getMessage().contains("Could not load the CUDA driver (libcuda)"), e.getMessage());
        assertTrue(e.getMessage().contains("AR4J_CUDA_PATH"), e.getMessage());
    }

    @Test
    void errorCodesMapToNamedExceptions() {
        assertDoesNotThrow(() -> CudaErrors.check(0, "cudaNothing"));

        CudaException oom = CudaErrors.exception(2, "cudaMalloc(1 GiB)");
        assertEquals(CudaException.class, oom.getClass());
        assertEquals("cudaErrorMemoryAllocation", oom.errorName());
        assertEquals("out of memory", oom.errorDescription());
        assertEquals("cudaMalloc(1 GiB) failed: cudaErrorMemoryAllocation (2): out of memory", oom.getMessage());

        CudaException noDevice = CudaErrors.exception(100, "cudaSetDevice(0)");
        assertInstanceOf(CudaNoDeviceException.class, noDevice);
        assertEquals("cudaErrorNoDevice", noDevice.errorName());
        assertTrue(noDevice.getMessage().contains("CUDA_VISIBLE_DEVICES"), noDevice.getMessage());

        assertInstanceOf(CudaDriverMissingException.class, CudaErrors.exception(34, "cudaGetDeviceCount"));
        assertEquals("cudaErrorInvalidValue", assertThrows(CudaException.class,
                () -> CudaErrors.check(1, "cudaMemcpy")).errorName());
        assertEquals("cudaErrorUnknown", CudaErrors.name(999));
    }

    @Test
    void enumsCarryTheHeaderValues() {
        assertEquals(3, P2PAttribute.NATIVE_ATOMIC_SUPPORTED.code());
        assertEquals(75, DeviceAttribute.COMPUTE_CAPABILITY_MAJOR.code());
        assertEquals(MemoryType.DEVICE, MemoryType.ofCode(2));
        assertEquals(CaptureStatus.INVALIDATED, CaptureStatus.ofCode(2));
        assertThrows(IllegalArgumentException.class, () -> MemoryType.ofCode(7));
        assertEquals(0, CaptureMode.GLOBAL.code());
        assertEquals(2, CaptureMode.RELAXED.code());
    }
}
