package dev.ar4j.nccl;

import dev.ar4j.bindings.nccl.nccl_h;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;

import java.lang.foreign.MemorySegment;
import java.util.Objects;
import java.util.function.IntSupplier;

import static dev.ar4j.nccl.NcclArguments.bytes;
import static dev.ar4j.nccl.NcclArguments.checkBuffer;
import static dev.ar4j.nccl.NcclArguments.checkCount;
import static dev.ar4j.nccl.NcclArguments.checkOverlap;
import static dev.ar4j.nccl.NcclArguments.checkRank;
import static dev.ar4j.nccl.NcclArguments.checkStream;

/**
 * NCCL's collectives and point-to-point calls on one {@link NcclCommunicator}
 * ({@link NcclCommunicator#collectives()}), each enqueued on a CUDA stream. Every call comes twice:
 * with {@link DeviceBuffer}s, whose sizes, devices and overlap are checked against NCCL's rules
 * before NCCL is called (counts are in elements), and with raw device addresses and a
 * {@code cudaStream_t}, checked only for count, ranks and support. Both refuse a data type or
 * reduction the loaded NCCL or GPU lacks ({@link NcclUnsupportedException}).
 *
 * <p>Every rank must make the same calls in the same order. On a non-blocking communicator a call
 * that NCCL reports {@code ncclInProgress} is waited out, bounded by the communicator's timeout;
 * inside an {@link NcclGroup} the group's close does that.
 */
public final class NcclCollectives {
    private static final String ALL_REDUCE = "ncclAllReduce";
    private static final String BROADCAST = "ncclBroadcast";
    private static final String REDUCE = "ncclReduce";
    private static final String ALL_GATHER = "ncclAllGather";
    private static final String REDUCE_SCATTER = "ncclReduceScatter";
    private static final String SEND = "ncclSend";
    private static final String RECV = "ncclRecv";
    private static final String SAME_ADDRESS = "send and receive starting at the same address";

    private final NcclCommunicator comm;
    private final IntSupplier computeCapabilityMajor;

    NcclCollectives(NcclCommunicator comm) {
        this.comm = comm;
        this.computeCapabilityMajor = comm::computeCapabilityMajor;
    }

    /**
     * The communicator these calls run on.
     *
     * @return the communicator that made this object
     */
    public NcclCommunicator communicator() {
        return comm;
    }

    // ---- all-reduce ----

    /**
     * {@code receive[i] = op over ranks of send[i]} for {@code count} elements; in place when
     * {@code send} and {@code receive} start at the same address.
     *
     * @param send the input, at least {@code count} elements, on the communicator's device
     * @param receive the output, at least {@code count} elements, on the communicator's device; {@code send}
     *     itself for in place
     * @param count the number of elements, >= 0
     * @param type the element type
     * @param op the reduction
     * @param stream the stream to enqueue on, of the communicator's device
     * @throws IllegalArgumentException if a buffer is smaller than {@code count} elements, on another
     *                                  device, the stream is of another device, or the buffers overlap
     *                                  without being in place
     * @throws IllegalStateException if the communicator is closed, aborted or failed, or another thread is
     *     inside an NCCL call on it
     * @throws NcclUnsupportedException if the loaded NCCL or this GPU lacks the data type or the reduction
     * @throws NcclException if NCCL reports an error (or the communicator's timeout passes waiting out
     *     {@code ncclInProgress})
     */
    public void allReduce(DeviceBuffer send, DeviceBuffer receive, long count, NcclDataType type, NcclReduction op,
                          CudaStream stream) {
        String site = comm.site();
        checkCount(ALL_REDUCE, site, count, "count");
        long bytes = bytes(ALL_REDUCE, site, count, type, 1);
        String need = count + " x " + type.ncclName();
        checkBuffer(ALL_REDUCE, site, send, bytes, comm.device(), "send", need);
        checkBuffer(ALL_REDUCE, site, receive, bytes, comm.device(), "receive", need);
        checkStream(ALL_REDUCE, site, stream, comm.device());
        checkOverlap(ALL_REDUCE, site, send.address(), bytes, receive.address(), bytes,
                send.address() == receive.address(), SAME_ADDRESS);
        allReduce(send.address(), receive.address(), count, type, op, stream.handle());
    }

