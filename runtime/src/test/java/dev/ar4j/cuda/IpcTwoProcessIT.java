package dev.ar4j.cuda;

import dev.ar4j.internal.cuda.IpcBufferExport;

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
 * Two JVMs, one per GPU, exchange {@link IpcBufferExport}s through files; each opens the other's
 * buffer, reads the peer's data back exactly and closes the mapping once ({@link IpcPeerMain}).
 */
@Tag("gpu")
class IpcTwoProcessIT {

    @Test
    @Timeout(180)
    void eachProcessReadsThePeersBufferExactly(@TempDir Path exchange) throws Exception {
        GpuTestSupport.requireGpus(2);
        long ints = (16L << 20) / Integer.BYTES + 3; // 16 MiB and a ragged tail
        List<ChildJvm> children = new ArrayList<>();
        try {
            for (int rank = 0; rank < 2; rank++) {
                children.add(ChildJvm.start(IpcPeerMain.class,
                        List.of(String.valueOf(rank), exchange.toString(), String.valueOf(ints)),
                        exchange.resolve("rank" + rank + ".log")));
            }
            for (int rank = 0; rank < 2; rank++) {
                ChildJvm child = children.get(rank);
                int exit = child.await(150);
                String output = child.output();
                assertEquals(0, exit, child.name() + " failed:\n" + output);
                assertTrue(output.contains("IPC-OK rank=" + rank), output);
            }
        } finally {
            children.forEach(ChildJvm::kill);
        }
    }
}
