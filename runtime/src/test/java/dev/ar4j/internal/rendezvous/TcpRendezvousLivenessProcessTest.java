package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.*;

import dev.ar4j.PeerLostException;
import dev.ar4j.rendezvous.RendezvousSettings;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * A rank JVM killed with SIGKILL or stopped with SIGSTOP while the others wait in an all-gather:
 * every survivor raises a {@link PeerLostException} naming it, within 1 s of the kill and within
 * the heartbeat timeout of the stop; at 3 ranks with a short heartbeat, and at 8 ranks with the
 * default settings (a kill within 1 s, a stop within 5 s). The server runs in the test JVM; ranks
 * are child JVMs ({@link LivenessChild}).
 */
@EnabledOnOs(OS.LINUX)
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class TcpRendezvousLivenessProcessTest {

    private static final String TOKEN = "liveness-process-test-secret";
    private static final long HEARTBEAT_INTERVAL_MS = 100;
    private static final long HEARTBEAT_TIMEOUT_MS = 1_000;
    private static final Pattern LOST = Pattern.compile("^LOST rank=(-?\\d+) at=(\\d+) \\| (.*)$", Pattern.MULTILINE);

    @TempDir
    Path outputDir;

    private final List<Process> children = new ArrayList<>();

    @AfterEach
    void destroyChildren() throws InterruptedException {
        for (Process p : children) {
            p.destroyForcibly();
        }
        for (Process p : children) {
            p.waitFor(5, TimeUnit.SECONDS);
        }
    }

    private record Rank(int rank, Process process, Path output) {
        String text() throws IOException {
            return Files.exists(output) ? Files.readString(output, StandardCharsets.UTF_8) : "";
        }
    }

    private Rank start(int port, int rank, int worldSize, String mode, boolean defaults) throws IOException {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Path output = outputDir.resolve("rank" + rank + ".log");
        List<String> command = new ArrayList<>(List.of(java,
                "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx64m", "-XX:-UsePerfData"));
        if (!defaults) {
            command.add("-Dar4j.rdzv.heartbeatInterval=" + HEARTBEAT_INTERVAL_MS);
            command.add("-Dar4j.rdzv.heartbeatTimeout=" + HEARTBEAT_TIMEOUT_MS);
        }
        command.addAll(List.of("-cp", System.getProperty("surefire.test.class.path", System.getProperty("java.class.path")),
                LivenessChild.class.getName(),
                Integer.toString(port), Integer.toString(rank), Integer.toString(worldSize), mode));
        ProcessBuilder builder = new ProcessBuilder(command)
                .redirectErrorStream(true).redirectOutput(output.toFile());
        builder.environment().put(JobToken.AR4J_RDZV_TOKEN, TOKEN);
        Process process = builder.start();
        children.add(process);
        return new Rank(rank, process, output);
    }

    private static void awaitLine(Rank rank, String line) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!rank.text().contains(line)) {
            if (!rank.process().isAlive() || System.nanoTime() > deadline) {
                fail("rank " + rank.rank() + " never printed " + line + "; it printed:\n" + rank.text());
            }
            Thread.sleep(20);
        }
    }

    private TcpRendezvousServer server(int worldSize, boolean defaults) {
        RendezvousSettings settings = RendezvousSettings.resolve(new java.util.Properties(), Map.of());
        if (!defaults) {
            settings = settings.withHeartbeat(Duration.ofMillis(HEARTBEAT_INTERVAL_MS), Duration.ofMillis(HEARTBEAT_TIMEOUT_MS));
        }
        return TcpRendezvousServer.start(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), worldSize,
                JobToken.of(TOKEN), settings);
    }

    /**
     * Runs every rank but the last in an all-gather, hurts the last with {@code signal}, returns the
     * worst delay to error.
     */
    private long survivorsFailNaming(String signal, int worldSize, boolean defaults) throws Exception {
        int lastRank = worldSize - 1;
        try (TcpRendezvousServer server = server(worldSize, defaults)) {
            Rank victim = start(server.port(), lastRank, worldSize, "hold", defaults);
            List<Rank> survivors = new ArrayList<>();
            for (int r = 0; r < lastRank; r++) {
                survivors.add(start(server.port(), r, worldSize, "gather", defaults));
            }
            awaitLine(victim, "JOINED");
            for (Rank survivor : survivors) {
                awaitLine(survivor, "WAITING");
            }
            Thread.sleep(200); // let the GETs reach the server; a GET that arrives later fails at once as well
            long hurtAt = System.currentTimeMillis();
            if (signal.equals("KILL")) {
                victim.process().destroyForcibly();
            } else {
                Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(victim.process().pid())).start();
                assertEquals(0, kill.waitFor(), "kill -" + signal + " failed");
            }
            long worst = 0;
            for (Rank survivor : survivors) {
                assertTrue(survivor.process().waitFor(20, TimeUnit.SECONDS), "rank " + survivor.rank()
                        + " did not end; it printed:\n" + survivor.text());
                String text = survivor.text();
                Matcher lost = LOST.matcher(text);
                assertTrue(lost.find(), "rank " + survivor.rank() + " raised no PeerLostException:\n" + text);
                assertEquals(lastRank, Integer.parseInt(lost.group(1)), "the lost rank named by rank " + survivor.rank());
                worst = Math.max(worst, Long.parseLong(lost.group(2)) - hurtAt);
                assertEquals(5, survivor.process().exitValue());
                String expected = "rank " + lastRank + (signal.equals("KILL") ? " disconnected" : "'s heartbeat stopped");
                assertTrue(lost.group(3).contains(expected), "expected '" + expected + "' in: " + lost.group(3));
            }
            victim.process().destroyForcibly();
            return worst;
        }
    }

    @Test
    void killMinus9OfARankFailsEverySurvivorWithinOneSecond() throws Exception {
        long worst = survivorsFailNaming("KILL", 3, false);
        TcpRendezvousAttackTest.measured("kill -9 of rank 2 during an all-gather (3 rank JVMs)", "1 process",
                "both survivors: PeerLostException(2) \"rank 2 disconnected\"", TimeUnit.MILLISECONDS.toNanos(worst));
        assertTrue(worst <= 1_000, "a survivor raised its error " + worst + " ms after the kill");
    }

    @Test
    void sigstopOfARankFailsEverySurvivorWithinTheHeartbeatTimeout() throws Exception {
        long worst = survivorsFailNaming("STOP", 3, false);
        TcpRendezvousAttackTest.measured("SIGSTOP of rank 2 during an all-gather (3 rank JVMs, heartbeat 100 ms / 1 s)",
                "1 process", "both survivors: PeerLostException(2) \"heartbeat stopped\"", TimeUnit.MILLISECONDS.toNanos(worst));
        // The server declares the rank lost at most one heartbeat timeout after the last frame it heard.
        assertTrue(worst <= HEARTBEAT_TIMEOUT_MS + 500, "a survivor raised its error " + worst + " ms after SIGSTOP");
    }

    @Test
    void atTheDefaultSettingsKillMinus9OfOneOfEightRanksFailsEverySurvivorWithinOneSecond() throws Exception {
        long worst = survivorsFailNaming("KILL", 8, true);
        TcpRendezvousAttackTest.measured("kill -9 of rank 7 during an all-gather (8 rank JVMs, default settings)",
                "1 process", "all 7 survivors: PeerLostException(7) \"rank 7 disconnected\"",
                TimeUnit.MILLISECONDS.toNanos(worst));
        assertTrue(worst <= 1_000, "a survivor raised its error " + worst + " ms after the kill");
    }

    @Test
    void atTheDefaultSettingsSigstopOfOneOfEightRanksFailsEverySurvivorWithinFiveSeconds() throws Exception {
        long worst = survivorsFailNaming("STOP", 8, true);
        TcpRendezvousAttackTest.measured("SIGSTOP of rank 7 during an all-gather (8 rank JVMs, default settings)",
                "1 process", "all 7 survivors: PeerLostException(7) \"heartbeat stopped\"", TimeUnit.MILLISECONDS.toNanos(worst));
        assertTrue(worst <= 5_000, "a survivor raised its error " + worst + " ms after SIGSTOP");
    }
}
