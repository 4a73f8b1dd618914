package dev.ar4j;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class HostDataTest {

    private static final float[] VALUES = {0f, -0f, 1f, -2.5f, 3.140625f, 65504f, 1e-3f, Float.POSITIVE_INFINITY};

    @Test
    void encodesEachTypeAsItsBitsInNativeOrder() {
        try (Arena arena = Arena.ofConfined()) {
            for (DType type : DType.values()) {
                MemorySegment host = HostData.encode(VALUES, type, arena);
                assertEquals((long) VALUES.length * type.byteSize(), host.byteSize(), type.toString());
                for (int i = 0; i < VALUES.length; i++) {
                    switch (type) {
                        case FLOAT32 -> assertEquals(VALUES[i], host.getAtIndex(ValueLayout.JAVA_FLOAT, i), 0f);
                        case FLOAT16 -> assertEquals(HalfFloats.toFloat16(VALUES[i]), host.getAtIndex(ValueLayout.JAVA_SHORT, i));
                        case BFLOAT16 -> assertEquals(HalfFloats.toBFloat16(VALUES[i]), host.getAtIndex(ValueLayout.JAVA_SHORT, i));
                    }
                }
            }
        }
    }

    @Test
    void decodeInvertsEncodeForRepresentableValues() {
        try (Arena arena = Arena.ofConfined()) {
            // All of VALUES but 1e-3 are exact in fp16 and in bf16 except 65504 and 3.140625 in bf16.
            float[] exactEverywhere = {0f, -0f, 1f, -2.5f, 0.5f, -1024f, Float.NEGATIVE_INFINITY};
            for (DType type : DType.values()) {
                assertArrayEquals(exactEverywhere, HostData.decode(HostData.encode(exactEverywhere, type, arena), type),
                        type.toString());
            }
            float[] bf16 = HostData.decode(HostData.encode(VALUES, DType.BFLOAT16, arena), DType.BFLOAT16);
            assertEquals(65536f, bf16[5], 0f, "65504 rounds to the nearest bf16");
            assertEquals(3.140625f, bf16[4], 0f);
            assertTrue(Float.isNaN(HostData.decode(HostData.encode(new float[] {Float.NaN}, DType.FLOAT16, arena),
                    DType.FLOAT16)[0]));
        }
    }

    @Test
    void decodeReadsUnalignedHeapMemoryAndRefusesPartialElements() {
        MemorySegment heap = MemorySegment.ofArray(new byte[7]).asSlice(1, 6);
        heap.set(ValueLayout.JAVA_SHORT_UNALIGNED, 0, HalfFloats.toBFloat16(2f));
        assertEquals(2f, HostData.decode(heap, DType.BFLOAT16)[0], 0f);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> HostData.decode(heap, DType.FLOAT32));
        assertTrue(e.getMessage().contains("6 bytes are not a whole number of FLOAT32 elements"), e.getMessage());
    }
}
