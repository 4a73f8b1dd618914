package dev.ar4j.benchmarks.perf;

import dev.ar4j.DType;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The checked inputs: integers in [-16, 16], drawn from a hash of (seed, rank, element index), so
 * that every rank knows every other rank's input and the exact sum without exchanging data. Sums
 * of up to 8 ranks stay within [-128, 128], exact in bf16, fp16 and fp32, whatever the order of
 * additions.
 */
public final class InputPattern {
    /** Largest magnitude of an input value. */
    public static final int MAX_MAGNITUDE = 16;

    private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED;
    private static final ValueLayout.OfFloat FLOAT = ValueLayout.JAVA_FLOAT_UNALIGNED;

    private InputPattern() {
    }

    /**
     * Rank {@code rank}'s input value at {@code index}.
     *
     * @param seed  the seed of the run; any value
     * @param rank  the rank whose input is asked for, from 0
     * @param index the element index, from 0
     * @return an integer in [-{@link #MAX_MAGNITUDE}, {@link #MAX_MAGNITUDE}]
     */
    public static int value(long seed, int rank, long index) {
        long z = seed + 0x9E3779B97F4A7C15L * (rank + 1) + 0xD1B54A32D192ED03L * index;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        z ^= z >>> 31;
        return (int) Math.floorMod(z, 2L * MAX_MAGNITUDE + 1) - MAX_MAGNITUDE;
    }

    /**
     * Writes rank {@code rank}'s inputs into {@code host}: {@code host.byteSize() / dtype.byteSize()}
     * elements, element i being {@link #value value(seed, rank, i)}.
     *
     * @param host  the host buffer to fill
     * @param dtype the element type written
     * @param rank  the rank whose inputs are written, from 0
     * @param seed  the seed of the run
     */
    public static void fill(MemorySegment host, DType dtype, int rank, long seed) {
        long count = host.byteSize() / dtype.byteSize();
        for (long i = 0; i < count; i++) {
            write(host, dtype, i, value(seed, rank, i));
        }
    }

    /**
     * Counts the elements of {@code host} that differ from the sum of every rank's input
     * (NaN and infinities count as wrong).
     *
     * @param host      the reduced data copied back, {@code host.byteSize() / dtype.byteSize()} elements
     * @param dtype     the element type of {@code host}
     * @param worldSize the number of ranks whose inputs were summed
     * @param seed      the seed of the run
     * @return the number of wrong elements, 0 to the element count
     */
    public static long countWrong(MemorySegment host, DType dtype, int worldSize, long seed) {
        long count = host.byteSize() / dtype.byteSize();
        long wrong = 0;
        for (long i = 0; i < count; i++) {
            int expected = 0;
            for (int r = 0; r < worldSize; r++) {
                expected += value(seed, r, i);
            }
            if (read(host, dtype, i) != (float) expected) {
                wrong++;
            }
        }
        return wrong;
    }

    /** Writes one element. */
    static void write(MemorySegment host, DType dtype, long index, float value) {
        switch (dtype) {
            case FLOAT32 -> host.setAtIndex(FLOAT, index, value);
            case FLOAT16 -> host.setAtIndex(SHORT, index, Float.floatToFloat16(value));
            case BFLOAT16 -> host.setAtIndex(SHORT, index, toBfloat16(value));
        }
    }

    /** Reads one element as a float. */
    static float read(MemorySegment host, DType dtype, long index) {
        return switch (dtype) {
            case FLOAT32 -> host.getAtIndex(FLOAT, index);
            case FLOAT16 -> Float.float16ToFloat(host.getAtIndex(SHORT, index));
            case BFLOAT16 -> Float.intBitsToFloat(host.getAtIndex(SHORT, index) << 16);
        };
    }

    /** The bf16 bits of a float that bf16 holds exactly (small integers): its upper half. */
    static short toBfloat16(float value) {
        return (short) (Float.floatToRawIntBits(value) >>> 16);
    }

    /**
     * The short name of a dtype, as used in file names, tables and chart titles.
     *
     * @param dtype the element type
     * @return "bf16", "fp16" or "fp32"
     */
    public static String dtypeLabel(DType dtype) {
        return switch (dtype) {
            case FLOAT32 -> "fp32";
            case FLOAT16 -> "fp16";
            case BFLOAT16 -> "bf16";
        };
    }
}
