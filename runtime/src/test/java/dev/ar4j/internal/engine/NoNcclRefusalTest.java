package dev.ar4j.internal.engine;

import dev.ar4j.DType;
import dev.ar4j.nccl.NcclDisabledException;
import dev.ar4j.dispatch.Algorithm;
import dev.ar4j.dispatch.AllReduceDispatcher;
import dev.ar4j.dispatch.Decision;
import dev.ar4j.dispatch.DispatchConfig;
import dev.ar4j.dispatch.Topology;
import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.Properties;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A group built with {@code nccl(false)} refuses what the dispatcher would send to NCCL, naming
 * the size, the dtype and the dispatcher's reason (the call site throws exactly this).
 */
class NoNcclRefusalTest {

    private final AllReduceDispatcher twoRanksOneGpu = AllReduceDispatcher.of(new Topology(2, true, true, true),
            DispatchConfig.builder().environment(Map.of()).systemProperties(new Properties()).build(), 1 << 20);

    @Test
    void oddSizesNeedNcclAndAreRefusedWithTheReason() {
        Decision d = twoRanksOneGpu.decide(1000, DType.BFLOAT16, true, false);  // not a multiple of 16 bytes
        assertEquals(Algorithm.NCCL, d.algorithm());
        NcclDisabledException e = Dispatchers.ncclRefusal(1, 1000, DType.BFLOAT16, d);
        assertTrue(e.getMessage().contains("1000 bytes") && e.getMessage().contains("BFLOAT16")
                && e.getMessage().contains("nccl(false)") && e.getMessage().contains(d.reason())
                && e.getMessage().contains("rank 1"), e.getMessage());
    }

    @Test
    void sizesBeyondTheStagingBufferNeedNcclToo() {
        Decision d = twoRanksOneGpu.decide(64L << 20, DType.FLOAT32, true, false);
        assertEquals(Algorithm.NCCL, d.algorithm());
        assertTrue(Dispatchers.ncclRefusal(0, 64L << 20, DType.FLOAT32, d).getMessage().contains(String.valueOf(64L << 20)));
    }

    @Test
    void sizesTheKernelsTakeNeedNoNccl() {
        assertEquals(Algorithm.PUSH, twoRanksOneGpu.decide(43008, DType.BFLOAT16, true, false).algorithm());
    }
}
