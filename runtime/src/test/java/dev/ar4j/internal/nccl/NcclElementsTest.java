package dev.ar4j.internal.nccl;

import dev.ar4j.nccl.NcclDataType;
import dev.ar4j.nccl.NcclVersion;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The GPU tests' host encoding is right: known bit patterns, round trips, refusals of inexact values. */
class NcclElementsTest {

    @Test
    void float8BitPatternsAreTheStandardOnes() {
        assertEquals((byte) 0x38, NcclElements.float8(1.0, 4, 3, NcclDataType.FLOAT8_E4M3));
        assertEquals((byte) 0x3c, NcclElements.float8(1.0, 5, 2, NcclDataType.FLOAT8_E5M2));
        assertEquals((byte) 0xc0, NcclElements.float8(-2.0, 4, 3, NcclDataType.FLOAT8_E4M3));
        assertEquals((byte) 0x51, NcclElements.float8(9.0, 4, 3, NcclDataType.FLOAT8_E4M3), "0 1010 001: 1.001b x 2^3");
        assertEquals(448.0, NcclElements.float8((byte) 0x7e, 4, 3), "e4m3's largest finite value");
        assertEquals(57344.0, NcclElements.float8((byte) 0x7b, 5, 2), "e5m2's largest finite value");
        assertEquals(Math.scalb(1.0, -9), NcclElements.float8((byte) 0x01, 4, 3), "e4m3's smallest subnormal");
        assertThrows(IllegalArgumentException.class, () -> NcclElements.float8(9.0, 5, 2, NcclDataType.FLOAT8_E5M2));
    }

    @Test
    void everyTypeRoundTripsSmallIntegersAndHalves() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate(64);
            for (NcclDataType type : NcclDataType.values()) {
                double[] values = type.isFloatingPoint() ? new double[]{0, 1, -1, 0.5, -1.5, 3, 6, -8}
                        : type.name().startsWith("U") ? new double[]{0, 1, 7, 64} : new double[]{0, -1, 7, -64};
                for (double v : values) {
                    NcclElements.encode(type, host, 3, v);
                    assertEquals(v, NcclElements.decode(type, host, 3), type + " " + v);
                }
            }
            NcclElements.encode(NcclDataType.BFLOAT16, host, 0, 1.0);
            assertEquals((short) 0x3f80, host.get(ValueLayout.JAVA_SHORT_UNALIGNED, 0));
            NcclElements.encode(NcclDataType.FLOAT16, host, 0, 1.0);
            assertEquals((short) 0x3c00, host.get(ValueLayout.JAVA_SHORT_UNALIGNED, 0));
            assertThrows(IllegalArgumentException.class, () -> NcclElements.encode(NcclDataType.INT32, host, 0, 0.5));
            assertThrows(IllegalArgumentException.class, () -> NcclElements.encode(NcclDataType.UINT8, host, 0, -1));
            assertThrows(IllegalArgumentException.class, () -> NcclElements.encode(NcclDataType.BFLOAT16, host, 0, 257));
        }
    }

    @Test
    void theGpuChecksReferencesAreExactInEveryTypeForOneTwoAndFourRanks() {
        for (int nranks : new int[]{1, 2, 4}) {
            FakeNcclCalls nccl = new FakeNcclCalls();
            NcclCommunicator comm = NcclCommInit.nonBlocking(nccl, new NcclSupport(new NcclVersion(2, 30, 7)),
                    NcclUniqueId.fromBytes(new byte[NcclUniqueId.BYTES]), nranks, nranks - 1, Duration.ofSeconds(1),
                    () -> false);
            new NcclCollectiveChecks(comm, null, 0x5eed + nranks).requireExactReferences(40, 257);
        }
    }
}
