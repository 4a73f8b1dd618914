package dev.ar4j.nccl;

import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;

import java.util.Objects;

import static dev.ar4j.nccl.NcclArguments.bytes;
import static dev.ar4j.nccl.NcclArguments.checkBuffer;
import static dev.ar4j.nccl.NcclArguments.checkCount;
import static dev.ar4j.nccl.NcclArguments.checkOverlap;
import static dev.ar4j.nccl.NcclArguments.checkRank;
import static dev.ar4j.nccl.NcclArguments.checkStream;
import static dev.ar4j.nccl.NcclCollectiveCalls.ALL_GATHER;
import static dev.ar4j.nccl.NcclCollectiveCalls.ALL_REDUCE;
import static dev.ar4j.nccl.NcclCollectiveCalls.BROADCAST;
import static dev.ar4j.nccl.NcclCollectiveCalls.RECV;
import static dev.ar4j.nccl.NcclCollectiveCalls.REDUCE;
import static dev.ar4j.nccl.NcclCollectiveCalls.REDUCE_SCATTER;
import static dev.ar4j.nccl.NcclCollectiveCalls.SEND;

/**
 * The checks the {@link DeviceBuffer} overloads of {@link NcclCollectives} make before they call
 * the overload on the buffers' addresses: counts, ranks, buffer sizes and devices, the stream's
 * device, and NCCL's in-place rules, composed per call from {@link NcclArguments}. Pure Java: no
 * NCCL call.
 */
final class NcclBufferChecks {
    private static final String SAME_ADDRESS = "send and receive starting at the same address";

    private NcclBufferChecks() {
    }

    /**
     * The checks of
     * {@link NcclCollectives#allReduce(DeviceBuffer, DeviceBuffer, long, NcclDataType, NcclReduction, CudaStream)}.
     */
    static void allReduce(NcclCommunicator comm, DeviceBuffer send, DeviceBuffer receive, long count, NcclDataType type,
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
    }

    /**
     * The checks of {@link NcclCollectives#broadcast(DeviceBuffer, DeviceBuffer, long, NcclDataType, int, CudaStream)};
     * returns the send address to pass (0, i.e. NULL, off the root unless a buffer was given there).
     */
    static long broadcast(NcclCommunicator comm, DeviceBuffer send, DeviceBuffer receive, long count, NcclDataType type,
                          int root, CudaStream stream) {
        String site = comm.site();
        checkCount(BROADCAST, site, count, "count");
        checkRank(BROADCAST, site, root, comm.nranks(), "root");
        long bytes = bytes(BROADCAST, site, count, type, 1);
        String need = count + " x " + type.ncclName();
        checkBuffer(BROADCAST, site, receive, bytes, comm.device(), "receive", need);
        checkStream(BROADCAST, site, stream, comm.device());
        // NULL off the root unless given: NCCL reads the send buffer only on the root.
        return rootOnly(BROADCAST, site, comm, root, send, "send", "send (the root's data)", receive, bytes, need, true);
    }

    /**
     * The checks of
     * {@link NcclCollectives#reduce(DeviceBuffer, DeviceBuffer, long, NcclDataType, NcclReduction, int, CudaStream)};
     * returns the receive address to pass (0, i.e. NULL, off the root unless a buffer was given there).
     */
    static long reduce(NcclCommunicator comm, DeviceBuffer send, DeviceBuffer receive, long count, NcclDataType type,
                       int root, CudaStream stream) {
        String site = comm.site();
        checkCount(REDUCE, site, count, "count");
        checkRank(REDUCE, site, root, comm.nranks(), "root");
        long bytes = bytes(REDUCE, site, count, type, 1);
        String need = count + " x " + type.ncclName();
        checkBuffer(REDUCE, site, send, bytes, comm.device(), "send", need);
        checkStream(REDUCE, site, stream, comm.device());
        // NULL off the root unless given: NCCL writes the receive buffer only on the root.
        return rootOnly(REDUCE, site, comm, root, receive, "receive", "receive (the root's result)", send, bytes, need,
                false);
    }

    /**
     * The buffer only the root uses (broadcast's send, reduce's receive): required on the root,
     * {@code bytes} long and overlapping {@code other} only at the same address; elsewhere optional
     * and unused. Returns the address to pass: 0 (NULL) off the root unless a buffer was given.
     *
     * @param isSend whether {@code buffer} is the send side (the overlap check names send first)
     */
    private static long rootOnly(String op, String site, NcclCommunicator comm, int root, DeviceBuffer buffer,
                                 String name, String required, DeviceBuffer other, long bytes, String need,
                                 boolean isSend) {
        if (comm.rank() == root) {
            Objects.requireNonNull(buffer, required);
            checkBuffer(op, site, buffer, bytes, comm.device(), name, need);
            long send = isSend ? buffer.address() : other.address();
            long receive = isSend ? other.address() : buffer.address();
            checkOverlap(op, site, send, bytes, receive, bytes, send == receive, SAME_ADDRESS);
            return buffer.address();
        }
        if (buffer != null) {
            checkBuffer(op, site, buffer, 0, comm.device(), name, "unused off the root");
            return buffer.address();
        }
        return 0;
    }

    /**
     * The checks of {@link NcclCollectives#allGather(DeviceBuffer, DeviceBuffer, long, NcclDataType, CudaStream)}.
     */
    static void allGather(NcclCommunicator comm, DeviceBuffer send, DeviceBuffer receive, long sendCount,
                          NcclDataType type, CudaStream stream) {
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
    }

    /**
     * The checks of
     * {@link NcclCollectives#reduceScatter(DeviceBuffer, DeviceBuffer, long, NcclDataType, NcclReduction, CudaStream)}.
     */
    static void reduceScatter(NcclCommunicator comm, DeviceBuffer send, DeviceBuffer receive, long receiveCount,
                              NcclDataType type, CudaStream stream) {
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
    }

    /**
     * The checks of {@link NcclCollectives#send(DeviceBuffer, long, NcclDataType, int, CudaStream)} ({@code isSend})
     * and {@link NcclCollectives#recv(DeviceBuffer, long, NcclDataType, int, CudaStream)}.
     */
    static void pointToPoint(NcclCommunicator comm, boolean isSend, DeviceBuffer buffer, long count,
                             NcclDataType type, int peer, CudaStream stream) {
        String call = isSend ? SEND : RECV;
        String site = comm.site();
        checkCount(call, site, count, "count");
        checkRank(call, site, peer, comm.nranks(), "peer");
        checkBuffer(call, site, buffer, bytes(call, site, count, type, 1), comm.device(), isSend ? "send" : "receive",
                count + " x " + type.ncclName());
        checkStream(call, site, stream, comm.device());
    }
}