    /**
     * {@link #allReduce(DeviceBuffer, DeviceBuffer, long, NcclDataType, NcclReduction, CudaStream)} on device addresses.
     *
     * @param sendAddress the input's device address, {@code count} elements
     * @param receiveAddress the output's device address, {@code count} elements; {@code sendAddress} for in
     *     place
     * @param count the number of elements, >= 0
     * @param type the element type
     * @param op the reduction
     * @param streamHandle the {@code cudaStream_t} to enqueue on, 0 for the legacy default stream
     * @throws IllegalArgumentException if {@code count} is negative
     * @throws NullPointerException if {@code type} or {@code op} is {@code null}
     * @throws IllegalStateException if the communicator is closed, aborted or failed, or another thread is
     *     inside an NCCL call on it
     * @throws NcclUnsupportedException if the loaded NCCL or this GPU lacks the data type or the reduction
     * @throws NcclException if NCCL reports an error (or the communicator's timeout passes waiting out
     *     {@code ncclInProgress})
     */
    public void allReduce(long sendAddress, long receiveAddress, long count, NcclDataType type, NcclReduction op,
                          long streamHandle) {
        checkCount(ALL_REDUCE, comm.site(), count, "count");
        requireReduction(type, op, ALL_REDUCE);
        comm.enter(ALL_REDUCE);
        int result;
        try {
            result = comm.settle(nccl_h.ncclAllReduce(MemorySegment.ofAddress(sendAddress),
                    MemorySegment.ofAddress(receiveAddress), count, type.code(), effective(op), comm.comm(),
                    MemorySegment.ofAddress(streamHandle)));
        } finally {
            comm.exit();
        }
        if (result != NcclErrors.SUCCESS) {
            throw comm.fail(result, ALL_REDUCE + "(" + count + " x " + type.ncclName() + ", " + op.ncclName() + ")");
        }
    }

    // ---- broadcast ----

    /**
     * Copies {@code count} elements of the root's {@code send} into every rank's {@code receive}
     * ({@code ncclBroadcast}); in place when they start at the same address. {@code send} is read
     * only on the root and may be null elsewhere (NCCL is then passed NULL).
     *
     * @param send the root's data, at least {@code count} elements; ignored off the root, where it may be
     *     {@code null}
     * @param receive where every rank receives the data, at least {@code count} elements
     * @param count the number of elements, >= 0
     * @param type the element type
     * @param root the root rank, 0 to {@code nranks - 1}
     * @param stream the stream to enqueue on, of the communicator's device
     * @throws IllegalArgumentException if {@code root} is not a rank, a buffer is too small or on another
     *     device, the stream is of another device, or the buffers overlap without being in place
     * @throws NullPointerException if {@code send} is {@code null} on the root
     * @throws IllegalStateException if the communicator is closed, aborted or failed, or another thread is
     *     inside an NCCL call on it
     * @throws NcclUnsupportedException if the loaded NCCL or this GPU lacks the data type
     * @throws NcclException if NCCL reports an error (or the communicator's timeout passes waiting out
     *     {@code ncclInProgress})
     */
    public void broadcast(DeviceBuffer send, DeviceBuffer receive, long count, NcclDataType type, int root,
                          CudaStream stream) {
        String site = comm.site();
        checkCount(BROADCAST, site, count, "count");
        checkRank(BROADCAST, site, root, comm.nranks(), "root");
        long bytes = bytes(BROADCAST, site, count, type, 1);
        String need = count + " x " + type.ncclName();
        checkBuffer(BROADCAST, site, receive, bytes, comm.device(), "receive", need);
        checkStream(BROADCAST, site, stream, comm.device());
        long sendAddress = 0; // NULL: NCCL reads the send buffer only on the root
        if (comm.rank() == root) {
            Objects.requireNonNull(send, "send (the root's data)");
            checkBuffer(BROADCAST, site, send, bytes, comm.device(), "send", need);
            checkOverlap(BROADCAST, site, send.address(), bytes, receive.address(), bytes,
                    send.address() == receive.address(), SAME_ADDRESS);
            sendAddress = send.address();
        } else if (send != null) {
            checkBuffer(BROADCAST, site, send, 0, comm.device(), "send", "unused off the root");
            sendAddress = send.address();
        }
        broadcast(sendAddress, receive.address(), count, type, root, stream.handle());
    }

