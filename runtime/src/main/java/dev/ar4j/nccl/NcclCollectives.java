package dev.ar4j.nccl;

import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;

/**
 * NCCL's collectives and point-to-point calls on one NCCL communicator
 * ({@code Communicator.collectives()}), each enqueued on a CUDA stream. Every call comes twice:
 * with {@link DeviceBuffer}s, whose sizes, devices and overlap are checked against NCCL's rules
 * before NCCL is called (counts are in elements), and with raw device addresses and a
 * {@code cudaStream_t}, checked only for count, ranks and support. Both refuse a data type or
 * reduction the loaded NCCL or GPU lacks ({@link NcclUnsupportedException}).
 *
 * <p>Every rank must make the same calls in the same order. On a non-blocking communicator a call
 * that NCCL reports {@code ncclInProgress} is waited out, bounded by the communicator's timeout;
 * inside an {@link NcclGroup} the group's close does that.
 */
public interface NcclCollectives {
    /**
     * Starts an NCCL group on the calling thread ({@code ncclGroupStart}): the calls made on this
     * thread until it closes, on this or any other communicator, are launched together.
     *
     * @return the open group, to be closed on this thread
     * @throws NcclException if {@code ncclGroupStart} fails
     */
    NcclGroup startGroup();

    /**
     * Registers {@code buffer} as an NCCL window of this communicator ({@code ncclCommWindowRegister},
     * NCCL 2.27 or newer): collective, every rank registers a buffer of the same size, in the same order.
     *
     * @param buffer the buffer to register, on the communicator's device; from {@link Nccl#memAlloc} for a
     *     symmetric window
     * @param flags  {@link NcclWindow#DEFAULT}, {@link NcclWindow#COLLECTIVE_SYMMETRIC} or
     *     {@link NcclWindow#STRICT_ORDERING}
     * @return the registered window, to be deregistered (collectively) by closing it before the
     *     communicator is closed
     * @throws IllegalStateException if the communicator is closed, aborted or failed, or used by another
     *     thread at the same time
     * @throws NcclException if NCCL refuses the registration
     */
    NcclWindow registerWindow(DeviceBuffer buffer, int flags);

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
    void allReduce(DeviceBuffer send, DeviceBuffer receive, long count, NcclDataType type, NcclReduction op,
            CudaStream stream);

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
    void allReduce(long sendAddress, long receiveAddress, long count, NcclDataType type, NcclReduction op,
            long streamHandle);

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
    void broadcast(DeviceBuffer send, DeviceBuffer receive, long count, NcclDataType type, int root,
            CudaStream stream);

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
    void broadcast(long sendAddress, long receiveAddress, long count, NcclDataType type, int root,
            long streamHandle);

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
    void reduce(DeviceBuffer send, DeviceBuffer receive, long count, NcclDataType type, NcclReduction op,
            int root, CudaStream stream);

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
    void reduce(long sendAddress, long receiveAddress, long count, NcclDataType type, NcclReduction op, int root,
            long streamHandle);

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
    void allGather(DeviceBuffer send, DeviceBuffer receive, long sendCount, NcclDataType type, CudaStream stream);

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
    void allGather(long sendAddress, long receiveAddress, long sendCount, NcclDataType type, long streamHandle);

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
    void reduceScatter(DeviceBuffer send, DeviceBuffer receive, long receiveCount, NcclDataType type,
            NcclReduction op, CudaStream stream);

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
    void reduceScatter(long sendAddress, long receiveAddress, long receiveCount, NcclDataType type,
            NcclReduction op, long streamHandle);

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
    void send(DeviceBuffer buffer, long count, NcclDataType type, int peer, CudaStream stream);

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
    void send(long address, long count, NcclDataType type, int peer, long streamHandle);

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
    void recv(DeviceBuffer buffer, long count, NcclDataType type, int peer, CudaStream stream);

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
    void recv(long address, long count, NcclDataType type, int peer, long streamHandle);
}
