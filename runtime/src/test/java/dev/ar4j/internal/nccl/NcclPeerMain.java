package dev.ar4j.internal.nccl;

import dev.ar4j.nccl.NcclDataType;
import dev.ar4j.nccl.NcclReduction;
import dev.ar4j.nccl.NcclWindow;
import dev.ar4j.nccl.Nccl;
import dev.ar4j.DType;
import dev.ar4j.cuda.Cuda;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.cuda.GpuTestSupport;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;

/**
 * One rank of {@link NcclTwoProcessIT}: rank 0 makes the NCCL unique id and writes it to the
 * exchange directory, every rank joins the communicator on device {@code rank}, all-reduces
 * integer-valued inputs (so every sum is exact in every dtype) and compares the result exactly.
 * Prints {@code NCCL-OK rank=R} and exits 0 on success; exits 1 with the reason otherwise.
 *
 * <p>Arguments: rank, nranks, exchange directory, phase ({@code allreduce}: fp32, fp16, bf16, in
 * and out of place; {@code window}: in place in an {@code ncclMemAlloc} buffer registered as a
 * symmetric window).
 */
public final class NcclPeerMain {
    private static final Duration WAIT = Duration.ofSeconds(60);

    private NcclPeerMain() {
    }

    /** Rank r's i-th input: a small integer, exact in bf16 (and so in fp16 and fp32) even once summed. */
    static float input(int rank, long i) {
        return (float) (i % 97 + 3 * rank);
    }

    static float expectedSum(int nranks, long i) {
        float sum = 0;
        for (int r = 0; r < nranks; r++) {
            sum += input(r, i);
        }
        return sum;
    }

    public static void main(String[] args) throws Exception {
        int rank = Integer.parseInt(args[0]);
        int nranks = Integer.parseInt(args[1]);
        Path exchange = Path.of(args[2]);
        String phase = args[3];
        try {
            Cuda.setDevice(rank);
            Path idFile = exchange.resolve("nccl.id");
            NcclUniqueId id;
            if (rank == 0) {
                id = NcclUniqueId.generate();
                GpuTestSupport.writeAtomically(idFile, id.toBytes());
            } else {
                id = NcclUniqueId.fromBytes(GpuTestSupport.awaitFile(idFile, WAIT));
            }
            try (NcclCommunicator comm = NcclCommInit.blocking(id, nranks, rank);
                 CudaStream stream = CudaStream.create()) {
                check(comm.rank() == rank && comm.nranks() == nranks && comm.device() == rank, comm.toString());
                switch (phase) {
                    case "allreduce" -> {
                        for (DType dtype : DType.values()) {
                            for (long count : new long[]{1, 1000, (1L << 20) + 5}) {
                                allReduce(comm, stream, dtype, count, false);
                                allReduce(comm, stream, dtype, count, true);
                            }
                        }
                    }
                    case "window" -> symmetricWindow(comm, stream);
                    default -> throw new IllegalArgumentException("unknown phase " + phase + "; known: allreduce, window");
                }
                check(comm.asyncError().isEmpty(), "asynchronous error " + comm.asyncError());
            }
            System.out.println("NCCL-OK rank=" + rank + " phase=" + phase + " nccl=" + Nccl.versionString());
            System.exit(0);
        } catch (Throwable t) {
            System.out.println("NCCL-FAILED rank=" + rank + " phase=" + phase + ": " + NcclCollectivesPeerMain.describe(t));
            System.exit(1);
        }
    }

    private static void allReduce(NcclCommunicator comm, CudaStream stream, DType dtype, long count, boolean inPlace) {
        long bytes = count * dtype.byteSize();
        try (Arena arena = Arena.ofConfined();
             DeviceBuffer send = DeviceBuffer.allocate(bytes);
             DeviceBuffer receive = inPlace ? null : DeviceBuffer.allocate(bytes)) {
            send.copyFrom(encode(arena, dtype, count, comm.rank()));
            DeviceBuffer target = inPlace ? send : receive;
            comm.allReduce(send, target, count, NcclDataType.of(dtype), NcclReduction.SUM, stream);
            stream.synchronize();
            verify(arena, target, dtype, count, comm.nranks(), dtype + " x " + count + (inPlace ? " in place" : ""));
        }
    }

    private static void symmetricWindow(NcclCommunicator comm, CudaStream stream) {
        DType dtype = DType.BFLOAT16;
        long count = 1L << 20;
        try (Arena arena = Arena.ofConfined(); DeviceBuffer buffer = Nccl.memAlloc(count * dtype.byteSize())) {
            check(buffer.isOwned(), "ncclMemAlloc memory is owned");
            try (NcclWindow window = comm.registerWindow(buffer, NcclWindow.COLLECTIVE_SYMMETRIC)) {
                check(window.isOpen(), "window open");
                for (int repeat = 0; repeat < 3; repeat++) {
                    buffer.copyFrom(encode(arena, dtype, count, comm.rank()));
                    comm.allReduce(buffer, buffer, count, NcclDataType.of(dtype), NcclReduction.SUM, stream);
                    stream.synchronize();
                    verify(arena, buffer, dtype, count, comm.nranks(), "symmetric window, repeat " + repeat);
                }
            }
        }
    }

    private static MemorySegment encode(Arena arena, DType dtype, long count, int rank) {
        MemorySegment host = arena.allocate(count * dtype.byteSize(), 16);
        for (long i = 0; i < count; i++) {
            float v = input(rank, i);
            switch (dtype) {
                case FLOAT32 -> host.setAtIndex(ValueLayout.JAVA_FLOAT, i, v);
                case FLOAT16 -> host.setAtIndex(ValueLayout.JAVA_SHORT, i, Float.floatToFloat16(v));
                case BFLOAT16 -> host.setAtIndex(ValueLayout.JAVA_SHORT, i, (short) (Float.floatToRawIntBits(v) >>> 16));
            }
        }
        return host;
    }

    private static float decode(MemorySegment host, DType dtype, long i) {
        return switch (dtype) {
            case FLOAT32 -> host.getAtIndex(ValueLayout.JAVA_FLOAT, i);
            case FLOAT16 -> Float.float16ToFloat(host.getAtIndex(ValueLayout.JAVA_SHORT, i));
            case BFLOAT16 -> Float.intBitsToFloat((host.getAtIndex(ValueLayout.JAVA_SHORT, i) & 0xffff) << 16);
        };
    }

    private static void verify(Arena arena, DeviceBuffer result, DType dtype, long count, int nranks, String what) {
        MemorySegment host = arena.allocate(count * dtype.byteSize(), 16);
        result.copyTo(host);
        long wrong = 0;
        long first = -1;
        for (long i = 0; i < count; i++) {
            if (decode(host, dtype, i) != expectedSum(nranks, i)) {
                wrong++;
                if (first < 0) {
                    first = i;
                }
            }
        }
        if (wrong != 0) {
            throw new AssertionError(what + ": " + wrong + " of " + count + " sums wrong; first at " + first + ": got "
                    + decode(host, dtype, first) + ", expected " + expectedSum(nranks, first));
        }
    }

    private static void check(boolean condition, String failure) {
        if (!condition) {
            throw new AssertionError(failure);
        }
    }
}