    /**
     * {@link #broadcast(DeviceBuffer, DeviceBuffer, long, NcclDataType, int, CudaStream)} on device addresses.
     *
     * @param sendAddress the root's data, {@code count} elements; 0 off the root
     * @param receiveAddress where every rank receives the data, {@code count} elements
     * @param count the number of elements, >= 0
     * @param type the element type
     * @param root the root rank, 0 to {@code nranks - 1}
     * @param streamHandle the {@code cudaStream_t} to enqueue on, 0 for the legacy default stream
     * @throws IllegalArgumentException if {@code count} is negative or {@code root} is not a rank
     * @throws IllegalStateException if the communicator is closed, aborted or failed, or another thread is
     *     inside an NCCL call on it
     * @throws NcclUnsupportedException if the loaded NCCL or this GPU lacks the data type
     * @throws NcclException if NCCL reports an error (or the communicator's timeout passes waiting out
     *     {@code ncclInProgress})
     */
    public void broadcast(long sendAddress, long receiveAddress, long count, NcclDataType type, int root,
                          long streamHandle) {
        checkCount(BROADCAST, comm.site(), count, "count");
        checkRank(BROADCAST, comm.site(), root, comm.nranks(), "root");
        comm.support().requireType(type, BROADCAST, comm.site());
        comm.enter(BROADCAST);
        int result;
        try {
            result = comm.settle(nccl_h.ncclBroadcast(MemorySegment.ofAddress(sendAddress),
                    MemorySegment.ofAddress(receiveAddress), count, type.code(), root, comm.comm(),
                    MemorySegment.ofAddress(streamHandle)));
        } finally {
            comm.exit();
        }
        if (result != NcclErrors.SUCCESS) {
            throw comm.fail(result, BROADCAST + "(" + count + " x " + type.ncclName() + ", root " + root + ")");
        }
    }

    // ---- reduce ----

    /**
     * {@code receive[i] = op over ranks of send[i]} on the root only ({@code ncclReduce}); in place
     * when they start at the same address. {@code receive} is written only on the root and may be
     * null elsewhere (NCCL is then passed NULL).
     *
     * @param send each rank's input, at least {@code count} elements
     * @param receive the root's output, at least {@code count} elements; ignored off the root, where it may
     *     be {@code null}
     * @param count the number of elements, >= 0
     * @param type the element type
     * @param op the reduction
     * @param root the root rank, 0 to {@code nranks - 1}
     * @param stream the stream to enqueue on, of the communicator's device
     * @throws IllegalArgumentException if {@code root} is not a rank, a buffer is too small or on another
     *     device, the stream is of another device, or the buffers overlap without being in place
     * @throws NullPointerException if {@code receive} is {@code null} on the root
     * @throws IllegalStateException if the communicator is closed, aborted or failed, or another thread is
     *     inside an NCCL call on it
     * @throws NcclUnsupportedException if the loaded NCCL or this GPU lacks the data type or the reduction
     * @throws NcclException if NCCL reports an error (or the communicator's timeout passes waiting out
     *     {@code ncclInProgress})
     */
    public void reduce(DeviceBuffer send, DeviceBuffer receive, long count, NcclDataType type, NcclReduction op,
                       int root, CudaStream stream) {
        String site = comm.site();
        checkCount(REDUCE, site, count, "count");
        checkRank(REDUCE, site, root, comm.nranks(), "root");
        long bytes = bytes(REDUCE, site, count, type, 1);
        String need = count + " x " + type.ncclName();
        checkBuffer(REDUCE, site, send, bytes, comm.device(), "send", need);
        checkStream(REDUCE, site, stream, comm.device());
        long receiveAddress = 0; // NULL: NCCL writes the receive buffer only on the root
        if (comm.rank() == root) {
            Objects.requireNonNull(receive, "receive (the root's result)");
            checkBuffer(REDUCE, site, receive, bytes, comm.device(), "receive", need);
            checkOverlap(REDUCE, site, send.address(), bytes, receive.address(), bytes,
                    send.address() == receive.address(), SAME_ADDRESS);
            receiveAddress = receive.address();
        } else if (receive != null) {
            checkBuffer(REDUCE, site, receive, 0, comm.device(), "receive", "unused off the root");
            receiveAddress = receive.address();
        }
        reduce(send.address(), receiveAddress, count, type, op, root, stream.handle());
    }

