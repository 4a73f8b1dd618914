package dev.ar4j.benchmarks.perf;

import dev.ar4j.DType;

/**
 * Where one call of a collective reads and writes, in bytes from the start of the benchmark's
 * buffers: out of place, the send data at the input buffer's start and the receive data at the
 * output buffer's start; in place, both in one buffer (the region), at the offsets NCCL defines
 * (all-gather: send at {@code rank x sendBytes} inside the receive data; reduce-scatter: receive
 * at {@code rank x receiveBytes} inside the send data).
 *
 * @param operation     the collective
 * @param rank          this rank
 * @param worldSize     ranks
 * @param count         the count NCCL is called with ({@link Operation#callCount})
 * @param sendBytes     bytes of the send data
 * @param receiveBytes  bytes of the receive data
 * @param inPlace       one buffer
 * @param sendOffset    offset of the send data (in place: inside the region; else 0 in the input buffer)
 * @param receiveOffset offset of the receive data (in place: inside the region; else 0 in the output buffer)
 */
public record CollectiveLayout(Operation operation, int rank, int worldSize, long count, long sendBytes,
                               long receiveBytes, boolean inPlace, long sendOffset, long receiveOffset) {

    /**
     * The layout of one call of {@code effectiveBytes} ({@link Operation#effectiveBytes}).
     *
     * @param op             the collective
     * @param effectiveBytes the whole buffer of the call, positive and already a whole number of
     *                       elements per rank
     * @param worldSize      the number of ranks, at least 1
     * @param rank           this rank, in [0, {@code worldSize})
     * @param dtype          the element type
     * @param inPlace        whether send and receive data share one region
     * @return the counts, sizes and offsets of this rank's call
     * @throws IllegalArgumentException if {@code effectiveBytes} is not positive or not a whole number
     *                                  of elements per rank, or {@code rank} is out of range
     */
    public static CollectiveLayout of(Operation op, long effectiveBytes, int worldSize, int rank, DType dtype,
                                      boolean inPlace) {
        if (effectiveBytes <= 0 || effectiveBytes != op.effectiveBytes(effectiveBytes, worldSize, dtype)) {
            throw new IllegalArgumentException(effectiveBytes + " bytes is not a positive whole number of " + dtype
                    + " elements per rank for " + op.title() + " on " + worldSize + " ranks");
        }
        if (rank < 0 || rank >= worldSize) {
            throw new IllegalArgumentException("rank " + rank + " is not in a world of " + worldSize);
        }
        long count = op.callCount(effectiveBytes, worldSize, dtype);
        long send = op.sendElements(effectiveBytes, worldSize, dtype) * dtype.byteSize();
        long receive = op.receiveElements(effectiveBytes, worldSize, dtype) * dtype.byteSize();
        long offset = inPlace ? op.inPlaceOffsetElements(effectiveBytes, worldSize, rank, dtype) * dtype.byteSize() : 0;
        long sendOffset = inPlace && op == Operation.ALL_GATHER ? offset : 0;
        long receiveOffset = inPlace && op == Operation.REDUCE_SCATTER ? offset : 0;
        return new CollectiveLayout(op, rank, worldSize, count, send, receive, inPlace, sendOffset, receiveOffset);
    }

    /** {@return bytes of the one buffer in place, or of the larger buffer out of place: the larger of send and receive} */
    public long regionBytes() {
        return Math.max(sendBytes, receiveBytes);
    }
}
