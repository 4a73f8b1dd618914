package dev.ar4j.internal.nccl;

import dev.ar4j.nccl.NcclUnsupportedException;
import dev.ar4j.nccl.NcclDataType;
import dev.ar4j.nccl.NcclReduction;
import dev.ar4j.nccl.NcclVersion;
import dev.ar4j.nccl.NcclWindow;
import dev.ar4j.nccl.Nccl;
import dev.ar4j.DType;
import dev.ar4j.bindings.nccl.ncclConfig_v23000;
import dev.ar4j.bindings.nccl.nccl_h;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Map;
import java.util.function.IntSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Data types, reductions, versions and the gating of what an NCCL version lacks: no library needed. */
class NcclTypesTest {
    private static final IntSupplier HOPPER = () -> 9;
    private static final IntSupplier AMPERE = () -> 8;

    @Test
    void dataTypeCodesAreTheHeadersValues() {
        Map<NcclDataType, Integer> header = Map.ofEntries(
                Map.entry(NcclDataType.INT8, nccl_h.ncclInt8()), Map.entry(NcclDataType.UINT8, nccl_h.ncclUint8()),
                Map.entry(NcclDataType.INT32, nccl_h.ncclInt32()), Map.entry(NcclDataType.UINT32, nccl_h.ncclUint32()),
                Map.entry(NcclDataType.INT64, nccl_h.ncclInt64()), Map.entry(NcclDataType.UINT64, nccl_h.ncclUint64()),
                Map.entry(NcclDataType.FLOAT16, nccl_h.ncclFloat16()), Map.entry(NcclDataType.FLOAT32, nccl_h.ncclFloat32()),
                Map.entry(NcclDataType.FLOAT64, nccl_h.ncclFloat64()), Map.entry(NcclDataType.BFLOAT16, nccl_h.ncclBfloat16()),
                Map.entry(NcclDataType.FLOAT8_E4M3, nccl_h.ncclFloat8e4m3()),
                Map.entry(NcclDataType.FLOAT8_E5M2, nccl_h.ncclFloat8e5m2()));
        assertEquals(nccl_h.ncclNumTypes(), NcclDataType.values().length, "every NCCL type has a constant");
        for (NcclDataType type : NcclDataType.values()) {
            assertEquals(header.get(type), type.code(), type.name());
        }
        assertEquals(1, NcclDataType.FLOAT8_E5M2.byteSize());
        assertEquals(8, NcclDataType.UINT64.byteSize());
        assertEquals(2, NcclDataType.BFLOAT16.byteSize());
        assertTrue(NcclDataType.FLOAT8_E4M3.isFloat8() && NcclDataType.FLOAT8_E4M3.isFloatingPoint());
        assertFalse(NcclDataType.INT64.isFloatingPoint());
        assertEquals("ncclBfloat16", NcclDataType.BFLOAT16.ncclName());
    }

    @Test
    void communicatorConstantsAreTheHeadersValues() {
        assertEquals(nccl_h.NCCL_WIN_DEFAULT(), NcclWindow.DEFAULT);
        assertEquals(nccl_h.NCCL_WIN_COLL_SYMMETRIC(), NcclWindow.COLLECTIVE_SYMMETRIC);
        assertEquals(nccl_h.NCCL_WIN_STRICT_ORDERING(), NcclWindow.STRICT_ORDERING);
        assertEquals(nccl_h.NCCL_SPLIT_NOCOLOR(), NcclCommunicator.SPLIT_NO_COLOR);
        for (int code : new int[]{0, 1, 2, 3, 4, 5, 6, 7, 8}) {
            assertEquals(code, new int[]{nccl_h.ncclSuccess(), nccl_h.ncclUnhandledCudaError(), nccl_h.ncclSystemError(),
                    nccl_h.ncclInternalError(), nccl_h.ncclInvalidArgument(), nccl_h.ncclInvalidUsage(),
                    nccl_h.ncclRemoteError(), nccl_h.ncclInProgress(), nccl_h.ncclTimeout()}[code]);
        }
        assertEquals(nccl_h.ncclInProgress(), NcclErrors.IN_PROGRESS);
        assertEquals("ncclInProgress", NcclErrors.resultName(NcclErrors.IN_PROGRESS));
    }

    @Test
    void reductionCodesAreTheHeadersValues() {
        assertEquals(nccl_h.ncclNumOps(), NcclReduction.values().length);
        assertEquals(nccl_h.ncclSum(), NcclReduction.SUM.code());
        assertEquals(nccl_h.ncclProd(), NcclReduction.PROD.code());
        assertEquals(nccl_h.ncclMax(), NcclReduction.MAX.code());
        assertEquals(nccl_h.ncclMin(), NcclReduction.MIN.code());
        assertEquals(nccl_h.ncclAvg(), NcclReduction.AVG.code());
    }

    @Test
    void ar4jDTypesMapToTheirNcclNamesakes() {
        assertEquals(NcclDataType.FLOAT32, NcclDataType.of(DType.FLOAT32));
        assertEquals(NcclDataType.FLOAT16, NcclDataType.of(DType.FLOAT16));
        assertEquals(NcclDataType.BFLOAT16, NcclDataType.of(DType.BFLOAT16));
        for (DType dtype : DType.values()) {
            assertEquals(dtype.byteSize(), NcclDataType.of(dtype).byteSize());
        }
        assertThrows(NullPointerException.class, () -> NcclDataType.of(null));
    }

