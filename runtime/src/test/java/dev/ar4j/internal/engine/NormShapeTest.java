package dev.ar4j.internal.engine;

import dev.ar4j.DType;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The argument checks of {@code Communicator.allReduceResidualRmsNorm}, made before any GPU work. */
class NormShapeTest {
    private static final long A = 0x7f00_0000_0000L;
    private static final CudaStream STREAM = CudaStream.borrow(0x1234, 0);

    private static DeviceBuffer b(long offset, long bytes) {
        return DeviceBuffer.borrow(A + offset, bytes, 0);
    }

    private static IllegalArgumentException refused(DeviceBuffer in, DeviceBuffer res, DeviceBuffer w, DeviceBuffer out,
                                                    DeviceBuffer resOut, int hidden, float eps) {
        return assertThrows(IllegalArgumentException.class,
                () -> NormShape.check(0, in, res, w, out, resOut, hidden, eps, DType.BFLOAT16, STREAM));
    }

    @Test
    void aGoodShapeGivesRowsAndCount() {
        NormShape s = NormShape.check(0, b(0, 3 * 7168 * 2), b(1 << 20, 3 * 7168 * 2), b(2 << 20, 7168 * 2),
                b(3 << 20, 3 * 7168 * 2), b(4 << 20, 3 * 7168 * 2), 7168, 1e-6f, DType.BFLOAT16, STREAM);
        assertEquals(new NormShape(3 * 7168, 3, 7168), s);
    }

    @Test
    void eachBadArgumentIsNamed() {
        long n = 3 * 64 * 2;
        DeviceBuffer in = b(0, n), res = b(1 << 20, n), w = b(2 << 20, 128), out = b(3 << 20, n), ro = b(4 << 20, n);
        assertTrue(refused(in, res, w, out, ro, 0, 1e-6f).getMessage().contains("hidden must be 1 to"));
        assertTrue(refused(in, res, w, out, ro, 64, 0f).getMessage().contains("eps must be finite"));
        assertTrue(refused(b(0, 100), res, w, out, ro, 64, 1e-6f).getMessage().contains("not a whole, non-zero number of rows"));
        assertTrue(refused(in, b(1 << 20, n - 128), w, out, ro, 64, 1e-6f).getMessage().contains("must have the same size"));
        assertTrue(refused(in, res, b(2 << 20, 64), out, ro, 64, 1e-6f).getMessage().contains("weight holds 64 bytes"));
        assertTrue(refused(in, res, w, DeviceBuffer.borrow(A + (3 << 20), n, 1), ro, 64, 1e-6f).getMessage()
                .contains("this communicator drives GPU 0"));
        assertTrue(refused(in, res, w, res, ro, 64, 1e-6f).getMessage().contains("out must not be residual"));
        assertTrue(refused(in, res, w, ro, ro, 64, 1e-6f).getMessage().contains("out must not be residual"));
    }
}
