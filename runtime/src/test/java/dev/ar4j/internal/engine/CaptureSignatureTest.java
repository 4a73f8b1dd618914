package dev.ar4j.internal.engine;

import dev.ar4j.DType;
import dev.ar4j.dispatch.Algorithm;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The cross-rank comparison of captured calls names the first difference: algorithm, dtype, count, order. */
class CaptureSignatureTest {

    private static byte[] signature(Object... calls) {
        ByteBuffer b = ByteBuffer.allocate(calls.length / 3 * CaptureRecorder.SIGNATURE_BYTES);
        for (int i = 0; i < calls.length; i += 3) {
            b.put((byte) ((Algorithm) calls[i]).ordinal()).put((byte) ((DType) calls[i + 1]).ordinal()).put((byte) 0)
                    .putLong((Long) calls[i + 2]);
        }
        return b.array();
    }

    @Test
    void identicalCapturesAgree() {
        byte[] s = signature(Algorithm.PUSH, DType.BFLOAT16, 21504L, Algorithm.ONE_STAGE, DType.FLOAT32, 4096L);
        assertNull(CaptureRecorder.firstDifference(0, new byte[][] {s, s.clone()}));
        assertNull(CaptureRecorder.firstDifference(1, new byte[][] {new byte[0], new byte[0]}));
    }

    @Test
    void theFirstDifferingCallIsNamedWithBothSides() {
        byte[] mine = signature(Algorithm.PUSH, DType.BFLOAT16, 21504L, Algorithm.ONE_STAGE, DType.FLOAT32, 4096L);
        byte[] dtype = signature(Algorithm.PUSH, DType.BFLOAT16, 21504L, Algorithm.ONE_STAGE, DType.FLOAT16, 4096L);
        String d = CaptureRecorder.firstDifference(0, new byte[][] {mine, dtype});
        assertTrue(d.contains("call 1") && d.contains("FLOAT32") && d.contains("FLOAT16") && d.contains("rank 1"), d);

        byte[] count = signature(Algorithm.PUSH, DType.BFLOAT16, 21505L, Algorithm.ONE_STAGE, DType.FLOAT32, 4096L);
        d = CaptureRecorder.firstDifference(0, new byte[][] {mine, count});
        assertTrue(d.contains("call 0") && d.contains("21504") && d.contains("21505"), d);

        byte[] swapped = signature(Algorithm.ONE_STAGE, DType.FLOAT32, 4096L, Algorithm.PUSH, DType.BFLOAT16, 21504L);
        d = CaptureRecorder.firstDifference(1, new byte[][] {mine, swapped});
        assertTrue(d.contains("call 0") && d.contains("on rank 1") && d.contains("on rank 0"), d);

        byte[] algorithm = signature(Algorithm.NCCL, DType.BFLOAT16, 21504L, Algorithm.ONE_STAGE, DType.FLOAT32, 4096L);
        d = CaptureRecorder.firstDifference(0, new byte[][] {mine, algorithm});
        assertTrue(d.contains("PUSH") && d.contains("NCCL"), d);
    }

    @Test
    void aMissingCallIsNamedByCount() {
        byte[] mine = signature(Algorithm.PUSH, DType.BFLOAT16, 8L, Algorithm.PUSH, DType.BFLOAT16, 8L);
        byte[] fewer = signature(Algorithm.PUSH, DType.BFLOAT16, 8L);
        String d = CaptureRecorder.firstDifference(0, new byte[][] {mine, fewer});
        assertTrue(d.contains("captured 2") && d.contains("captured 1"), d);
        d = CaptureRecorder.firstDifference(0, new byte[][] {mine, new byte[5]});
        assertTrue(d.contains("malformed"), d);
    }
}
