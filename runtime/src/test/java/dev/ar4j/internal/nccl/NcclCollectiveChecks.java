package dev.ar4j.internal.nccl;

import dev.ar4j.nccl.NcclDataType;
import dev.ar4j.nccl.NcclReduction;
import dev.ar4j.nccl.NcclGroup;
import dev.ar4j.nccl.NcclCollectives;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.function.LongToDoubleFunction;

/**
 * Runs every NCCL collective on one rank of a communicator and compares each output element with
 * the collective's definition, exactly. Every rank of the group runs the same checks in the same
 * order (they are collective). Each case has fresh inputs: rank r's element i of case k is a
 * small integer hashed from (seed, k, r, i), so every rank knows every rank's inputs and every
 * sum, product, min, max and average is exact in every type (the ranges are chosen per type and
 * world size). Outputs are poisoned (bytes 0x7B, far outside every input range) before each run,
 * so an element NCCL did not write is caught. Used in process for world size 1
 * ({@link NcclSingleGpuIT}) and by each JVM of {@link NcclCollectivesTwoProcessIT}.
 */
final class NcclCollectiveChecks {
    static final int POISON = 0x7B;

    private final NcclCommunicator comm;
    private final NcclCollectives c;
    private final CudaStream stream;
    private final long seed;
    private final int n;
    private final int rank;
    private int caseId;
    private long checked;

    NcclCollectiveChecks(NcclCommunicator comm, CudaStream stream, long seed) {
        this.comm = comm;
        this.c = comm;
        this.stream = stream;
        this.seed = seed;
        this.n = comm.nranks();
        this.rank = comm.rank();
    }

    /** Elements compared so far. */
    long checked() {
        return checked;
    }

    /** Every collective, for every type, reduction and count, in and out of place; then send/recv and split. */
    void runAll(long[] counts) {
        for (NcclDataType type : NcclDataType.values()) {
            for (long count : counts) {
                for (NcclReduction op : NcclReduction.values()) {
                    for (boolean inPlace : new boolean[]{false, true}) {
                        allReduce(type, op, count, inPlace);
                        reduce(type, op, count, inPlace);
                        reduceScatter(type, op, count, inPlace);
                    }
                }
                for (boolean inPlace : new boolean[]{false, true}) {
                    broadcast(type, count, inPlace);
                    allGather(type, count, inPlace);
                }
                sendRecvRing(type, count);
            }
        }
        split();
    }

    /**
     * Encodes every input and every expected result of cases 1..{@code cases}, {@code count}
     * elements each, in every type: throws if one is not exact in its type or equals the poison,
     * so the GPU comparison can be exact. Runs on the host only.
     */
    void requireExactReferences(int cases, long count) {
        try (Arena arena = Arena.ofConfined()) {
            for (NcclDataType type : NcclDataType.values()) {
                MemorySegment h = host(arena, type, 1);
                double poison = poisonValue(arena, type);
                for (int id = 1; id <= cases; id++) {
                    for (long i = 0; i < count * n; i++) {
                        for (int r = 0; r < n; r++) {
                            NcclElements.encode(type, h, 0, input(id, r, i, type));
                        }
                        for (NcclReduction op : NcclReduction.values()) {
                            double expected = reduced(op, type, id, i);
                            NcclElements.encode(type, h, 0, expected);
                            if (expected == poison) {
                                throw new AssertionError(type + " " + op + ": an expected value equals the poison");
                            }
                        }
                    }
                }
            }
        }
    }

    // ---- inputs and definitions ----

    /** The largest magnitude of an input, so that every reduction over {@code n} ranks stays exact in {@code type}. */
    private int range(NcclDataType type) {
        if (n > 2) {
            return 1;
        }
        return switch (type) {
            case FLOAT8_E5M2 -> 2;
            case FLOAT8_E4M3 -> 3;
            case INT8, UINT8 -> 4;
            default -> 8;
        };
    }

    private double input(int id, int r, long i, NcclDataType type) {
        long h = mix(seed ^ mix(id * 0x9E3779B97F4A7C15L ^ mix(r * 0xC2B2AE3D27D4EB4FL ^ mix(i))));
        int range = range(type);
        boolean unsigned = type.name().startsWith("U");
        long span = unsigned ? range + 1 : 2L * range + 1;
        long v = Math.floorMod(h, span);
        return unsigned ? v : v - range;
    }

    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    private double reduced(NcclReduction op, NcclDataType type, int id, long i) {
        double acc = input(id, 0, i, type);
        double sum = acc;
        for (int r = 1; r < n; r++) {
            double v = input(id, r, i, type);
            sum += v;
            acc = switch (op) {
                case SUM, AVG -> acc + v;
                case PROD -> acc * v;
                case MAX -> Math.max(acc, v);
                case MIN -> Math.min(acc, v);
            };
        }
        if (op == NcclReduction.AVG) {
            // Floating types: the exact quotient; integers: C's division, truncating toward zero, as Java's.
            return type.isFloatingPoint() ? sum / n : (double) ((long) sum / n);
        }
        return acc;
    }

