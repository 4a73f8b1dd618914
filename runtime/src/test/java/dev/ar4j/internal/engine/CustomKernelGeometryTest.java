package dev.ar4j.internal.engine;

import dev.ar4j.OutOfStepException;
import dev.ar4j.internal.kernels.CustomAllReduceKernels;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The launch geometry every rank derives from the gathered records: the grid leaves room for
 * every rank that runs on a GPU at the same time, a split's sibling sub-groups included.
 */
class CustomKernelGeometryTest {

    private static byte[] record(int sms, int blocks, int threads, int ranksPerGpuAtLeast) {
        return ByteBuffer.allocate(16).putInt(sms).putInt(blocks).putInt(threads).putInt(ranksPerGpuAtLeast).array();
    }

    @Test
    void theDefaultGridIsTheSmallestSmCountDividedByTheRanksOnTheBusiestGpu() {
        byte[][] all = {record(132, -1, -1, 1), record(132, -1, -1, 1)};
        CustomKernelPath.Geometry two = CustomKernelPath.geometryOf(all, 0, -1, -1, 2);
        assertEquals(66, two.maxBlocks());
        assertEquals(512, two.threads());
        assertEquals(2, two.ranksPerGpu());
        byte[][] mixed = {record(132, -1, -1, 1), record(114, -1, -1, 1)};
        assertEquals(Math.min(CustomAllReduceKernels.MAX_BLOCKS, 114),
                CustomKernelPath.geometryOf(mixed, 1, -1, -1, 1).maxBlocks(), "one block per SM of the smallest GPU");
    }

    @Test
    void aSplitChildSizesItsGridForAllOfItsParentsRanksOnTheGpu() {
        // Four parent ranks on one GPU split into two sub-groups of two: each child group has two
        // ranks on the GPU, but both sub-groups run at once, so the grid is 132 / 4, not 132 / 2.
        byte[][] child = {record(132, -1, -1, 4), record(132, -1, -1, 4)};
        CustomKernelPath.Geometry g = CustomKernelPath.geometryOf(child, 0, -1, -1, 2);
        assertEquals(33, g.maxBlocks());
        assertEquals(4, g.ranksPerGpu());
        // The largest value any rank sends wins, so that every rank computes the same grid.
        byte[][] uneven = {record(132, -1, -1, 1), record(132, -1, -1, 3)};
        assertEquals(44, CustomKernelPath.geometryOf(uneven, 0, -1, -1, 1).maxBlocks());
        assertEquals(44, CustomKernelPath.geometryOf(uneven, 1, -1, -1, 1).maxBlocks());
    }

    @Test
    void anExplicitLaunchConfigIsKeptAndMustBeTheSameOnEveryRank() {
        byte[][] same = {record(132, 20, 256, 4), record(132, 20, 256, 4)};
        CustomKernelPath.Geometry g = CustomKernelPath.geometryOf(same, 0, 20, 256, 2);
        assertEquals(20, g.maxBlocks());
        assertEquals(256, g.threads());
        byte[][] differ = {record(132, 20, 256, 1), record(132, 30, 256, 1)};
        OutOfStepException e = assertThrows(OutOfStepException.class,
                () -> CustomKernelPath.geometryOf(differ, 0, 20, 256, 1));
        assertTrue(e.getMessage().contains("rank 1 has (30, 256)"), e.getMessage());
    }

    @Test
    void aMalformedOrInvalidRecordNamesItsRank() {
        byte[][] shortRecord = {record(132, -1, -1, 1), new byte[12]};
        OutOfStepException e = assertThrows(OutOfStepException.class,
                () -> CustomKernelPath.geometryOf(shortRecord, 0, -1, -1, 1));
        assertTrue(e.getMessage().contains("rank 1 sent a malformed launch-geometry record (12 bytes"), e.getMessage());
        byte[][] zero = {record(132, -1, -1, 1), record(132, -1, -1, 0)};
        e = assertThrows(OutOfStepException.class, () -> CustomKernelPath.geometryOf(zero, 0, -1, -1, 1));
        assertTrue(e.getMessage().contains("rank 1 sent an invalid launch-geometry record"), e.getMessage());
    }
}
