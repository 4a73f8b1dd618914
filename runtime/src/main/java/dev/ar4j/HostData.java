package dev.ar4j;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Objects;

/**
 * Host memory holding elements of a {@link DType}, to copy to and from a device buffer:
 * {@code float} values encoded as fp32, fp16 or bf16 ({@link HalfFloats}: round to nearest even,
 * NaN and infinities kept), in the platform's byte order as the GPU reads them.
 *
 * <pre>{@code
 * try (Arena arena = Arena.ofConfined()) {
 *     MemorySegment host = HostData.encode(values, DType.BFLOAT16, arena);   // values: float[]
 *     buffer.copyFrom(host);
 *     ...
 *     buffer.copyTo(host);
 *     float[] sums = HostData.decode(host, DType.BFLOAT16);
 * }
 * }</pre>
 */
public final class HostData {

    private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED;
    private static final ValueLayout.OfFloat FLOAT = ValueLayout.JAVA_FLOAT_UNALIGNED;

    private HostData() {
    }

    /**
     * Encodes values as {@code type} elements in new host memory.
     *
     * @param values the values
     * @param type   the element type to write
     * @param arena  owns the memory
     * @return {@code values.length * type.byteSize()} bytes
     */
    public static MemorySegment encode(float[] values, DType type, Arena arena) {
        Objects.requireNonNull(values, "values");
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(arena, "arena");
        MemorySegment host = arena.allocate((long) values.length * type.byteSize(), 16);
        for (int i = 0; i < values.length; i++) {
            switch (type) {
                case FLOAT32 -> host.setAtIndex(FLOAT, i, values[i]);
                case FLOAT16 -> host.setAtIndex(SHORT, i, HalfFloats.toFloat16(values[i]));
                case BFLOAT16 -> host.setAtIndex(SHORT, i, HalfFloats.toBFloat16(values[i]));
            }
        }
        return host;
    }

    /**
     * Decodes host memory holding {@code type} elements.
     *
     * @param host the memory; its size must be a multiple of {@code type.byteSize()}
     * @param type the element type it holds
     * @return the values, exactly
     * @throws IllegalArgumentException if the size is not a whole number of elements, or more
     *                                  than an array can hold
     */
    public static float[] decode(MemorySegment host, DType type) {
        Objects.requireNonNull(host, "host");
        Objects.requireNonNull(type, "type");
        long bytes = host.byteSize();
        if (bytes % type.byteSize() != 0 || bytes / type.byteSize() > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException(bytes + " bytes are not a whole number of " + type + " elements ("
                    + type.byteSize() + " bytes each) that fits a float[]");
        }
        float[] values = new float[(int) (bytes / type.byteSize())];
        for (int i = 0; i < values.length; i++) {
            values[i] = switch (type) {
                case FLOAT32 -> host.getAtIndex(FLOAT, i);
                case FLOAT16 -> HalfFloats.fromFloat16(host.getAtIndex(SHORT, i));
                case BFLOAT16 -> HalfFloats.fromBFloat16(host.getAtIndex(SHORT, i));
            };
        }
        return values;
    }
}