    private MemorySegment host(Arena arena, NcclDataType type, long elements) {
        return arena.allocate(elements * type.byteSize(), 16);
    }

    private void upload(Arena arena, DeviceBuffer target, NcclDataType type, long elements, LongToDoubleFunction values) {
        MemorySegment h = host(arena, type, elements);
        for (long i = 0; i < elements; i++) {
            NcclElements.encode(type, h, i, values.applyAsDouble(i));
        }
        target.copyFrom(h);
    }

    private DeviceBuffer poisoned(long bytes) {
        DeviceBuffer b = DeviceBuffer.allocate(bytes);
        b.fill(POISON);
        return b;
    }

    /** Downloads {@code buffer} and compares elements [from, from + elements) with {@code expected}. */
    private void expect(Arena arena, String what, DeviceBuffer buffer, NcclDataType type, long from, long elements,
                        LongToDoubleFunction expected) {
        MemorySegment h = host(arena, type, from + elements);
        buffer.copyTo(h);
        long wrong = 0;
        long first = -1;
        for (long i = 0; i < elements; i++) {
            if (NcclElements.decode(type, h, from + i) != expected.applyAsDouble(i)) {
                if (first < 0) {
                    first = i;
                }
                wrong++;
            }
        }
        if (wrong != 0) {
            throw new AssertionError(what + " on rank " + rank + " of " + n + " (seed " + seed + ", case " + caseId
                    + "): " + wrong + " of " + elements + " elements wrong; first at " + first + ": got "
                    + NcclElements.decode(type, h, from + first) + ", expected " + expected.applyAsDouble(first)
                    + (NcclElements.decode(type, h, from + first) == poisonValue(arena, type) ? " (the poison: not written)"
                    : ""));
        }
        checked += elements;
    }

    private static double poisonValue(Arena arena, NcclDataType type) {
        MemorySegment p = arena.allocate(type.byteSize());
        p.fill((byte) POISON);
        return NcclElements.decode(type, p, 0);
    }

    private void finish() {
        stream.synchronize();
        if (comm.asyncError().isPresent()) {
            throw new AssertionError("asynchronous NCCL error: " + comm.asyncError().get().getMessage());
        }
    }

    // ---- the collectives ----

    void allReduce(NcclDataType type, NcclReduction op, long count, boolean inPlace) {
        int id = ++caseId;
        long bytes = count * type.byteSize();
        try (Arena arena = Arena.ofConfined(); DeviceBuffer send = DeviceBuffer.allocate(bytes);
             DeviceBuffer receive = inPlace ? null : poisoned(bytes)) {
            upload(arena, send, type, count, i -> input(id, rank, i, type));
            DeviceBuffer out = inPlace ? send : receive;
            c.allReduce(send, out, count, type, op, stream);
            finish();
            expect(arena, "allReduce " + type + " " + op + " x " + count + (inPlace ? " in place" : ""), out, type, 0,
                    count, i -> reduced(op, type, id, i));
        }
    }

    void reduce(NcclDataType type, NcclReduction op, long count, boolean inPlace) {
        int id = ++caseId;
        int root = id % n;
        long bytes = count * type.byteSize();
        try (Arena arena = Arena.ofConfined(); DeviceBuffer send = DeviceBuffer.allocate(bytes);
             DeviceBuffer receive = inPlace || rank != root ? null : poisoned(bytes)) {
            upload(arena, send, type, count, i -> input(id, rank, i, type));
            DeviceBuffer out = inPlace ? send : receive; // null off the root when out of place
            c.reduce(send, out, count, type, op, root, stream);
            finish();
            if (rank == root) {
                expect(arena, "reduce " + type + " " + op + " x " + count + " to root " + root
                        + (inPlace ? " in place" : ""), out, type, 0, count, i -> reduced(op, type, id, i));
            }
        }
    }

