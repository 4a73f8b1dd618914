package dev.ar4j.benchmarks.perf;

import dev.ar4j.DType;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class InputPatternTest {

    @Test
    void valuesAreSmallIntegersThatDifferByRankAndIndex() {
        int[] histogram = new int[33];
        int sameAcrossRanks = 0;
        for (long i = 0; i < 33_000; i++) {
            int v = InputPattern.value(7, 0, i);
            assertTrue(v >= -16 && v <= 16, "value " + v);
            histogram[v + 16]++;
            if (v == InputPattern.value(7, 1, i)) {
                sameAcrossRanks++;
            }
            assertEquals(v, InputPattern.value(7, 0, i), "deterministic");
        }
        for (int count : histogram) {
            assertTrue(count > 700 && count < 1300, "roughly uniform: " + count);
        }
        assertTrue(sameAcrossRanks < 1500, "ranks get different inputs: " + sameAcrossRanks);
        assertNotEquals(InputPattern.value(7, 0, 5), InputPattern.value(8, 0, 5) + 100);
    }

    @Test
    void everyPossibleSumOfEightRanksIsExactInEveryDtype() {
        try (Arena arena = Arena.ofConfined()) {
            for (DType dtype : DType.values()) {
                MemorySegment one = arena.allocate(dtype.byteSize());
                for (int sum = -128; sum <= 128; sum++) {
                    InputPattern.write(one, dtype, 0, sum);
                    assertEquals(sum, InputPattern.read(one, dtype, 0), dtype + " " + sum);
                }
            }
        }
    }

    @Test
    void bf16IsTheUpperHalfOfTheFloat() {
        assertEquals((short) 0x3F80, InputPattern.toBfloat16(1f));
        assertEquals((short) 0xC180, InputPattern.toBfloat16(-16f));
    }

    @Test
    void theCheckCountsPoisonAndWrongElements() {
        int worldSize = 4;
        long seed = 99;
        int count = 1000;
        try (Arena arena = Arena.ofConfined()) {
            for (DType dtype : DType.values()) {
                MemorySegment result = arena.allocate((long) count * dtype.byteSize());
                for (int i = 0; i < count; i++) {
                    int sum = 0;
                    for (int r = 0; r < worldSize; r++) {
                        sum += InputPattern.value(seed, r, i);
                    }
                    InputPattern.write(result, dtype, i, sum);
                }
                assertEquals(0, InputPattern.countWrong(result, dtype, worldSize, seed), dtype.toString());
                InputPattern.write(result, dtype, 3, InputPattern.read(result, dtype, 3) + 1);
                result.asSlice((long) 10 * dtype.byteSize(), dtype.byteSize()).fill((byte) 0xFF); // poison: NaN
                assertEquals(2, InputPattern.countWrong(result, dtype, worldSize, seed), dtype.toString());
                assertEquals(count, InputPattern.countWrong(result.fill((byte) 0xFF), dtype, worldSize, seed));
            }
        }
    }

    @Test
    void fillWritesRankInputs() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate(64 * 2);
            InputPattern.fill(host, DType.BFLOAT16, 2, 5);
            for (int i = 0; i < 64; i++) {
                short bits = host.getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i);
                assertEquals(InputPattern.value(5, 2, i), Float.intBitsToFloat(bits << 16));
            }
        }
    }
}
