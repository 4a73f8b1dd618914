package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.*;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/** TcpRendezvous across real OS processes: each rank is a child JVM running {@link RendezvousChild}. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TcpRendezvousProcessTest {

    private static final long CHILD_WAIT_SECONDS = 40;

    @TempDir
    Path outputDir;

    private final List<Process> children = new ArrayList<>();

    /** A started child JVM and the file its stdout and stderr go to. */
    private record Child(int rank, Process process, Path output) {
        List<String> lines() throws IOException {
            return Files.readAllLines(output, StandardCharsets.UTF_8);
        }

        /** The lines the child printed as results (log lines on stderr are left out). */
        List<String> results() throws IOException {
            return lines().stream()
                    .filter(l -> l.matches("^(GATHER|BROADCAST|BARRIER|HOSTS|DONE|TIMEOUT|ERROR)\\b.*"))
                    .toList();
        }
    }

    @AfterEach
    void destroyChildren() {
        for (Process p : children) {
            p.destroyForcibly();
        }
        for (Process p : children) {
            try {
                p.waitFor(5, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private Child start(int port, int rank, int worldSize, String scenario, long timeoutMillis) throws IOException {
        String java = ProcessHandle.current().info().command()
                .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        Path output = outputDir.resolve("rank" + rank + "-" + System.nanoTime() + ".log");
        ProcessBuilder builder = new ProcessBuilder(java,
                "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx64m", "-XX:-UsePerfData",
                "-cp", System.getProperty("java.class.path"),
                RendezvousChild.class.getName(),
                Integer.toString(port), Integer.toString(rank), Integer.toString(worldSize), scenario,
                Long.toString(timeoutMillis))
                .redirectErrorStream(true)
                .redirectOutput(output.toFile());
        Process process = builder.start();
        children.add(process);
        return new Child(rank, process, output);
    }

    private static int await(Child child) throws Exception {
        if (!child.process().waitFor(CHILD_WAIT_SECONDS, TimeUnit.SECONDS)) {
            child.process().destroyForcibly();
            fail("rank " + child.rank() + " did not exit within " + CHILD_WAIT_SECONDS + " s; it printed:\n"
                    + String.join("\n", child.lines()));
        }
        return child.process().exitValue();
    }

    private static void assertExit(int expected, Child child, int actual) throws IOException {
        assertEquals(expected, actual, () -> "exit code of rank " + child.rank() + "; it printed:\n"
                + String.join("\n", safeLines(child)));
    }

    private static List<String> safeLines(Child child) {
        try {
            return child.lines();
        } catch (IOException e) {
            return List.of("(output unreadable: " + e + ")");
        }
    }

    @Test
    void allGatherBroadcastBarrierAcrossThreeProcesses() throws Exception {
        int port = TcpRendezvousTest.freeLoopbackPort();
        // The clients start first and retry until rank 0, which serves, is up.
        Child rank2 = start(port, 2, 3, "collectives", 20_000);
        Child rank1 = start(port, 1, 3, "collectives", 20_000);
        Thread.sleep(200);
        Child rank0 = start(port, 0, 3, "collectives", 20_000);
        for (Child child : List.of(rank0, rank1, rank2)) {
            assertExit(0, child, await(child));
            assertEquals(List.of(
                    "GATHER id0,id1,id2",
                    "BROADCAST config-of-rank-1",
                    "BARRIER passed",
                    "GATHER again0,again1,again2",
                    "HOSTS 1 [0, 1, 2]",
                    "DONE"), child.results(), "results of rank " + child.rank());
        }
    }

    @Test
    void aRankThatNeverArrivesIsNamedByTheOthersTimeouts() throws Exception {
        int port = TcpRendezvousTest.freeLoopbackPort();
        Child rank0 = start(port, 0, 3, "gather", 1_500);
        Child rank1 = start(port, 1, 3, "gather", 1_500);
        for (Child child : List.of(rank0, rank1)) {
            assertExit(3, child, await(child));
            List<String> results = child.results();
            assertEquals(1, results.size(), () -> "rank " + child.rank() + " printed " + safeLines(child));
            String line = results.getFirst();
            assertTrue(line.startsWith("TIMEOUT key=ids missing=[2] |"), line);
            assertTrue(line.contains("allGather 'ids'") && line.contains("rank 2 never arrived"), line);
        }
    }

    @Test
    void aRankWithAnotherWorldSizeGetsTheServersReason() throws Exception {
        int port = TcpRendezvousTest.freeLoopbackPort();
        Child rank0 = start(port, 0, 2, "barrier", 1_500);
        Child misconfigured = start(port, 1, 3, "barrier", 1_500);
        assertExit(4, misconfigured, await(misconfigured));
        String error = misconfigured.results().getFirst();
        assertTrue(error.startsWith("ERROR ") && error.contains("rank 1 says world size 3, server expects 2"), error);
        // The group cannot form: rank 0 is told why at once instead of waiting out its timeout.
        assertExit(4, rank0, await(rank0));
        String refused = rank0.results().getFirst();
        assertTrue(refused.startsWith("ERROR ") && refused.contains("the group cannot form: rank 1 says world size 3,"
                + " server expects 2"), refused);
    }
}
