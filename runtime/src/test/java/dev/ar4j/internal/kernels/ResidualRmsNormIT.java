package dev.ar4j.internal.kernels;

import dev.ar4j.DType;
import dev.ar4j.cuda.Cuda;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.cuda.GpuTestSupport;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link ResidualRmsNorm} on one GPU against a host reference on fresh random data, outputs
 * poisoned with NaN first: {@code residualOut} bitwise (one fp32 add, rounded to the dtype),
 * {@code out} within 1e-5 (fp32), 2e-3 (fp16) or 1.6e-2 (bf16) of the double-precision reference,
 * relative to max(1, |reference|); in place and out of place; a second run bitwise identical.
 */
@Tag("gpu")
public class ResidualRmsNormIT {
    private static final int[] HIDDEN = {7, 4096, 7168, 16384};
    private static final int[] ROWS = {1, 3};
    private static final float EPS = 1e-6f;

    @Test
    @Timeout(120)
    void matchesTheReferenceForEveryDtype() {
        GpuTestSupport.requireGpus(1);
        Cuda.setDevice(0);
        SplittableRandom random = new SplittableRandom(20261201);
        int cases = 0;
        try (CudaStream stream = CudaStream.create()) {
            for (DType dtype : DType.values()) {
                for (int hidden : HIDDEN) {
                    for (int rows : ROWS) {
                        for (boolean inPlace : new boolean[] {false, true}) {
                            runCase(dtype, rows, hidden, inPlace, random, stream);
                            cases++;
                        }
                    }
                }
            }
        }
        assertEquals(DType.values().length * HIDDEN.length * ROWS.length * 2, cases);
    }

    private static void runCase(DType dtype, int rows, int hidden, boolean inPlace, SplittableRandom random,
                                CudaStream stream) {
        int n = rows * hidden;
        float[] in = new float[n], residual = new float[n], weight = new float[hidden];
        for (int i = 0; i < n; i++) {
            in[i] = representable(dtype, (float) random.nextDouble(-2, 2));
            residual[i] = representable(dtype, (float) random.nextDouble(-2, 2));
        }
        for (int i = 0; i < hidden; i++) weight[i] = representable(dtype, (float) random.nextDouble(-2, 2));
        float[] refResidual = new float[n];
        double[] refOut = new double[n];
        for (int r = 0; r < rows; r++) {
            double squares = 0;
            for (int i = 0; i < hidden; i++) {
                int k = r * hidden + i;
                refResidual[k] = representable(dtype, in[k] + residual[k]);
                squares += (double) refResidual[k] * refResidual[k];
            }
            double inv = 1.0 / Math.sqrt(squares / hidden + EPS);
            for (int i = 0; i < hidden; i++) refOut[r * hidden + i] = refResidual[r * hidden + i] * inv * weight[i];
        }
        long bytes = (long) n * dtype.byteSize();
        try (Arena arena = Arena.ofConfined();
             DeviceBuffer dIn = DeviceBuffer.allocate(bytes);
             DeviceBuffer dRes = DeviceBuffer.allocate(bytes);
             DeviceBuffer dW = DeviceBuffer.allocate((long) hidden * dtype.byteSize());
             DeviceBuffer dOut = DeviceBuffer.allocate(bytes);
             DeviceBuffer dResOut = DeviceBuffer.allocate(bytes)) {
            int[] firstOut = null, firstRes = null;
            for (int attempt = 0; attempt < 2; attempt++) {
                dIn.copyFrom(toHost(arena, dtype, in));
                dRes.copyFrom(toHost(arena, dtype, residual));
                dW.copyFrom(toHost(arena, dtype, weight));
                dOut.fill(0xff);     // NaN in every dtype
                dResOut.fill(0xff);
                DeviceBuffer out = inPlace ? dIn : dOut;
                DeviceBuffer resOut = inPlace ? dRes : dResOut;
                ResidualRmsNorm.launch(dtype, dIn, dRes, dW, out, resOut, hidden, EPS, stream);
                stream.synchronize();
                MemorySegment hostOut = arena.allocate(bytes), hostRes = arena.allocate(bytes);
                out.copyTo(hostOut);
                resOut.copyTo(hostRes);
                int[] outBits = bits(dtype, hostOut, n), resBits = bits(dtype, hostRes, n);
                int wrongRes = 0, wrongOut = 0;
                double tolerance = dtype == DType.FLOAT32 ? 1e-5 : dtype == DType.FLOAT16 ? 2e-3 : 1.6e-2;
                for (int k = 0; k < n; k++) {
                    if (resBits[k] != toBits(dtype, refResidual[k])) wrongRes++;
                    double got = fromBits(dtype, outBits[k]);
                    double rel = Math.abs(got - refOut[k]) / Math.max(1.0, Math.abs(refOut[k]));
                    if (!(rel <= tolerance)) wrongOut++;
                }
                String what = dtype + " rows=" + rows + " hidden=" + hidden + (inPlace ? " in place" : " out of place");
                assertEquals(0, wrongRes, what + ": residualOut elements not bitwise equal to the reference");
                assertEquals(0, wrongOut, what + ": out elements beyond " + tolerance);
                if (attempt == 0) {
                    firstOut = outBits;
                    firstRes = resBits;
                } else {
                    assertTrue(java.util.Arrays.equals(firstOut, outBits) && java.util.Arrays.equals(firstRes, resBits),
                            what + ": a second run differs bitwise");
                }
            }
        }
    }

    public static float representable(DType dtype, float v) {
        return fromBits(dtype, toBits(dtype, v));
    }

    public static int toBits(DType dtype, float v) {
        return switch (dtype) {
            case FLOAT32 -> Float.floatToRawIntBits(v);
            case FLOAT16 -> Float.floatToFloat16(v) & 0xffff;
            case BFLOAT16 -> {
                int b = Float.floatToRawIntBits(v);
                if (Float.isNaN(v)) yield 0x7fc0;
                yield ((b + 0x7fff + ((b >>> 16) & 1)) >>> 16) & 0xffff;  // round to nearest even
            }
        };
    }

    public static float fromBits(DType dtype, int bits) {
        return switch (dtype) {
            case FLOAT32 -> Float.intBitsToFloat(bits);
            case FLOAT16 -> Float.float16ToFloat((short) bits);
            case BFLOAT16 -> Float.intBitsToFloat(bits << 16);
        };
    }

    public static MemorySegment toHost(Arena arena, DType dtype, float[] values) {
        MemorySegment s = arena.allocate((long) values.length * dtype.byteSize());
        for (int i = 0; i < values.length; i++) {
            if (dtype == DType.FLOAT32) s.setAtIndex(ValueLayout.JAVA_FLOAT, i, values[i]);
            else s.setAtIndex(ValueLayout.JAVA_SHORT, i, (short) toBits(dtype, values[i]));
        }
        return s;
    }

    public static int[] bits(DType dtype, MemorySegment s, int n) {
        int[] out = new int[n];
        for (int i = 0; i < n; i++) {
            out[i] = dtype == DType.FLOAT32 ? s.getAtIndex(ValueLayout.JAVA_INT, i)
                    : s.getAtIndex(ValueLayout.JAVA_SHORT, i) & 0xffff;
        }
        return out;
    }
}
