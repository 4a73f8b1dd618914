package dev.ar4j.internal.nccl;

import dev.ar4j.nccl.NcclDataType;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;

import java.util.Objects;

import static dev.ar4j.internal.nccl.NcclArguments.bytes;
import static dev.ar4j.internal.nccl.NcclArguments.checkBuffer;
import static dev.ar4j.internal.nccl.NcclArguments.checkCount;
import static dev.ar4j.internal.nccl.NcclArguments.checkOverlap;
import static dev.ar4j.internal.nccl.NcclArguments.checkRank;
import static dev.ar4j.internal.nccl.NcclArguments.checkStream;
import static dev.ar4j.internal.nccl.NcclArguments.ALL_GATHER;
import static dev.ar4j.internal.nccl.NcclArguments.ALL_REDUCE;
import static dev.ar4j.internal.nccl.NcclArguments.BROADCAST;
import static dev.ar4j.internal.nccl.NcclArguments.RECV;
import static dev.ar4j.internal.nccl.NcclArguments.REDUCE;
import static dev.ar4j.internal.nccl.NcclArguments.REDUCE_SCATTER;
import static dev.ar4j.internal.nccl.NcclArguments.SEND;

/**
 * The checks the {@link DeviceBuffer} overloads of {@link NcclCollectives} make before they call
 * the overload on the buffers' addresses: counts, ranks, buffer sizes and devices, the stream's
 * device, and NCCL's in-place rules, composed per call from {@link NcclArguments}. Pure Java: no
 * NCCL call.
 */
final class NcclBufferChecks {
    private static final String SAME_ADDRESS = "send and receive starting at the same address";

    private final String site;
    private final int rank;
    private final int nranks;
    private final int device;

    NcclBufferChecks(String site, int rank, int nranks, int device) {
        this.site = site;
        this.rank = rank;
        this.nranks = nranks;
        this.device = device;
    }

    /**
     * The checks of
     * {@link NcclCollectives#allReduce(DeviceBuffer, DeviceBuffer, long, NcclDataType, NcclReduction, CudaStream)}.
     */
    void allReduce(DeviceBuffer send, DeviceBuffer receive, long count, NcclDataType type,
                          CudaStream stream) {
        checkCount(ALL_REDUCE, site, count, "count");
        long bytes = bytes(ALL_REDUCE, site, count, type, 1);
        String need = count + " x " + type.ncclName();
        checkBuffer(ALL_REDUCE, site, send, bytes, device, "send", need);
        checkBuffer(ALL_REDUCE, site, receive, bytes, device, "receive", need);
        checkStream(ALL_REDUCE, site, stream, device);
        checkOverlap(ALL_REDUCE, site, send.address(), bytes, receive.address(), bytes,
                send.address() == receive.address(), SAME_ADDRESS);
    }

    /**
     * The checks of {@link NcclCollectives#broadcast(DeviceBuffer, DeviceBuffer, long, NcclDataType, int, CudaStream)};
     * returns the send address to pass (0, i.e. NULL, off the root unless a buffer was given there).
     */
    long broadcast(DeviceBuffer send, DeviceBuffer receive, long count, NcclDataType type,
                          int root, CudaStream stream) {
        checkCount(BROADCAST, site, count, "count");
        checkRank(BROADCAST, site, root, nranks, "root");
        long bytes = bytes(BROADCAST, site, count, type, 1);
        String need = count + " x " + type.ncclName();
        checkBuffer(BROADCAST, site, receive, bytes, device, "receive", need);
        checkStream(BROADCAST, site, stream, device);
        // NULL off the root unless given: NCCL reads the send buffer only on the root.
        return rootOnly(BROADCAST, root, send, "send", "send (the root's data)", receive, bytes, need, true);
    }

    /**
     * The checks of
     * {@link NcclCollectives#reduce(DeviceBuffer, DeviceBuffer, long, NcclDataType, NcclReduction, int, CudaStream)};
     * returns the receive address to pass (0, i.e. NULL, off the root unless a buffer was given there).
     */
    long reduce(DeviceBuffer send, DeviceBuffer receive, long count, NcclDataType type,
                       int root, CudaStream stream) {
        checkCount(REDUCE, site, count, "count");
        checkRank(REDUCE, site, root, nranks, "root");
        long bytes = bytes(REDUCE, site, count, type, 1);
        String need = count + " x " + type.ncclName();
        checkBuffer(REDUCE, site, send, bytes, device, "send", need);
        checkStream(REDUCE, site, stream, device);
        // NULL off the root unless given: NCCL writes the receive buffer only on the root.
        return rootOnly(REDUCE, root, receive, "receive", "receive (the root's result)", send, bytes, need,
                false);
    }