    /**
     * {@link #reduce(DeviceBuffer, DeviceBuffer, long, NcclDataType, NcclReduction, int, CudaStream)} on device addresses.
     *
     * @param sendAddress each rank's input, {@code count} elements
     * @param receiveAddress the root's output, {@code count} elements; 0 off the root
     * @param count the number of elements, >= 0
     * @param type the element type
     * @param op the reduction
     * @param root the root rank, 0 to {@code nranks - 1}
     * @param streamHandle the {@code cudaStream_t} to enqueue on, 0 for the legacy default stream
     * @throws IllegalArgumentException if {@code count} is negative or {@code root} is not a rank
     * @throws IllegalStateException if the communicator is closed, aborted or failed, or another thread is
     *     inside an NCCL call on it
     * @throws NcclUnsupportedException if the loaded NCCL or this GPU lacks the data type or the reduction
     * @throws NcclException if NCCL reports an error (or the communicator's timeout passes waiting out
     *     {@code ncclInProgress})
     */
    public void reduce(long sendAddress, long receiveAddress, long count, NcclDataType type, NcclReduction op, int root,
                       long streamHandle) {
        checkCount(REDUCE, comm.site(), count, "count");
        checkRank(REDUCE, comm.site(), root, comm.nranks(), "root");
        requireReduction(type, op, REDUCE);
        comm.enter(REDUCE);
        int result;
        try {
            result = comm.settle(nccl_h.ncclReduce(MemorySegment.ofAddress(sendAddress),
                    MemorySegment.ofAddress(receiveAddress), count, type.code(), effective(op), root, comm.comm(),
                    MemorySegment.ofAddress(streamHandle)));
        } finally {
            comm.exit();
        }
        if (result != NcclErrors.SUCCESS) {
            throw comm.fail(result, REDUCE + "(" + count + " x " + type.ncclName() + ", " + op.ncclName() + ", root "
                    + root + ")");
        }
    }

    // ---- all-gather ----

    /**
     * {@code receive[r * sendCount + i] = send of rank r [i]} ({@code ncclAllGather}):
     * {@code receive} holds {@code nranks * sendCount} elements. In place when {@code send} starts
     * at {@code receive + rank * sendCount} elements (e.g. {@code receive.slice(rank * bytes, bytes)}).
     *
     * @param send this rank's part, at least {@code sendCount} elements
     * @param receive the gathered result, at least {@code nranks * sendCount} elements
     * @param sendCount the number of elements each rank contributes, >= 0
     * @param type the element type
     * @param stream the stream to enqueue on, of the communicator's device
     * @throws IllegalArgumentException if a buffer is too small or on another device, the stream is of
     *     another device, or the buffers overlap other than in place
     * @throws IllegalStateException if the communicator is closed, aborted or failed, or another thread is
     *     inside an NCCL call on it
     * @throws NcclUnsupportedException if the loaded NCCL or this GPU lacks the data type
     * @throws NcclException if NCCL reports an error (or the communicator's timeout passes waiting out
     *     {@code ncclInProgress})
     */
    public void allGather(DeviceBuffer send, DeviceBuffer receive, long sendCount, NcclDataType type, CudaStream stream) {
        String site = comm.site();
        checkCount(ALL_GATHER, site, sendCount, "sendCount");
        long sendBytes = bytes(ALL_GATHER, site, sendCount, type, 1);
        long receiveBytes = bytes(ALL_GATHER, site, sendCount, type, comm.nranks());
        checkBuffer(ALL_GATHER, site, send, sendBytes, comm.device(), "send", sendCount + " x " + type.ncclName());
        checkBuffer(ALL_GATHER, site, receive, receiveBytes, comm.device(), "receive",
                comm.nranks() + " ranks x " + sendCount + " x " + type.ncclName());
        checkStream(ALL_GATHER, site, stream, comm.device());
        checkOverlap(ALL_GATHER, site, send.address(), sendBytes, receive.address(), receiveBytes,
                send.address() == receive.address() + comm.rank() * sendBytes,
                "send starting at receive + rank x sendCount elements, i.e. receive.slice(rank * sendBytes, sendBytes)");
        allGather(send.address(), receive.address(), sendCount, type, stream.handle());
    }

