package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.*;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The server's memory budget in total: a SET that does not fit is refused naming the budget; GET
 * replies are streamed from the stored values, so three ranks gathering 48 MiB each at once from a
 * server with a 256 MiB heap succeed (built whole, with the copy that sealing made, the three
 * replies needed 288 MiB besides the 48 MiB stored); and where the budget was set above the heap, the {@link OutOfMemoryError} is answered
 * with a named error and the rank's connection goes on.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TcpRendezvousMemoryBudgetTest {

    private static final String SECRET = "memory-budget-test-secret";
    private static final JobToken TOKEN = JobToken.of(SECRET);
    private static final int MIB = 1 << 20;
    private static final int VALUE = 16 * MIB - 1024;
    /** A server near the end of its heap collects often: a heartbeat timeout that its pauses do not trip. */
    private static final RendezvousSettings CHILD_SETTINGS = RendezvousSettings.resolve(new java.util.Properties(),
            java.util.Map.of()).withHeartbeat(Duration.ofMillis(500), Duration.ofSeconds(10));

    @TempDir
    Path outputDir;

    @Test
    void aSetBeyondTheServersBudgetIsRefusedNamingIt() throws Exception {
        RendezvousSettings settings = RendezvousSettings.resolve(new java.util.Properties(), java.util.Map.of())
                .withQuota(1_000, 256L * MIB).withMaxServerBytes(56L * MIB);
        try (TcpRendezvousServer server = TcpRendezvousServer.start(
                new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 2, TOKEN, settings);
             TcpRendezvous rank0 = rank(0, 2, server.port(), settings);
             TcpRendezvous rank1 = rank(1, 2, server.port(), settings)) {
            byte[] a = filled(VALUE, 1);
            rank0.set("a", a);
            rank1.set("b", filled(VALUE, 2));
            RendezvousRefusedException e = assertThrows(RendezvousRefusedException.class,
                    () -> rank0.set("c", filled(VALUE, 3)));
            // A SET costs its frame and its stored copy while it is served: 16 + 16 stored, then 16 + 16 for the third.
            assertTrue(e.getMessage().contains("memory budget has no room") && e.getMessage().contains("of its 58720256 bytes")
                    && e.getMessage().contains("ar4j.rdzv.maxServerBytes"), e.getMessage());
            assertTrue(server.budget().used() <= 56L * MIB, server.budget().used() + " bytes charged");
            assertArrayEquals(a, rank1.get("a", Duration.ofSeconds(5)), "the refused rank's connection went on");
            assertArrayEquals(a, rank0.get("a", Duration.ofSeconds(5)));
        }
    }

    @Test
    @EnabledOnOs(OS.LINUX)
    void repliesAreStreamedSoGatheringMoreThanTheHeapSucceeds() throws Exception {
        Process server = serverJvm("256m", 128L * MIB, 3);
        try {
            int port = awaitPort(server);
            List<TcpRendezvous> ranks = new ArrayList<>();
            try (java.util.concurrent.ExecutorService threads = java.util.concurrent.Executors.newVirtualThreadPerTaskExecutor()) {
                for (int r = 0; r < 3; r++) {
                    ranks.add(rank(r, 3, port, CHILD_SETTINGS));
                }
                List<CompletableFuture<byte[][]>> gathers = new ArrayList<>();
                for (TcpRendezvous rank : ranks) {
                    gathers.add(CompletableFuture.supplyAsync(
                            () -> rank.allGather("big", filled(VALUE, rank.rank() + 1), Duration.ofSeconds(30)), threads));
                }
                for (CompletableFuture<byte[][]> gather : gathers) {
                    byte[][] all = gather.get(40, TimeUnit.SECONDS);
                    for (int r = 0; r < 3; r++) {
                        assertArrayEquals(filled(VALUE, r + 1), all[r], "value of rank " + r);
                    }
                }
            } finally {
                ranks.forEach(TcpRendezvous::close);
            }
        } catch (Exception | AssertionError e) {
            throw new AssertionError(e + "\nserver log:\n" + log(), e);
        } finally {
            stop(server);
        }
        assertFalse(log().contains("OutOfMemoryError"), log());
    }

    @Test
    @EnabledOnOs(OS.LINUX)
    void anOutOfMemoryErrorIsAnsweredWithANamedErrorAndTheConnectionGoesOn() throws Exception {
        Process server = serverJvm("64m", 1L << 30, 1); // a budget above the heap: misconfigured on purpose
        try {
            int port = awaitPort(server);
            try (TcpRendezvous rank = rank(0, 1, port, CHILD_SETTINGS)) {
                byte[] first = filled(VALUE, 1);
                rank.set("k0", first);
                RendezvousRefusedException refused = null;
                for (int i = 1; i < 8 && refused == null; i++) {
                    try {
                        rank.set("k" + i, filled(VALUE, i + 1));
                    } catch (RendezvousRefusedException e) {
                        refused = e;
                    }
                }
                if (refused == null) {
                    fail("eight 16 MiB values fit a 64 MiB heap?\n" + log());
                }
                assertTrue(refused.getMessage().contains("ran out of memory (OutOfMemoryError)")
                        && refused.getMessage().contains("-Xmx"), refused.getMessage());
                assertArrayEquals(first, rank.get("k0", Duration.ofSeconds(10)), "the connection did not go on");
            }
        } catch (Exception | AssertionError e) {
            throw new AssertionError(e + "\nserver log:\n" + log(), e);
        } finally {
            stop(server);
        }
        assertFalse(log().contains("Exception in thread"), log());
    }

    private Process serverJvm(String heap, long budget, int worldSize) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String classPath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        ProcessBuilder builder = new ProcessBuilder(java, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx" + heap,
                "-XX:-UsePerfData", "-Dar4j.rdzv.heartbeatInterval=500", "-Dar4j.rdzv.heartbeatTimeout=10000",
                "-Dar4j.rdzv.maxServerBytes=" + budget, "-Dar4j.rdzv.maxBytesPerRank=" + (1L << 30),
                "-cp", classPath, ServerChild.class.getName(), String.valueOf(worldSize))
                .redirectErrorStream(true).redirectOutput(outputDir.resolve("server.log").toFile());
        builder.environment().put(JobToken.AR4J_RDZV_TOKEN, SECRET);
        return builder.start();
    }

    private String log() throws Exception {
        return Files.readString(outputDir.resolve("server.log"), StandardCharsets.UTF_8);
    }

    private int awaitPort(Process server) throws Exception {
        Pattern port = Pattern.compile("^PORT (\\d+)$", Pattern.MULTILINE);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline && server.isAlive()) {
            Matcher m = port.matcher(Files.exists(outputDir.resolve("server.log")) ? log() : "");
            if (m.find()) {
                return Integer.parseInt(m.group(1));
            }
            Thread.sleep(20);
        }
        fail("the server JVM printed no port:\n" + log());
        return -1;
    }

    private static void stop(Process server) throws Exception {
        server.getOutputStream().close();
        if (!server.waitFor(10, TimeUnit.SECONDS)) {
            server.destroyForcibly();
        }
    }

    private static TcpRendezvous rank(int rank, int worldSize, int port, RendezvousSettings settings) {
        return TcpRendezvous.builder().rank(rank).worldSize(worldSize).serve(false).serverPort(port).token(TOKEN)
                .settings(settings).connectTimeout(Duration.ofSeconds(20)).closeLinger(Duration.ZERO).connect();
    }

    private static byte[] filled(int length, int value) {
        byte[] bytes = new byte[length];
        Arrays.fill(bytes, (byte) value);
        bytes[length - 1] = (byte) (value * 7);
        return bytes;
    }
}
