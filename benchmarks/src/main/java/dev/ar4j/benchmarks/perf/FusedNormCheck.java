package dev.ar4j.benchmarks.perf;

import dev.ar4j.DType;

import java.lang.foreign.MemorySegment;

/**
 * The host reference of {@code --scenario verify-fused}: each all-reduce's output {@code a} (the
 * exact sum of {@link InputPattern}'s integers), then
 * {@code residualOut = a + residual} and {@code out = residualOut * rsqrt(mean(residualOut^2) + eps) * weight}
 * per row of {@link #HIDDEN} elements, computed in double and compared with what the kernels wrote.
 *
 * <p>The residual is an integer in [-16, 16] (the same on every rank, as a tensor-parallel residual
 * is) and the weight a multiple of 1/16 in [-1, 1], so {@code a} and {@code residualOut} are exact
 * in every dtype (|value| &lt;= 8 x 16 + 16 = 144 &lt; 256) and checked for equality; {@code out} is
 * rounded once to the dtype and checked within a relative tolerance ({@link #tolerance}). It is a
 * product with no cancellation, so a relative bound holds for every element, zeros included (a zero
 * must be exactly zero).
 */
public final class FusedNormCheck {
    /** Elements per row: the hidden size of the verify pass (DeepSeek-V3's 7168). */
    public static final int HIDDEN = 7168;
    /** Rows of each all-reduce: the 3 tokens of the verify pass. */
    public static final int ROWS = 3;
    /** The RMSNorm epsilon. */
    public static final float EPS = 1e-6f;

    private static final long RESIDUAL_SALT = 0x5EED_0001L;
    private static final long WEIGHT_SALT = 0x5EED_0002L;

    private FusedNormCheck() {
    }

    /**
     * The relative tolerance of the normalised output: bf16 1.6e-2 (2 x 2^-7 with the fp32 rsqrt),
     * fp16 2e-3, fp32 1e-5.
     *
     * @param dtype the element type of the pass
     * @return the largest allowed {@code |got - reference| / |reference|} of {@code out}
     */
    public static double tolerance(DType dtype) {
        return switch (dtype) {
            case BFLOAT16 -> 1.6e-2;
            case FLOAT16 -> 2e-3;
            case FLOAT32 -> 1e-5;
        };
    }

    /**
     * The residual at element {@code index} of the pass (the same on every rank).
     *
     * @param seed  the seed of the pass's inputs
     * @param index the element index within the residual, from 0 ({@code row * HIDDEN + column})
     * @return an integer in [-16, 16]
     */
    public static int residual(long seed, long index) {
        return InputPattern.value(seed ^ RESIDUAL_SALT, 0, index);
    }

    /**
     * The weight at position {@code column} of a row (the same for every row and rank).
     *
     * @param seed   the seed of the pass's inputs
     * @param column the position within a row, in [0, {@link #HIDDEN})
     * @return a multiple of 1/16 in [-1, 1]
     */
    public static float weight(long seed, int column) {
        return InputPattern.value(seed ^ WEIGHT_SALT, 0, column) / 16f;
    }

    /**
     * Writes the residual of {@code host.byteSize() / dtype.byteSize()} elements: element i is
     * {@link #residual residual(seed, i)}.
     *
     * @param host  the host buffer to fill, any whole number of elements
     * @param dtype the element type written
     * @param seed  the seed of the pass's inputs
     */
    public static void fillResidual(MemorySegment host, DType dtype, long seed) {
        long n = host.byteSize() / dtype.byteSize();
        for (long i = 0; i < n; i++) {
            InputPattern.write(host, dtype, i, residual(seed, i));
        }
    }

    /**
     * Writes the {@link #HIDDEN} weights: element j is {@link #weight weight(seed, j)}.
     *
     * @param host  the host buffer to fill, exactly {@code HIDDEN * dtype.byteSize()} bytes
     * @param dtype the element type written
     * @param seed  the seed of the pass's inputs
     * @throws IllegalArgumentException if {@code host} does not hold exactly {@link #HIDDEN} elements
     */
    public static void fillWeight(MemorySegment host, DType dtype, long seed) {
        if (host.byteSize() != (long) HIDDEN * dtype.byteSize()) {
            throw new IllegalArgumentException("the weight holds " + HIDDEN + " elements, not "
                    + host.byteSize() / dtype.byteSize());
        }
        for (int j = 0; j < HIDDEN; j++) {
            InputPattern.write(host, dtype, j, weight(seed, j));
        }
    }