    /**
     * {@link #allGather(DeviceBuffer, DeviceBuffer, long, NcclDataType, CudaStream)} on device addresses.
     *
     * @param sendAddress this rank's part, {@code sendCount} elements
     * @param receiveAddress the gathered result, {@code nranks * sendCount} elements
     * @param sendCount the number of elements each rank contributes, >= 0
     * @param type the element type
     * @param streamHandle the {@code cudaStream_t} to enqueue on, 0 for the legacy default stream
     * @throws IllegalArgumentException if {@code sendCount} is negative
     * @throws IllegalStateException if the communicator is closed, aborted or failed, or another thread is
     *     inside an NCCL call on it
     * @throws NcclUnsupportedException if the loaded NCCL or this GPU lacks the data type
     * @throws NcclException if NCCL reports an error (or the communicator's timeout passes waiting out
     *     {@code ncclInProgress})
     */
    public void allGather(long sendAddress, long receiveAddress, long sendCount, NcclDataType type, long streamHandle) {
        checkCount(ALL_GATHER, comm.site(), sendCount, "sendCount");
        comm.support().requireType(type, ALL_GATHER, comm.site());
        comm.enter(ALL_GATHER);
        int result;
        try {
            result = comm.settle(nccl_h.ncclAllGather(MemorySegment.ofAddress(sendAddress),
                    MemorySegment.ofAddress(receiveAddress), sendCount, type.code(), comm.comm(),
                    MemorySegment.ofAddress(streamHandle)));
        } finally {
            comm.exit();
        }
        if (result != NcclErrors.SUCCESS) {
            throw comm.fail(result, ALL_GATHER + "(" + sendCount + " x " + type.ncclName() + " per rank)");
        }
    }

    // ---- reduce-scatter ----

    /**
     * {@code receive[i] = op over ranks r of send of r [rank * receiveCount + i]}
     * ({@code ncclReduceScatter}): {@code send} holds {@code nranks * receiveCount} elements. In
     * place when {@code receive} starts at {@code send + rank * receiveCount} elements.
     *
     * @param send this rank's input, at least {@code nranks * receiveCount} elements
     * @param receive this rank's share of the result, at least {@code receiveCount} elements
     * @param receiveCount the number of elements each rank receives, >= 0
     * @param type the element type
     * @param op the reduction
     * @param stream the stream to enqueue on, of the communicator's device
     * @throws IllegalArgumentException if a buffer is too small or on another device, the stream is of
     *     another device, or the buffers overlap other than in place
     * @throws IllegalStateException if the communicator is closed, aborted or failed, or another thread is
     *     inside an NCCL call on it
     * @throws NcclUnsupportedException if the loaded NCCL or this GPU lacks the data type or the reduction
     * @throws NcclException if NCCL reports an error (or the communicator's timeout passes waiting out
     *     {@code ncclInProgress})
     */
    public void reduceScatter(DeviceBuffer send, DeviceBuffer receive, long receiveCount, NcclDataType type,
                              NcclReduction op, CudaStream stream) {
        String site = comm.site();
        checkCount(REDUCE_SCATTER, site, receiveCount, "receiveCount");
        long receiveBytes = bytes(REDUCE_SCATTER, site, receiveCount, type, 1);
        long sendBytes = bytes(REDUCE_SCATTER, site, receiveCount, type, comm.nranks());
        checkBuffer(REDUCE_SCATTER, site, send, sendBytes, comm.device(), "send",
                comm.nranks() + " ranks x " + receiveCount + " x " + type.ncclName());
        checkBuffer(REDUCE_SCATTER, site, receive, receiveBytes, comm.device(), "receive",
                receiveCount + " x " + type.ncclName());
        checkStream(REDUCE_SCATTER, site, stream, comm.device());
        checkOverlap(REDUCE_SCATTER, site, send.address(), sendBytes, receive.address(), receiveBytes,
                receive.address() == send.address() + comm.rank() * receiveBytes,
                "receive starting at send + rank x receiveCount elements, i.e. send.slice(rank * receiveBytes,"
                        + " receiveBytes)");
        reduceScatter(send.address(), receive.address(), receiveCount, type, op, stream.handle());
    }

