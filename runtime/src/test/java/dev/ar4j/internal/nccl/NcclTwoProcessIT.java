package dev.ar4j.internal.nccl;

import dev.ar4j.cuda.GpuTestSupport;
import dev.ar4j.internal.platform.ChildJvm;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * NCCL across two GPUs from Java: two JVMs, the unique id passed through a file, all-reduces whose
 * integer-valued inputs make every sum exact ({@link NcclPeerMain}).
 */
@Tag("gpu")
class NcclTwoProcessIT {

    @Test
    @Timeout(240)
    void allReduceIsExactForFp32Fp16AndBf16(@TempDir Path exchange) throws Exception {
        runRanks(exchange, "allreduce");
    }

    @Test
    @Timeout(240)
    void allReduceInASymmetricWindowIsExact(@TempDir Path exchange) throws Exception {
        runRanks(exchange, "window");
    }

    private static void runRanks(Path exchange, String phase) throws Exception {
        GpuTestSupport.requireGpus(2);
        int nranks = 2;
        List<ChildJvm> children = new ArrayList<>();
        try {
            for (int rank = 0; rank < nranks; rank++) {
                children.add(ChildJvm.start(NcclPeerMain.class,
                        List.of(String.valueOf(rank), String.valueOf(nranks), exchange.toString(), phase),
                        exchange.resolve(phase + "-rank" + rank + ".log")));
            }
            for (int rank = 0; rank < nranks; rank++) {
                ChildJvm child = children.get(rank);
                int exit = child.await(200);
                String output = child.output();
                assertEquals(0, exit, child.name() + " failed:\n" + output);
                assertTrue(output.contains("NCCL-OK rank=" + rank + " phase=" + phase), output);
            }
        } finally {
            children.forEach(ChildJvm::kill);
        }
    }
}
