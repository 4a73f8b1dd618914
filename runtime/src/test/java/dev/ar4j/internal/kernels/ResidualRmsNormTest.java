package dev.ar4j.internal.kernels;

import dev.ar4j.DType;
import dev.ar4j.cuda.DeviceBuffer;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Argument checks of {@link ResidualRmsNorm}, all made before any native call (no GPU needed). */
class ResidualRmsNormTest {
    private static final long A = 0x7f00_0000_0000L;

    private static DeviceBuffer buffer(long offset, long bytes) {
        return DeviceBuffer.borrow(A + offset, bytes, 0);
    }

    @Test
    void theLimitIsTheHeadersLimit() {
        assertEquals(65536, ResidualRmsNorm.MAX_HIDDEN);
    }

    @Test
    void hiddenOutsideItsRangeIsRefused() {
        var e = assertThrows(IllegalArgumentException.class, () -> ResidualRmsNorm.launch(DType.FLOAT32, A, A + 64,
                A + 128, A + 192, A + 256, 1, 0, 1e-6f, 0));
        assertTrue(e.getMessage().contains("hidden must be 1 to 65536"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> ResidualRmsNorm.launch(DType.FLOAT32, A, A + 64, A + 128,
                A + 192, A + 256, 1, 65537, 1e-6f, 0));
    }

    @Test
    void badEpsAndRowsAreRefused() {
        for (float eps : new float[] {0f, -1f, Float.NaN, Float.POSITIVE_INFINITY}) {
            var e = assertThrows(IllegalArgumentException.class, () -> ResidualRmsNorm.launch(DType.BFLOAT16, A,
                    A + 64, A + 128, A + 192, A + 256, 1, 8, eps, 0));
            assertTrue(e.getMessage().contains("eps must be finite and greater than 0"), e.getMessage());
        }
        var e = assertThrows(IllegalArgumentException.class, () -> ResidualRmsNorm.launch(DType.BFLOAT16, A, A + 64,
                A + 128, A + 192, A + 256, 0, 8, 1e-6f, 0));
        assertTrue(e.getMessage().contains("rows must be 1 to"), e.getMessage());
    }

    @Test
    void aliasingThatTheKernelCannotDoIsRefused() {
        var e = assertThrows(IllegalArgumentException.class, () -> ResidualRmsNorm.launch(DType.FLOAT16, A, A + 64,
                A + 128, A + 192, A + 192, 1, 8, 1e-6f, 0));
        assertTrue(e.getMessage().contains("out must not be residual or residualOut"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> ResidualRmsNorm.launch(DType.FLOAT16, A, A + 64, A + 128,
                A + 64, A + 256, 1, 8, 1e-6f, 0));
        assertThrows(IllegalArgumentException.class, () -> ResidualRmsNorm.launch(DType.FLOAT16, 0, A + 64, A + 128,
                A + 192, A + 256, 1, 8, 1e-6f, 0));
    }

    @Test
    void buffersMustHoldWholeRowsOnOneDevice() {
        DeviceBuffer in = buffer(0, 3 * 8 * 4);
        DeviceBuffer ok = buffer(4096, 3 * 8 * 4);
        DeviceBuffer weight = buffer(8192, 8 * 4);
        var rows = assertThrows(IllegalArgumentException.class, () -> ResidualRmsNorm.launch(DType.FLOAT32, buffer(0, 100),
                ok, weight, buffer(12288, 100), buffer(16384, 100), 8, 1e-6f, dummyStream()));
        assertTrue(rows.getMessage().contains("not a whole, non-zero number of rows"), rows.getMessage());
        var small = assertThrows(IllegalArgumentException.class, () -> ResidualRmsNorm.launch(DType.FLOAT32, in,
                buffer(4096, 32), weight, buffer(12288, 96), buffer(16384, 96), 8, 1e-6f, dummyStream()));
        assertTrue(small.getMessage().contains("residual holds 32 bytes but needs 96"), small.getMessage());
        var w = assertThrows(IllegalArgumentException.class, () -> ResidualRmsNorm.launch(DType.FLOAT32, in, ok,
                buffer(8192, 16), buffer(12288, 96), buffer(16384, 96), 8, 1e-6f, dummyStream()));
        assertTrue(w.getMessage().contains("weight holds 16 bytes"), w.getMessage());
        var dev = assertThrows(IllegalArgumentException.class, () -> ResidualRmsNorm.launch(DType.FLOAT32, in, ok,
                weight, DeviceBuffer.borrow(A + 12288, 96, 1), buffer(16384, 96), 8, 1e-6f, dummyStream()));
        assertTrue(dev.getMessage().contains("every buffer must be on one device"), dev.getMessage());
    }

    // Every check above fails before the stream is used (it is checked last, right before the call).
    private static dev.ar4j.cuda.CudaStream dummyStream() {
        return null;
    }
}
