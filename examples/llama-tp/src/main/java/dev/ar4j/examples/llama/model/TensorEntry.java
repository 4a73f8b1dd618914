package dev.ar4j.examples.llama.model;

import java.util.Arrays;

/**
 * One tensor of a safetensors file as its header describes it, checked against the file.
 *
 * @param name   the tensor's name
 * @param dtype  its element type
 * @param shape  its dimensions (empty for a scalar)
 * @param begin  the first byte of its data, from the start of the data section
 * @param end    one past its last byte, from the start of the data section
 * @param dtypeName the header's dtype string (the only record of it when {@code dtype} is
 *                  {@link TensorDType#UNKNOWN})
 */
public record TensorEntry(String name, TensorDType dtype, long[] shape, long begin, long end, String dtypeName) {

    /**
     * Copies the shape.
     */
    public TensorEntry {
        shape = shape.clone();
        if (dtypeName == null) {
            dtypeName = dtype.name();
        }
    }

    /**
     * An entry of a dtype this reader knows.
     *
     * @param name  the tensor's name
     * @param dtype its element type
     * @param shape its dimensions
     * @param begin the first byte of its data
     * @param end   one past its last byte
     */
    public TensorEntry(String name, TensorDType dtype, long[] shape, long begin, long end) {
        this(name, dtype, shape, begin, end, dtype.name());
    }

    /**
     * The dimensions.
     *
     * @return a copy of the shape
     */
    @Override
    public long[] shape() {
        return shape.clone();
    }

    /**
     * Bytes of data.
     *
     * @return {@code end - begin}
     */
    public long byteSize() {
        return end - begin;
    }

    /**
     * Whether the shape is exactly {@code dims}.
     *
     * @param dims the expected dimensions
     * @return {@code true} when they match
     */
    public boolean hasShape(long... dims) {
        return Arrays.equals(shape, dims);
    }

    /**
     * The shape as a header writes it.
     *
     * @return e.g. {@code [4096, 512]}
     */
    public String shapeText() {
        return Arrays.toString(shape);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof TensorEntry t && name.equals(t.name) && dtype == t.dtype
                && dtypeName.equals(t.dtypeName) && Arrays.equals(shape, t.shape)
                && begin == t.begin && end == t.end;
    }

    @Override
    public int hashCode() {
        return name.hashCode() * 31 + Arrays.hashCode(shape);
    }

    @Override
    public String toString() {
        return name + " " + dtypeName + shapeText() + " bytes [" + begin + ", " + end + ")";
    }
}