    /**
     * The exact {@code residualOut} at element {@code index}: the sum over ranks plus the residual.
     *
     * @param worldSize the number of ranks whose inputs are summed, 1 to 8 for exactness
     * @param seed      the seed of the pass's inputs
     * @param index     the element index, from 0 ({@code row * HIDDEN + column})
     * @return the exact sum, an integer in [-144, 144] for up to 8 ranks
     */
    public static int residualOut(int worldSize, long seed, long index) {
        int s = residual(seed, index);
        for (int r = 0; r < worldSize; r++) {
            s += InputPattern.value(seed, r, index);
        }
        return s;
    }

    /**
     * The reference of one row of {@code out}, in double, before rounding to the dtype.
     *
     * @param worldSize the number of ranks whose inputs are summed
     * @param seed      the seed of the pass's inputs
     * @param row       the row index, from 0
     * @return a new array of {@link #HIDDEN} normalised, weighted values
     */
    public static double[] referenceRow(int worldSize, long seed, long row) {
        double[] r = new double[HIDDEN];
        double squares = 0;
        for (int j = 0; j < HIDDEN; j++) {
            r[j] = residualOut(worldSize, seed, row * HIDDEN + j);
            squares += r[j] * r[j];
        }
        double inv = 1.0 / Math.sqrt(squares / HIDDEN + EPS);
        for (int j = 0; j < HIDDEN; j++) {
            r[j] = r[j] * inv * weight(seed, j);
        }
        return r;
    }

    /**
     * Whether {@code got} is within {@code tolerance} of {@code reference}, relatively.
     *
     * @param got       the value the kernel wrote, read back as a double
     * @param reference the exact reference value
     * @param tolerance the largest allowed relative error, at least 0
     * @return true if {@code got} is finite and {@code |got - reference| <= tolerance * |reference|}
     *         (so a zero reference needs an exact zero); false for NaN and infinities
     */
    public static boolean within(double got, double reference, double tolerance) {
        return Double.isFinite(got) && Math.abs(got - reference) <= tolerance * Math.abs(reference);
    }

    /**
     * What is wrong in one checked pass.
     *
     * @param residualWrong elements of {@code residualOut} that differ from the exact sum
     * @param normWrong     elements of {@code out} outside the tolerance
     * @param maxRelative   the largest relative error of {@code out} over its non-zero references
     */
    public record Outcome(long residualWrong, long normWrong, double maxRelative) {
        /**
         * Every wrong element.
         *
         * @return {@code residualWrong + normWrong}
         */
        public long wrong() {
            return residualWrong + normWrong;
        }
    }

    /**
     * Checks {@code out} and {@code residualOut} of a pass, both {@code rows x HIDDEN} elements.
     *
     * @param out         the normalised output copied back from the device
     * @param residualOut the residual output copied back from the device, the same size as {@code out}
     * @param dtype       the element type of both buffers
     * @param worldSize   the number of ranks whose inputs were summed
     * @param seed        the seed of the pass's inputs
     * @return the counts of wrong elements and the largest relative error of {@code out}
     * @throws IllegalArgumentException if the two differ in size or are not whole rows
     */
    public static Outcome check(MemorySegment out, MemorySegment residualOut, DType dtype, int worldSize, long seed) {
        long rowBytes = (long) HIDDEN * dtype.byteSize();
        if (out.byteSize() != residualOut.byteSize() || out.byteSize() % rowBytes != 0) {
            throw new IllegalArgumentException("out (" + out.byteSize() + " B) and residualOut (" + residualOut.byteSize()
                    + " B) must be the same whole number of rows of " + rowBytes + " B");
        }
        long rows = out.byteSize() / rowBytes;
        double tol = tolerance(dtype);
        long residualWrong = 0;
        long normWrong = 0;
        double maxRelative = 0;
        for (long row = 0; row < rows; row++) {
            double[] ref = referenceRow(worldSize, seed, row);
            for (int j = 0; j < HIDDEN; j++) {
                long i = row * HIDDEN + j;
                if (InputPattern.read(residualOut, dtype, i) != (float) residualOut(worldSize, seed, i)) {
                    residualWrong++;
                }
                double got = InputPattern.read(out, dtype, i);
                if (!within(got, ref[j], tol)) {
                    normWrong++;
                }
                if (ref[j] != 0 && Double.isFinite(got)) {
                    maxRelative = Math.max(maxRelative, Math.abs(got - ref[j]) / Math.abs(ref[j]));
                }
            }
        }
        return new Outcome(residualWrong, normWrong, maxRelative);
    }
}