    /**
     * The buffer only the root uses (broadcast's send, reduce's receive): required on the root,
     * {@code bytes} long and overlapping {@code other} only at the same address; elsewhere optional
     * and unused. Returns the address to pass: 0 (NULL) off the root unless a buffer was given.
     *
     * @param isSend whether {@code buffer} is the send side (the overlap check names send first)
     */
    private long rootOnly(String op, int root, DeviceBuffer buffer,
                          String name, String required, DeviceBuffer other, long bytes, String need,
                          boolean isSend) {
        if (rank == root) {
            Objects.requireNonNull(buffer, required);
            checkBuffer(op, site, buffer, bytes, device, name, need);
            long send = isSend ? buffer.address() : other.address();
            long receive = isSend ? other.address() : buffer.address();
            checkOverlap(op, site, send, bytes, receive, bytes, send == receive, SAME_ADDRESS);
            return buffer.address();
        }
        if (buffer != null) {
            checkBuffer(op, site, buffer, 0, device, name, "unused off the root");
            return buffer.address();
        }
        return 0;
    }

    /**
     * The checks of {@link NcclCollectives#allGather(DeviceBuffer, DeviceBuffer, long, NcclDataType, CudaStream)}.
     */
    void allGather(DeviceBuffer send, DeviceBuffer receive, long sendCount,
                          NcclDataType type, CudaStream stream) {
        checkCount(ALL_GATHER, site, sendCount, "sendCount");
        long sendBytes = bytes(ALL_GATHER, site, sendCount, type, 1);
        long receiveBytes = bytes(ALL_GATHER, site, sendCount, type, nranks);
        checkBuffer(ALL_GATHER, site, send, sendBytes, device, "send", sendCount + " x " + type.ncclName());
        checkBuffer(ALL_GATHER, site, receive, receiveBytes, device, "receive",
                nranks + " ranks x " + sendCount + " x " + type.ncclName());
        checkStream(ALL_GATHER, site, stream, device);
        checkOverlap(ALL_GATHER, site, send.address(), sendBytes, receive.address(), receiveBytes,
                send.address() == receive.address() + rank * sendBytes,
                "send starting at receive + rank x sendCount elements, i.e. receive.slice(rank * sendBytes, sendBytes)");
    }

    /**
     * The checks of
     * {@link NcclCollectives#reduceScatter(DeviceBuffer, DeviceBuffer, long, NcclDataType, NcclReduction, CudaStream)}.
     */
    void reduceScatter(DeviceBuffer send, DeviceBuffer receive, long receiveCount,
                              NcclDataType type, CudaStream stream) {
        checkCount(REDUCE_SCATTER, site, receiveCount, "receiveCount");
        long receiveBytes = bytes(REDUCE_SCATTER, site, receiveCount, type, 1);
        long sendBytes = bytes(REDUCE_SCATTER, site, receiveCount, type, nranks);
        checkBuffer(REDUCE_SCATTER, site, send, sendBytes, device, "send",
                nranks + " ranks x " + receiveCount + " x " + type.ncclName());
        checkBuffer(REDUCE_SCATTER, site, receive, receiveBytes, device, "receive",
                receiveCount + " x " + type.ncclName());
        checkStream(REDUCE_SCATTER, site, stream, device);
        checkOverlap(REDUCE_SCATTER, site, send.address(), sendBytes, receive.address(), receiveBytes,
                receive.address() == send.address() + rank * receiveBytes,
                "receive starting at send + rank x receiveCount elements, i.e. send.slice(rank * receiveBytes,"
                        + " receiveBytes)");
    }

    /**
     * The checks of {@link NcclCollectives#send(DeviceBuffer, long, NcclDataType, int, CudaStream)} ({@code isSend})
     * and {@link NcclCollectives#recv(DeviceBuffer, long, NcclDataType, int, CudaStream)}.
     */
    void pointToPoint(boolean isSend, DeviceBuffer buffer, long count,
                             NcclDataType type, int peer, CudaStream stream) {
        String call = isSend ? SEND : RECV;
        checkCount(call, site, count, "count");
        checkRank(call, site, peer, nranks, "peer");
        checkBuffer(call, site, buffer, bytes(call, site, count, type, 1), device, isSend ? "send" : "receive",
                count + " x " + type.ncclName());
        checkStream(call, site, stream, device);
    }
}
