package dev.ar4j.internal.cuda;

import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.cuda.CudaException;
import dev.ar4j.cuda.CudaDriverMissingException;


import dev.ar4j.internal.platform.TestLibraries;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link IpcMemHandle} as a value, the exported-buffer form, and the mapping's close-once rule. */
class IpcMemHandleTest {

    private static byte[] pattern(int seed) {
        byte[] bytes = new byte[IpcMemHandle.BYTES];
        for (int i = 0; i < bytes.length; i++) {
            bytes[i] = (byte) (seed * 31 + i);
        }
        return bytes;
    }

    @Test
    void handleIsExactly64Bytes() {
        assertEquals(64, IpcMemHandle.BYTES);
        for (int length : new int[]{0, 63, 65, 128}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> IpcMemHandle.fromBytes(new byte[length]));
            assertEquals("a CUDA IPC memory handle is exactly 64 bytes (CUDA_IPC_HANDLE_SIZE); got " + length,
                    e.getMessage());
        }
        assertThrows(NullPointerException.class, () -> IpcMemHandle.fromBytes(null));
    }

    @Test
    void bytesRoundTripAndAreCopiedInAndOut() {
        byte[] bytes = pattern(1);
        IpcMemHandle handle = IpcMemHandle.fromBytes(bytes);
        assertArrayEquals(bytes, handle.toBytes());

        bytes[0] ^= 1;
        assertFalse(Arrays.equals(bytes, handle.toBytes()), "changing the source array does not change the handle");
        byte[] out = handle.toBytes();
        out[5] ^= 1;
        assertArrayEquals(pattern(1), handle.toBytes(), "changing a returned array does not change the handle");
    }

    @Test
    void equalBytesMakeEqualHandles() {
        IpcMemHandle a = IpcMemHandle.fromBytes(pattern(1));
        IpcMemHandle b = IpcMemHandle.fromBytes(pattern(1));
        byte[] lastDiffers = pattern(1);
        lastDiffers[63] ^= 1;
        IpcMemHandle c = IpcMemHandle.fromBytes(lastDiffers);
        assertEquals(a, b);
        assertEquals(a.hashCode(), b.hashCode());
        assertNotEquals(a, c);
        assertNotEquals(a, null);
        assertTrue(a.toString().startsWith("IpcMemHandle["), a.toString());
    }

    @Test
    void exportedBufferRoundTripsThroughItsFixedForm() {
        IpcBufferExport export = new IpcBufferExport(IpcMemHandle.fromBytes(pattern(2)), 4096, 1 << 20);
        byte[] bytes = export.toBytes();
        assertEquals(80, bytes.length);
        assertEquals(export, IpcBufferExport.fromBytes(bytes));
        assertThrows(IllegalArgumentException.class, () -> IpcBufferExport.fromBytes(Arrays.copyOf(bytes, 79)));
        assertThrows(IllegalArgumentException.class, () -> new IpcBufferExport(export.handle(), -1, 16));
        assertThrows(NullPointerException.class, () -> new IpcBufferExport(null, 0, 16));
    }

    @Test
    void mappingIsUnmappedOnceAndEndsItsViews() {
        Assumptions.assumeFalse(TestLibraries.cudaDriverInstalled(),
                "with a driver, cudaIpcCloseMemHandle on a made-up address would fail differently; the GPU IT covers it");
        IpcMapping mapping = new IpcMapping(IpcMemHandle.fromBytes(pattern(3)), 0x7f00_0000_0000L, 1);
        DeviceBuffer view = mapping.view(256, 1024);
        assertEquals(0x7f00_0000_0100L, view.address());
        assertEquals(1, view.device());
        assertFalse(view.isOwned());
        view.close();
        assertTrue(mapping.isOpen(), "closing a view leaves the mapping mapped");

        DeviceBuffer another = mapping.view(0, 16);
        // Without a driver the unmap call itself fails: the mapping is closed nonetheless, and only once.
        CudaException e = assertThrows(CudaDriverMissingException.class, mapping::close);
        assertTrue(e.call().startsWith("cudaIpcCloseMemHandle(0x7f0000000000)"), e.call());
        assertFalse(mapping.isOpen());
        mapping.close(); // no second cudaIpcCloseMemHandle: it would throw again
        assertFalse(another.isOpen());
        assertThrows(IllegalStateException.class, another::address);
        assertThrows(IllegalStateException.class, () -> mapping.view(0, 16));
        assertThrows(IndexOutOfBoundsException.class,
                () -> new IpcMapping(IpcMemHandle.fromBytes(pattern(4)), 0x1000, 0).view(-1, 16));
    }
}