    void reduceScatter(NcclDataType type, NcclReduction op, long count, boolean inPlace) {
        int id = ++caseId;
        long bytes = count * type.byteSize();
        try (Arena arena = Arena.ofConfined(); DeviceBuffer send = DeviceBuffer.allocate(bytes * n);
             DeviceBuffer receive = inPlace ? send.slice(rank * bytes, bytes) : poisoned(bytes)) {
            upload(arena, send, type, count * n, j -> input(id, rank, j, type));
            c.reduceScatter(send, receive, count, type, op, stream);
            finish();
            expect(arena, "reduceScatter " + type + " " + op + " x " + count + (inPlace ? " in place" : ""), receive,
                    type, 0, count, i -> reduced(op, type, id, rank * count + i));
        }
    }

    void broadcast(NcclDataType type, long count, boolean inPlace) {
        int id = ++caseId;
        int root = id % n;
        long bytes = count * type.byteSize();
        try (Arena arena = Arena.ofConfined(); DeviceBuffer receive = poisoned(bytes);
             DeviceBuffer send = inPlace || rank != root ? null : DeviceBuffer.allocate(bytes)) {
            DeviceBuffer source = inPlace ? receive : send; // null off the root when out of place
            if (rank == root) {
                upload(arena, source, type, count, i -> input(id, root, i, type));
            }
            c.broadcast(inPlace && rank != root ? null : source, receive, count, type, root, stream);
            finish();
            expect(arena, "broadcast " + type + " x " + count + " from root " + root + (inPlace ? " in place" : ""),
                    receive, type, 0, count, i -> input(id, root, i, type));
        }
    }

    void allGather(NcclDataType type, long count, boolean inPlace) {
        int id = ++caseId;
        long bytes = count * type.byteSize();
        try (Arena arena = Arena.ofConfined(); DeviceBuffer receive = poisoned(bytes * n);
             DeviceBuffer send = inPlace ? receive.slice(rank * bytes, bytes) : DeviceBuffer.allocate(bytes)) {
            upload(arena, send, type, count, i -> input(id, rank, i, type));
            c.allGather(send, receive, count, type, stream);
            finish();
            for (int r = 0; r < n; r++) {
                int from = r;
                expect(arena, "allGather " + type + " x " + count + ", block of rank " + r + (inPlace ? " in place" : ""),
                        receive, type, r * count, count, i -> input(id, from, i, type));
            }
        }
    }

    /** Each rank sends to the next and receives from the previous, in one group (to itself for world size 1). */
    void sendRecvRing(NcclDataType type, long count) {
        int id = ++caseId;
        long bytes = count * type.byteSize();
        int next = (rank + 1) % n;
        int previous = (rank - 1 + n) % n;
        try (Arena arena = Arena.ofConfined(); DeviceBuffer send = DeviceBuffer.allocate(bytes);
             DeviceBuffer receive = poisoned(bytes)) {
            upload(arena, send, type, count, i -> input(id, rank, i, type));
            try (GroupScope group = GroupScope.start()) {
                c.send(send, count, type, next, stream);
                c.recv(receive, count, type, previous, stream);
                if (!group.isOpen()) {
                    throw new AssertionError("the group closed early");
                }
            }
            finish();
            expect(arena, "send/recv " + type + " x " + count + " from rank " + previous, receive, type, 0, count,
                    i -> input(id, previous, i, type));
        }
    }

    /** Split into one communicator of every rank, then into one of rank 0 alone; each all-reduces exactly. */
    void split() {
        try (NcclCommunicator all = comm.split(0, rank).orElseThrow(() -> new AssertionError("split(0) gave no communicator"))) {
            check(all.nranks() == n && all.rank() == rank && all.device() == comm.device(), "split(0, rank): " + all);
            NcclCollectiveChecks sub = new NcclCollectiveChecks(all, stream, seed + 1);
            sub.allReduce(NcclDataType.FLOAT32, NcclReduction.SUM, 1003, false);
            sub.allGather(NcclDataType.BFLOAT16, 517, true);
            checked += sub.checked;
        }
        var alone = comm.split(rank == 0 ? 7 : NcclCommunicator.SPLIT_NO_COLOR, 0);
        check(alone.isPresent() == (rank == 0), "split(rank 0 only): " + alone);
        if (alone.isPresent()) {
            try (NcclCommunicator one = alone.get()) {
                check(one.nranks() == 1 && one.rank() == 0, "rank 0 alone: " + one);
                NcclCollectiveChecks sub = new NcclCollectiveChecks(one, stream, seed + 2);
                sub.allReduce(NcclDataType.INT64, NcclReduction.MAX, 999, true);
                checked += sub.checked;
            }
        }
    }

    private static void check(boolean condition, String what) {
        if (!condition) {
            throw new AssertionError(what);
        }
    }
}
