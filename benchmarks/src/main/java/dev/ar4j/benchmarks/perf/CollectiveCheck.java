package dev.ar4j.benchmarks.perf;

import dev.ar4j.DType;

import java.lang.foreign.MemorySegment;

/**
 * The exact result of each collective ({@link Operation}) on the checked inputs of
 * {@link InputPattern}: rank r's send element j is {@code InputPattern.value(seed, r, j)}, so every
 * rank knows what every other rank sent. Sums of at most 8 ranks of integers in [-16, 16] are exact
 * in bf16, fp16 and fp32, so the check is exact equality. Output bytes of {@code 0xFF} (the poison:
 * NaN in every dtype) count as wrong wherever they remain.
 */
public final class CollectiveCheck {
    /** The poison byte written over every output before a run: NaN in bf16, fp16 and fp32. */
    public static final int POISON = 0xFF;

    private CollectiveCheck() {
    }

    /**
     * The expected element {@code index} of rank {@code layout.rank()}'s receive data.
     *
     * @param layout the collective, rank, world size and sizes of the run
     * @param dtype  the element type
     * @param index  the element index in the receive data, in [0, {@code layout.receiveBytes() / dtype.byteSize()})
     * @param seed   the seed of the run
     * @return the exact value: a sum over ranks for all-reduce and reduce-scatter, one rank's input
     *         for all-gather and broadcast
     * @throws IllegalArgumentException if {@code index} lies outside the receive data
     */
    public static int expected(CollectiveLayout layout, DType dtype, long index, long seed) {
        long elements = layout.receiveBytes() / dtype.byteSize();
        if (index < 0 || index >= elements) {
            throw new IllegalArgumentException("index " + index + " is outside the " + elements + " received elements");
        }
        long c = layout.count();
        return switch (layout.operation()) {
            case ALL_REDUCE -> sum(layout.worldSize(), index, seed);
            case ALL_GATHER -> InputPattern.value(seed, (int) (index / c), index % c);
            case REDUCE_SCATTER -> sum(layout.worldSize(), layout.rank() * c + index, seed);
            case BROADCAST -> InputPattern.value(seed, Operation.ROOT, index);
        };
    }

    private static int sum(int worldSize, long index, long seed) {
        int s = 0;
        for (int r = 0; r < worldSize; r++) {
            s += InputPattern.value(seed, r, index);
        }
        return s;
    }

    /**
     * The host image of what the device holds before the checked run. Out of place: the send data
     * ({@code layout.sendBytes()}), the receive data being poisoned separately. In place: the one
     * region, poisoned where only output lies (all-gather: the other ranks' chunks; broadcast: the
     * whole buffer off the root) and holding this rank's send data elsewhere.
     *
     * @param host   {@code layout.sendBytes()} bytes out of place, {@code layout.regionBytes()} in place
     * @param layout the collective, rank, placement and sizes of the run
     * @param dtype  the element type written
     * @param seed   the seed of the run
     * @throws IllegalArgumentException if {@code host} is not of the size above
     */
    public static void fillInput(MemorySegment host, CollectiveLayout layout, DType dtype, long seed) {
        long expectedBytes = layout.inPlace() ? layout.regionBytes() : layout.sendBytes();
        if (host.byteSize() != expectedBytes) {
            throw new IllegalArgumentException("the host image holds " + host.byteSize() + " bytes, expected "
                    + expectedBytes);
        }
        int rank = layout.rank();
        boolean broadcastNonRoot = layout.operation() == Operation.BROADCAST && rank != Operation.ROOT;
        if (layout.inPlace() && (layout.operation() == Operation.ALL_GATHER || broadcastNonRoot)) {
            host.fill((byte) POISON);
            if (broadcastNonRoot) {
                return;
            }
        }
        MemorySegment send = host.asSlice(layout.sendOffset(), layout.sendBytes());
        long count = layout.sendBytes() / dtype.byteSize();
        int owner = layout.operation() == Operation.BROADCAST && rank == Operation.ROOT ? Operation.ROOT : rank;
        for (long i = 0; i < count; i++) {
            InputPattern.write(send, dtype, i, InputPattern.value(seed, owner, i));
        }
    }

    /**
     * Counts the elements of the receive data that differ from {@link #expected} (NaN and
     * infinities count as wrong).
     *
     * @param received the receive data as copied back, {@code layout.receiveBytes()} bytes
     * @param layout   the collective, rank, world size and sizes of the run
     * @param dtype    the element type of {@code received}
     * @param seed     the seed of the run
     * @return the number of wrong elements, 0 to the element count
     * @throws IllegalArgumentException if {@code received} is not {@code layout.receiveBytes()} bytes
     */
    public static long countWrong(MemorySegment received, CollectiveLayout layout, DType dtype, long seed) {
        if (received.byteSize() != layout.receiveBytes()) {
            throw new IllegalArgumentException("the received data holds " + received.byteSize() + " bytes, expected "
                    + layout.receiveBytes());
        }
        long elements = layout.receiveBytes() / dtype.byteSize();
        long wrong = 0;
        for (long i = 0; i < elements; i++) {
            if (InputPattern.read(received, dtype, i) != (float) expected(layout, dtype, i, seed)) {
                wrong++;
            }
        }
        return wrong;
    }
}
