package dev.ar4j.internal.nccl;

import dev.ar4j.nccl.NcclDataType;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;

import java.util.Objects;

/**
 * The checks a collective makes before NCCL sees its arguments: counts, ranks, buffer sizes and
 * devices, and NCCL's in-place rules. Pure Java, so every refusal is tested without a GPU. Each
 * message says which call on which rank, what was wrong, and what is accepted.
 */
final class NcclArguments {
    /** The names of NCCL's collective calls, for messages. */
    static final String ALL_REDUCE = "ncclAllReduce";
    static final String BROADCAST = "ncclBroadcast";
    static final String REDUCE = "ncclReduce";
    static final String ALL_GATHER = "ncclAllGather";
    static final String REDUCE_SCATTER = "ncclReduceScatter";
    static final String SEND = "ncclSend";
    static final String RECV = "ncclRecv";

    private NcclArguments() {
    }

    /** {@code "on rank 1 of 2"}: where a call runs, as messages say it. */
    static String site(int rank, int nranks) {
        return "on rank " + rank + " of " + nranks;
    }

    /** {@code "ncclAllGather on rank 1 of 2"}: the prefix of every message (built only for one). */
    static String where(String call, String site) {
        return site.isEmpty() ? call : call + " " + site;
    }

    static void checkCount(String call, String site, long count, String what) {
        if (count < 0) {
            throw new IllegalArgumentException(where(call, site) + ": " + what + " must be >= 0 (elements), got " + count);
        }
    }

    /** {@code count * type.byteSize() * multiple}, refusing an overflow. */
    static long bytes(String call, String site, long count, NcclDataType type, long multiple) {
        Objects.requireNonNull(type, "type");
        try {
            return Math.multiplyExact(Math.multiplyExact(count, (long) type.byteSize()), multiple);
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException(where(call, site) + ": " + count + " elements of " + type.ncclName()
                    + (multiple == 1 ? "" : " x " + multiple + " ranks") + " overflow a 64-bit byte count", e);
        }
    }

    static void checkRank(String call, String site, int value, int nranks, String what) {
        if (value < 0 || value >= nranks) {
            throw new IllegalArgumentException(where(call, site) + ": " + what + " must be a rank of this communicator, in [0, "
                    + nranks + "), got " + value);
        }
    }

    /** Refuses a buffer on another device than the communicator's, or smaller than {@code bytes}. */
    static void checkBuffer(String call, String site, DeviceBuffer buffer, long bytes, int device, String role, String need) {
        Objects.requireNonNull(buffer, role);
        if (buffer.device() != device) {
            throw new IllegalArgumentException(where(call, site) + ": the " + role + " buffer is on device " + buffer.device()
                    + " but this communicator uses device " + device + "; pass a buffer on device " + device);
        }
        if (buffer.byteSize() < bytes) {
            throw new IllegalArgumentException(where(call, site) + ": the " + role + " buffer has " + buffer.byteSize()
                    + " bytes; the call needs " + bytes + " (" + need + ")");
        }
    }

    /** Refuses a stream of another device than the communicator's. */
    static void checkStream(String call, String site, CudaStream stream, int device) {
        Objects.requireNonNull(stream, "stream");
        if (stream.device() != device) {
            throw new IllegalArgumentException(where(call, site) + ": the stream belongs to device " + stream.device()
                    + " but this communicator uses device " + device + "; enqueue on a stream of device " + device);
        }
    }

    /**
     * NCCL's in-place rule: unless the caller found the in-place layout ({@code inPlace}), the send
     * range [{@code send}, +{@code sendBytes}) and the receive range [{@code receive},
     * +{@code receiveBytes}) must not overlap: NCCL's result would be undefined.
     *
     * @param inPlaceRule how the message states the accepted in-place layout
     */
    static void checkOverlap(String call, String site, long send, long sendBytes, long receive, long receiveBytes,
                             boolean inPlace, String inPlaceRule) {
        if (inPlace || sendBytes == 0 || receiveBytes == 0) {
            return;
        }
        boolean disjoint = Long.compareUnsigned(send + sendBytes, receive) <= 0
                || Long.compareUnsigned(receive + receiveBytes, send) <= 0;
        if (!disjoint) {
            throw new IllegalArgumentException(where(call, site) + ": the send buffer [0x" + Long.toHexString(send) + ", +"
                    + sendBytes + " bytes) overlaps the receive buffer [0x" + Long.toHexString(receive) + ", +"
                    + receiveBytes + " bytes) but is not in place; NCCL's result would be undefined. Use disjoint"
                    + " buffers, or in place: " + inPlaceRule);
        }
    }
}