    /**
     * {@link #reduceScatter(DeviceBuffer, DeviceBuffer, long, NcclDataType, NcclReduction, CudaStream)} on device addresses.
     *
     * @param sendAddress this rank's input, {@code nranks * receiveCount} elements
     * @param receiveAddress this rank's share of the result, {@code receiveCount} elements
     * @param receiveCount the number of elements each rank receives, >= 0
     * @param type the element type
     * @param op the reduction
     * @param streamHandle the {@code cudaStream_t} to enqueue on, 0 for the legacy default stream
     * @throws IllegalArgumentException if {@code receiveCount} is negative
     * @throws NullPointerException if {@code type} or {@code op} is {@code null}
     * @throws IllegalStateException if the communicator is closed, aborted or failed, or another thread is
     *     inside an NCCL call on it
     * @throws NcclUnsupportedException if the loaded NCCL or this GPU lacks the data type or the reduction
     * @throws NcclException if NCCL reports an error (or the communicator's timeout passes waiting out
     *     {@code ncclInProgress})
     */
    public void reduceScatter(long sendAddress, long receiveAddress, long receiveCount, NcclDataType type,
                              NcclReduction op, long streamHandle) {
        checkCount(REDUCE_SCATTER, comm.site(), receiveCount, "receiveCount");
        requireReduction(type, op, REDUCE_SCATTER);
        comm.enter(REDUCE_SCATTER);
        int result;
        try {
            result = comm.settle(nccl_h.ncclReduceScatter(MemorySegment.ofAddress(sendAddress),
                    MemorySegment.ofAddress(receiveAddress), receiveCount, type.code(), effective(op), comm.comm(),
                    MemorySegment.ofAddress(streamHandle)));
        } finally {
            comm.exit();
        }
        if (result != NcclErrors.SUCCESS) {
            throw comm.fail(result, REDUCE_SCATTER + "(" + receiveCount + " x " + type.ncclName() + " per rank, "
                    + op.ncclName() + ")");
        }
    }

    // ---- point to point ----

    /**
     * Sends {@code count} elements of {@code buffer} to rank {@code peer} ({@code ncclSend}), which
     * must make the matching {@link #recv}. Blocks the stream until the peer receives: make a send
     * and a receive that must progress together inside one {@link NcclGroup}.
     *
     * @param buffer the data to send, at least {@code count} elements, on the communicator's device
     * @param count the number of elements, >= 0
     * @param type the element type
     * @param peer the receiving rank, 0 to {@code nranks - 1}
     * @param stream the stream to enqueue on, of the communicator's device
     * @throws IllegalArgumentException if {@code peer} is not a rank, the buffer is too small or on another
     *     device, or the stream is of another device
     * @throws IllegalStateException if the communicator is closed, aborted or failed, or another thread is
     *     inside an NCCL call on it
     * @throws NcclUnsupportedException if the loaded NCCL or this GPU lacks the data type
     * @throws NcclException if NCCL reports an error (or the communicator's timeout passes waiting out
     *     {@code ncclInProgress})
     */
    public void send(DeviceBuffer buffer, long count, NcclDataType type, int peer, CudaStream stream) {
        pointToPoint(true, buffer, count, type, peer, stream);
    }

    /**
     * {@link #send(DeviceBuffer, long, NcclDataType, int, CudaStream)} on a device address.
     *
     * @param address the device address of the data to send, {@code count} elements
     * @param count the number of elements, >= 0
     * @param type the element type
     * @param peer the receiving rank, 0 to {@code nranks - 1}
     * @param streamHandle the {@code cudaStream_t} to enqueue on, 0 for the legacy default stream
     * @throws IllegalArgumentException if {@code count} is negative or {@code peer} is not a rank
     * @throws IllegalStateException if the communicator is closed, aborted or failed, or another thread is
     *     inside an NCCL call on it
     * @throws NcclUnsupportedException if the loaded NCCL or this GPU lacks the data type
     * @throws NcclException if NCCL reports an error (or the communicator's timeout passes waiting out
     *     {@code ncclInProgress})
     */
    public void send(long address, long count, NcclDataType type, int peer, long streamHandle) {
        pointToPoint(true, address, count, type, peer, streamHandle);
    }

