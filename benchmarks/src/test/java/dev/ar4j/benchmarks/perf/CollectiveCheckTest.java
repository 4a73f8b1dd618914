package dev.ar4j.benchmarks.perf;

import dev.ar4j.DType;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The operations' names, nccl-tests' sizes and bus-bandwidth factors, the in-place layouts NCCL
 * defines, and the exact checks: a host simulation of each collective passes, one wrong element,
 * a rank's chunk in the wrong place or a poisoned element left behind is counted.
 */
class CollectiveCheckTest {
    private static final long SEED = 42;

    @Test
    void operationsParseAsNcclTestsNamesThemAndOtherNamesAreRefused() {
        assertEquals(Operation.ALL_REDUCE, Operation.parse("allreduce"));
        assertEquals(Operation.ALL_GATHER, Operation.parse("AllGather"));
        assertEquals(Operation.ALL_GATHER, Operation.parse("all_gather"));
        assertEquals(Operation.REDUCE_SCATTER, Operation.parse("reduce-scatter"));
        assertEquals(Operation.BROADCAST, Operation.parse("broadcast"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Operation.parse("alltoall"));
        assertTrue(e.getMessage().contains("alltoall") && e.getMessage().contains(Operation.ACCEPTED), e.getMessage());
        assertTrue(Operation.ALL_REDUCE.hasAr4jKernels());
        assertTrue(!Operation.ALL_GATHER.hasAr4jKernels() && !Operation.BROADCAST.hasAr4jKernels());
    }

    @Test
    void busBandwidthFactorsAreNcclTestsOnes() {
        assertEquals(1.0, Operation.ALL_REDUCE.busFactor(2), 1e-12);
        assertEquals(1.75, Operation.ALL_REDUCE.busFactor(8), 1e-12);
        assertEquals(0.5, Operation.ALL_GATHER.busFactor(2), 1e-12);
        assertEquals(0.875, Operation.ALL_GATHER.busFactor(8), 1e-12);
        assertEquals(0.75, Operation.REDUCE_SCATTER.busFactor(4), 1e-12);
        assertEquals(1.0, Operation.BROADCAST.busFactor(8), 1e-12);
        for (Operation op : Operation.values()) {
            assertEquals(1.0, op.busFactor(1), 1e-12, op + " on one rank");
        }
        assertThrows(IllegalArgumentException.class, () -> Operation.BROADCAST.busFactor(0));
        PerfResult gather = new PerfResult("sweep", "graph", "out-of-place", false, 4, 4_000_000, 2_000_000, "bf16",
                "nccl", "nccl", false, "", 10.0, 10.0, 0, Double.NaN, Double.NaN, 1, 50, 7, 5, "allgather", "default");
        assertEquals(400.0, gather.algbwGBps(), 1e-9);
        assertEquals(300.0, gather.busbwGBps(), 1e-9, "(n-1)/n of algbw");
    }

    @Test
    void sizesAreRoundedDownToWholeElementsPerRankAsNcclTestsDoes() {
        DType bf16 = DType.BFLOAT16;
        assertEquals(1020, Operation.ALL_GATHER.effectiveBytes(1024, 6, bf16), "6 ranks x 85 elements x 2 B");
        assertEquals(1024, Operation.BROADCAST.effectiveBytes(1024, 6, bf16));
        assertEquals(0, Operation.REDUCE_SCATTER.effectiveBytes(8, 8, bf16), "under one element per rank");
        CollectiveLayout ag = CollectiveLayout.of(Operation.ALL_GATHER, 1024, 4, 3, bf16, true);
        assertEquals(128, ag.count(), "sendCount");
        assertEquals(256, ag.sendBytes());
        assertEquals(1024, ag.receiveBytes());
        assertEquals(768, ag.sendOffset(), "send at receive + rank x sendBytes");
        assertEquals(0, ag.receiveOffset());
        CollectiveLayout rs = CollectiveLayout.of(Operation.REDUCE_SCATTER, 1024, 4, 2, bf16, true);
        assertEquals(128, rs.count(), "receiveCount");
        assertEquals(1024, rs.sendBytes());
        assertEquals(256, rs.receiveBytes());
        assertEquals(512, rs.receiveOffset(), "receive at send + rank x receiveBytes");
        CollectiveLayout outOfPlace = CollectiveLayout.of(Operation.REDUCE_SCATTER, 1024, 4, 2, bf16, false);
        assertEquals(0, outOfPlace.receiveOffset());
        assertThrows(IllegalArgumentException.class, () -> CollectiveLayout.of(Operation.ALL_GATHER, 1026, 4, 0, bf16,
                false), "not whole elements per rank");
        assertThrows(IllegalArgumentException.class, () -> CollectiveLayout.of(Operation.ALL_GATHER, 1024, 4, 4, bf16,
                false), "rank outside the world");
    }

    /** What each rank's receive data would hold after the collective, computed from every rank's send image. */
    private static MemorySegment simulate(Arena arena, CollectiveLayout me, DType dtype, boolean inPlace) {
        int n = me.worldSize();
        long effective = me.operation() == Operation.REDUCE_SCATTER ? me.sendBytes() : me.receiveBytes();
        MemorySegment[] sends = new MemorySegment[n];
        for (int r = 0; r < n; r++) {
            CollectiveLayout l = CollectiveLayout.of(me.operation(), effective, n, r, dtype, inPlace);
            MemorySegment image = arena.allocate(inPlace ? l.regionBytes() : l.sendBytes(), 16);
            CollectiveCheck.fillInput(image, l, dtype, SEED);
            sends[r] = image.asSlice(inPlace ? l.sendOffset() : 0, l.sendBytes());
        }
        long e = dtype.byteSize();
        long received = me.receiveBytes() / e;
        MemorySegment out = arena.allocate(me.receiveBytes(), 16);
        for (long i = 0; i < received; i++) {
            float v = switch (me.operation()) {
                case ALL_REDUCE -> sum(sends, dtype, i);
                case ALL_GATHER -> InputPattern.read(sends[(int) (i / me.count())], dtype, i % me.count());
                case REDUCE_SCATTER -> sum(sends, dtype, me.rank() * me.count() + i);
                case BROADCAST -> InputPattern.read(sends[Operation.ROOT], dtype, i);
            };
            InputPattern.write(out, dtype, i, v);
        }
        return out;
    }

    private static float sum(MemorySegment[] sends, DType dtype, long i) {
        float s = 0;
        for (MemorySegment send : sends) {
            s += InputPattern.read(send, dtype, i);
        }
        return s;
    }

    @Test
    void aSimulatedCollectiveIsExactAndEveryKindOfDamageIsCounted() {
        for (DType dtype : DType.values()) {
            for (Operation op : Operation.values()) {
                for (boolean inPlace : List.of(false, true)) {
                    for (int n : List.of(2, 8)) {
                        long bytes = op.effectiveBytes(6144, n, dtype);
                        for (int rank : List.of(0, n - 1)) {
                            String what = op + " " + dtype + " in place " + inPlace + " n " + n + " rank " + rank;
                            CollectiveLayout layout = CollectiveLayout.of(op, bytes, n, rank, dtype, inPlace);
                            try (Arena arena = Arena.ofConfined()) {
                                MemorySegment good = simulate(arena, layout, dtype, inPlace);
                                assertEquals(0, CollectiveCheck.countWrong(good, layout, dtype, SEED), what);
                                MemorySegment bad = arena.allocate(good.byteSize(), 16).copyFrom(good);
                                float v = InputPattern.read(bad, dtype, 3);
                                InputPattern.write(bad, dtype, 3, v + 1);
                                assertEquals(1, CollectiveCheck.countWrong(bad, layout, dtype, SEED), what + ": one off");
                                bad.copyFrom(good).asSlice(0, dtype.byteSize()).fill((byte) CollectiveCheck.POISON);
                                assertEquals(1, CollectiveCheck.countWrong(bad, layout, dtype, SEED), what + ": NaN left");
                                assertTrue(CollectiveCheck.countWrong(good, layout, dtype, SEED + 1) > 0,
                                        what + ": another seed's data is not accepted");
                            }
                        }
                    }
                }
            }
        }
    }

    @Test
    void inPlaceInputsLeavePoisonWhereOnlyOutputLies() {
        DType dtype = DType.FLOAT32;
        try (Arena arena = Arena.ofConfined()) {
            CollectiveLayout ag = CollectiveLayout.of(Operation.ALL_GATHER, 64, 4, 2, dtype, true);
            MemorySegment region = arena.allocate(ag.regionBytes(), 16);
            CollectiveCheck.fillInput(region, ag, dtype, SEED);
            assertTrue(Float.isNaN(InputPattern.read(region, dtype, 0)), "rank 0's chunk is poisoned");
            assertEquals((float) InputPattern.value(SEED, 2, 0), InputPattern.read(region, dtype, 8), "own chunk");
            assertTrue(Float.isNaN(InputPattern.read(region, dtype, 15)), "rank 3's chunk is poisoned");

            CollectiveLayout offRoot = CollectiveLayout.of(Operation.BROADCAST, 64, 4, 1, dtype, true);
            MemorySegment buffer = arena.allocate(offRoot.regionBytes(), 16);
            CollectiveCheck.fillInput(buffer, offRoot, dtype, SEED);
            for (long i = 0; i < 16; i++) {
                assertTrue(Float.isNaN(InputPattern.read(buffer, dtype, i)), "off the root, the buffer is only output");
            }
            assertEquals(16, CollectiveCheck.countWrong(buffer, offRoot, dtype, SEED), "an unwritten output is wrong");

            CollectiveLayout outOfPlace = CollectiveLayout.of(Operation.BROADCAST, 64, 4, 1, dtype, false);
            MemorySegment send = arena.allocate(outOfPlace.sendBytes(), 16);
            CollectiveCheck.fillInput(send, outOfPlace, dtype, SEED);
            assertEquals((float) InputPattern.value(SEED, 1, 5), InputPattern.read(send, dtype, 5),
                    "off the root a send holds the rank's own values: a copy of the wrong rank is caught");
            assertThrows(IllegalArgumentException.class, () -> CollectiveCheck.fillInput(send.asSlice(0, 8), outOfPlace,
                    dtype, SEED));
        }
    }
}
