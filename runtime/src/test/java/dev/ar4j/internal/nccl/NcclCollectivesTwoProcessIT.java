package dev.ar4j.internal.nccl;

import dev.ar4j.cuda.Cuda;
import dev.ar4j.cuda.GpuTestSupport;
import dev.ar4j.internal.platform.ChildJvm;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * NEEDS 2 GPUs (nvidia-h200-x2): NCCL world size 2, two JVMs, one GPU each (device = rank),
 * every collective, type and reduction exact against its definition ({@link NcclCollectivesPeerMain},
 * {@link NcclCollectiveChecks}). NCCL refuses two ranks on one GPU, so on a machine with one GPU
 * this test is skipped (an assumption, even under {@code -Dar4j.gpu.required=true}); with no GPU
 * it follows {@link GpuTestSupport#requireGpus}.
 */
@Tag("gpu")
class NcclCollectivesTwoProcessIT {

    @Test
    @Timeout(value = 600, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void everyCollectiveIsExactAcrossTwoGpus(@TempDir Path exchange) throws Exception {
        GpuTestSupport.requireGpus(1);
        int gpus = Cuda.deviceCount();
        Assumptions.assumeTrue(gpus >= 2, "needs 2 GPUs (one per NCCL rank; NCCL refuses two ranks on one GPU),"
                + " this machine has " + gpus + ": skipped; run it on nvidia-h200-x2");
        int nranks = 2;
        long seed = new SplittableRandom().nextLong();
        List<ChildJvm> children = new ArrayList<>();
        try {
            for (int rank = 0; rank < nranks; rank++) {
                children.add(ChildJvm.start(NcclCollectivesPeerMain.class,
                        List.of(String.valueOf(rank), String.valueOf(nranks), exchange.toString(), String.valueOf(seed)),
                        exchange.resolve("collectives-rank" + rank + ".log")));
            }
            for (int rank = 0; rank < nranks; rank++) {
                ChildJvm child = children.get(rank);
                int exit = child.await(540);
                String output = child.output();
                assertEquals(0, exit, child.name() + " failed (seed " + seed + "):\n" + output);
                assertTrue(output.contains("NCCL-COLLECTIVES-OK rank=" + rank), output);
            }
        } finally {
            children.forEach(ChildJvm::kill);
        }
    }
}