    /**
     * Receives {@code count} elements from rank {@code peer} into {@code buffer} ({@code ncclRecv}); see {@link #send}.
     *
     * @param buffer where the data is received, at least {@code count} elements, on the communicator's device
     * @param count the number of elements, >= 0
     * @param type the element type
     * @param peer the sending rank, 0 to {@code nranks - 1}
     * @param stream the stream to enqueue on, of the communicator's device
     * @throws IllegalArgumentException if {@code peer} is not a rank, the buffer is too small or on another
     *     device, or the stream is of another device
     * @throws IllegalStateException if the communicator is closed, aborted or failed, or another thread is
     *     inside an NCCL call on it
     * @throws NcclUnsupportedException if the loaded NCCL or this GPU lacks the data type
     * @throws NcclException if NCCL reports an error (or the communicator's timeout passes waiting out
     *     {@code ncclInProgress})
     */
    public void recv(DeviceBuffer buffer, long count, NcclDataType type, int peer, CudaStream stream) {
        pointToPoint(false, buffer, count, type, peer, stream);
    }

    /**
     * {@link #recv(DeviceBuffer, long, NcclDataType, int, CudaStream)} on a device address.
     *
     * @param address the device address of where the data is received, {@code count} elements
     * @param count the number of elements, >= 0
     * @param type the element type
     * @param peer the sending rank, 0 to {@code nranks - 1}
     * @param streamHandle the {@code cudaStream_t} to enqueue on, 0 for the legacy default stream
     * @throws IllegalArgumentException if {@code count} is negative or {@code peer} is not a rank
     * @throws IllegalStateException if the communicator is closed, aborted or failed, or another thread is
     *     inside an NCCL call on it
     * @throws NcclUnsupportedException if the loaded NCCL or this GPU lacks the data type
     * @throws NcclException if NCCL reports an error (or the communicator's timeout passes waiting out
     *     {@code ncclInProgress})
     */
    public void recv(long address, long count, NcclDataType type, int peer, long streamHandle) {
        pointToPoint(false, address, count, type, peer, streamHandle);
    }

    /** The buffer checks of {@link #send} and {@link #recv}, then the call on the buffer's address. */
    private void pointToPoint(boolean isSend, DeviceBuffer buffer, long count, NcclDataType type, int peer,
                              CudaStream stream) {
        String call = isSend ? SEND : RECV;
        String site = comm.site();
        checkCount(call, site, count, "count");
        checkRank(call, site, peer, comm.nranks(), "peer");
        checkBuffer(call, site, buffer, bytes(call, site, count, type, 1), comm.device(), isSend ? "send" : "receive",
                count + " x " + type.ncclName());
        checkStream(call, site, stream, comm.device());
        pointToPoint(isSend, buffer.address(), count, type, peer, stream.handle());
    }

    private void pointToPoint(boolean isSend, long address, long count, NcclDataType type, int peer, long streamHandle) {
        String call = isSend ? SEND : RECV;
        checkCount(call, comm.site(), count, "count");
        checkRank(call, comm.site(), peer, comm.nranks(), "peer");
        comm.support().requireType(type, call, comm.site());
        comm.enter(call);
        int result;
        try {
            MemorySegment buffer = MemorySegment.ofAddress(address);
            MemorySegment stream = MemorySegment.ofAddress(streamHandle);
            result = comm.settle(isSend
                    ? nccl_h.ncclSend(buffer, count, type.code(), peer, comm.comm(), stream)
                    : nccl_h.ncclRecv(buffer, count, type.code(), peer, comm.comm(), stream));
        } finally {
            comm.exit();
        }
        if (result != NcclErrors.SUCCESS) {
            throw comm.fail(result, call + "(" + count + " x " + type.ncclName() + (isSend ? " to" : " from") + " rank "
                    + peer + ")");
        }
    }

    /**
     * The reduction passed to NCCL. With one rank, average equals sum (a division by 1), and
     * NCCL's average over one rank was seen to leave the tail of a 65543-element float64
     * all-reduce unwritten (NCCL 2.28.9 on an H200, 2026-12-01: the last 7 elements, out of
     * place); the sum writes every element.
     */
    private int effective(NcclReduction op) {
        return op == NcclReduction.AVG && comm.nranks() == 1 ? NcclReduction.SUM.code() : op.code();
    }

    private void requireReduction(NcclDataType type, NcclReduction op, String call) {
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(op, "op");
        comm.support().requireReduction(type, op, computeCapabilityMajor, call, comm.site());
    }

    @Override
    public String toString() {
        return "NcclCollectives[" + comm + "]";
    }
}
