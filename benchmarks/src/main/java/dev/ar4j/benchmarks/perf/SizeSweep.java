package dev.ar4j.benchmarks.perf;

import dev.ar4j.DType;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The message sizes of a sweep, as nccl-tests' {@code all_reduce_perf -b MIN -e MAX -f FACTOR}
 * makes them: MIN, MIN*FACTOR, ... up to and including MAX, each rounded down to a whole number
 * of elements.
 */
public final class SizeSweep {
    private SizeSweep() {
    }

    /**
     * The sizes from {@code minBytes} to {@code maxBytes} growing by {@code factor}, each rounded down
     * to a whole number of elements, duplicates dropped.
     *
     * @param minBytes the smallest size ({@code -b}), positive
     * @param maxBytes the largest size ({@code -e}), at least {@code minBytes}; included only if a
     *                 power of {@code factor} times {@code minBytes} reaches it
     * @param factor   the growth factor ({@code -f}), at least 2
     * @param dtype    the element type
     * @return an unmodifiable list of ascending sizes in bytes, never empty
     * @throws IllegalArgumentException if the bounds are not positive, {@code maxBytes < minBytes},
     *                                  {@code factor < 2}, or the smallest size holds no element
     */
    public static List<Long> geometric(long minBytes, long maxBytes, int factor, DType dtype) {
        Objects.requireNonNull(dtype, "dtype");
        if (minBytes <= 0 || maxBytes <= 0) {
            throw new IllegalArgumentException("sizes must be positive, got -b " + minBytes + " -e " + maxBytes);
        }
        if (maxBytes < minBytes) {
            throw new IllegalArgumentException("the largest size (-e " + maxBytes + ") is smaller than the smallest (-b "
                    + minBytes + ")");
        }
        if (factor < 2) {
            throw new IllegalArgumentException("the growth factor (-f) must be at least 2, got " + factor);
        }
        List<Long> sizes = new ArrayList<>();
        for (long bytes = minBytes; bytes <= maxBytes; ) {
            add(sizes, bytes, dtype);
            if (bytes > maxBytes / factor) {
                break;
            }
            bytes *= factor;
        }
        return List.copyOf(sizes);
    }

    /**
     * An explicit list of sizes, each rounded down to a whole number of elements, duplicates
     * dropped, in the given order.
     *
     * @param bytes the sizes given ({@code --sizes}), in bytes
     * @param dtype the element type
     * @return an unmodifiable list of distinct sizes in bytes, never empty
     * @throws IllegalArgumentException if the list is null or empty or a size holds no element
     */
    public static List<Long> explicit(List<Long> bytes, DType dtype) {
        Objects.requireNonNull(dtype, "dtype");
        if (bytes == null || bytes.isEmpty()) {
            throw new IllegalArgumentException("--sizes needs at least one size");
        }
        List<Long> sizes = new ArrayList<>();
        for (long b : bytes) {
            add(sizes, b, dtype);
        }
        return List.copyOf(sizes);
    }

    private static void add(List<Long> sizes, long bytes, DType dtype) {
        long rounded = bytes / dtype.byteSize() * dtype.byteSize();
        if (rounded <= 0) {
            throw new IllegalArgumentException(bytes + " bytes hold no " + dtype + " element (" + dtype.byteSize()
                    + " bytes each)");
        }
        if (!sizes.contains(rounded)) {
            sizes.add(rounded);
        }
    }
}