    @Test
    void versionsReadBothEncodingsAndCompare() {
        assertEquals(new NcclVersion(2, 30, 7), NcclVersion.fromCode(23007));
        assertEquals(new NcclVersion(2, 7, 8), NcclVersion.fromCode(2708));
        assertEquals(22400, new NcclVersion(2, 24, 0).code());
        assertEquals("2.18.3", new NcclVersion(2, 18, 3).toString());
        assertTrue(new NcclVersion(2, 24, 0).atLeast(new NcclVersion(2, 24, 0)));
        assertTrue(new NcclVersion(2, 24, 0).atLeast(NcclVersion.fromCode(2708)));
        assertFalse(new NcclVersion(2, 23, 4).atLeast(new NcclVersion(2, 24, 0)));
        assertThrows(IllegalArgumentException.class, () -> NcclVersion.fromCode(-1));
        assertThrows(IllegalArgumentException.class, () -> new NcclVersion(2, 100, 0));
    }

    @Test
    void fp8NeedsNccl224() {
        NcclSupport old = new NcclSupport(new NcclVersion(2, 23, 4));
        for (NcclDataType fp8 : new NcclDataType[]{NcclDataType.FLOAT8_E4M3, NcclDataType.FLOAT8_E5M2}) {
            NcclUnsupportedException e = assertThrows(NcclUnsupportedException.class,
                    () -> old.requireType(fp8, "ncclAllGather", "on rank 1 of 2"));
            assertEquals("ncclAllGather on rank 1 of 2: " + fp8.ncclName() + " needs NCCL 2.24.0 or newer; the loaded"
                    + " NCCL is 2.23.4. Load a newer libnccl (ar4j.nccl.path or AR4J_NCCL_PATH chooses it) or use another"
                    + " data type", e.getMessage());
            assertEquals(new NcclVersion(2, 23, 4), e.installed());
            assertEquals(new NcclVersion(2, 24, 0), e.required());
            assertEquals("ncclInvalidArgument", e.resultName());
            assertThrows(NcclUnsupportedException.class,
                    () -> old.requireReduction(fp8, NcclReduction.SUM, HOPPER, "ncclAllReduce", "on rank 0 of 2"));
        }
        NcclSupport current = new NcclSupport(new NcclVersion(2, 24, 3));
        current.requireType(NcclDataType.FLOAT8_E4M3, "ncclAllGather", "");
        for (NcclReduction op : NcclReduction.values()) {
            current.requireReduction(NcclDataType.FLOAT8_E5M2, op, HOPPER, "ncclAllReduce", "");
        }
    }

    @Test
    void fp8ReductionsNeedComputeCapability90ButGathersDoNot() {
        NcclSupport support = new NcclSupport(new NcclVersion(2, 30, 7));
        NcclUnsupportedException e = assertThrows(NcclUnsupportedException.class, () -> support.requireReduction(
                NcclDataType.FLOAT8_E4M3, NcclReduction.MAX, AMPERE, "ncclReduceScatter", "on rank 0 of 4"));
        assertTrue(e.getMessage().startsWith("ncclReduceScatter on rank 0 of 4: NCCL reduces ncclFloat8e4m3 (ncclMax)"
                + " only on GPUs of compute capability 9.0 or newer; this one is 8.x"), e.getMessage());
        support.requireType(NcclDataType.FLOAT8_E4M3, "ncclAllGather", "");
        IntSupplier never = () -> {
            throw new AssertionError("the compute capability is asked only for fp8");
        };
        support.requireReduction(NcclDataType.BFLOAT16, NcclReduction.SUM, never, "ncclAllReduce", "");
    }

    @Test
    void avgAndBfloat16NeedNccl210() {
        NcclSupport old = new NcclSupport(new NcclVersion(2, 9, 9));
        NcclUnsupportedException avg = assertThrows(NcclUnsupportedException.class,
                () -> old.requireReduction(NcclDataType.FLOAT32, NcclReduction.AVG, HOPPER, "ncclAllReduce", ""));
        assertTrue(avg.getMessage().startsWith("ncclAllReduce: ncclAvg needs NCCL 2.10.0 or newer; the loaded NCCL is 2.9.9"),
                avg.getMessage());
        assertThrows(NcclUnsupportedException.class, () -> old.requireType(NcclDataType.BFLOAT16, "ncclBroadcast", ""));
        for (NcclReduction op : new NcclReduction[]{NcclReduction.SUM, NcclReduction.PROD, NcclReduction.MAX,
                NcclReduction.MIN}) {
            old.requireReduction(NcclDataType.FLOAT16, op, HOPPER, "ncclAllReduce", "");
        }
    }

    @Test
    void nonBlockingConfigIsTheInitializerWithBlockingZero() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment config = NcclCommInit.nonBlockingConfig(arena);
            assertEquals(ncclConfig_v23000.layout().byteSize(), ncclConfig_v23000.size(config));
            assertEquals(0xcafebeef, ncclConfig_v23000.magic(config));
            assertEquals(nccl_h.NCCL_VERSION_CODE(), ncclConfig_v23000.version(config));
            assertEquals(0, ncclConfig_v23000.blocking(config));
            int undefined = nccl_h.NCCL_CONFIG_UNDEF_INT();
            assertEquals(Integer.MIN_VALUE, undefined);
            assertEquals(undefined, ncclConfig_v23000.cgaClusterSize(config));
            assertEquals(undefined, ncclConfig_v23000.splitShare(config));
            assertEquals(undefined, ncclConfig_v23000.maxP2pPeers(config));
            assertEquals(undefined, config.get(ValueLayout.JAVA_INT,
                    ncclConfig_v23000.layout().byteSize() - Integer.BYTES), "the last field, graphStreamOrdering");
            assertEquals(0, ncclConfig_v23000.netName(config).address());
            assertEquals(0, ncclConfig_v23000.commName(config).address());
        }
    }
}
