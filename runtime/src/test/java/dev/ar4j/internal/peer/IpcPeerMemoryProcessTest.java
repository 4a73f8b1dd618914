package dev.ar4j.internal.peer;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The IPC exchange protocol across real OS processes (three JVMs, TCP rendezvous), with opaque
 * handle bytes instead of CUDA: pointers in the middle of an allocation, the per-(rank, handle)
 * cache, close-once, and ranks that disagree on a buffer's size.
 */
class IpcPeerMemoryProcessTest {

    @Test
    void threeProcessesExchangePointersThroughOpaqueHandles() throws Exception {
        List<String> out = runRanks(3, new long[] {8192, 8192, 8192});
        for (int r = 0; r < 3; r++) {
            assertEquals("OK rank " + r + " opens 4 closes 4", out.get(r), "rank " + r);
        }
    }

    @Test
    void ranksThatDisagreeOnASizeAreToldWhich() throws Exception {
        List<String> out = runRanks(2, new long[] {8192, 4096});
        for (int r = 0; r < 2; r++) {
            String line = out.get(r);
            assertTrue(line.startsWith("ERROR ranks disagree on the size of shared buffer 1"), line);
            assertTrue(line.contains("8192") && line.contains("4096"), line);
        }
    }

    private static List<String> runRanks(int worldSize, long[] secondSizes) throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        String java = ProcessHandle.current().info().command().orElseThrow();
        List<Process> processes = new ArrayList<>();
        try {
            for (int r = 0; r < worldSize; r++) {
                processes.add(new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
                        IpcExchangeChild.class.getName(), String.valueOf(r), String.valueOf(worldSize),
                        String.valueOf(port), String.valueOf(secondSizes[r])).redirectErrorStream(true).start());
            }
            List<String> lastLines = new ArrayList<>();
            for (Process p : processes) {
                assertTrue(p.waitFor(60, TimeUnit.SECONDS), "a rank did not finish in 60 s");
                lastLines.add(lastLine(p));
            }
            return lastLines;
        } finally {
            processes.forEach(Process::destroyForcibly);
        }
    }

    private static String lastLine(Process p) throws IOException {
        String all = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        String[] lines = all.split("\n");
        return lines[lines.length - 1].strip();
    }
}
