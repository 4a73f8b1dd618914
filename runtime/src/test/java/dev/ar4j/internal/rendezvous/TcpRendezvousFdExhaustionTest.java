package dev.ar4j.internal.rendezvous;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * File-descriptor exhaustion: a server JVM started under {@code ulimit -n 200} is flooded with idle
 * connections until {@code accept()} fails (EMFILE). Its accept loop backs off and retries instead
 * of dying, and once the attackers leave a real group forms on it.
 */
@EnabledOnOs(OS.LINUX)
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class TcpRendezvousFdExhaustionTest {

    private static final String TOKEN = "fd-exhaustion-test-secret";

    @TempDir
    Path outputDir;

    @Test
    void theServerSurvivesEmfileAndServesOnceTheAttackersLeave() throws Exception {
        Path output = outputDir.resolve("server.log");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String classPath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        String command = "ulimit -n 200 && exec '" + java + "' -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx64m"
                + " -XX:-UsePerfData -Dar4j.rdzv.maxPendingConnections=100000 -Dar4j.rdzv.handshakeTimeout=60000"
                + " -cp '" + classPath + "' " + ServerChild.class.getName() + " 2";
        ProcessBuilder builder = new ProcessBuilder("bash", "-c", command).redirectErrorStream(true)
                .redirectOutput(output.toFile());
        builder.environment().put(JobToken.AR4J_RDZV_TOKEN, TOKEN);
        Process server = builder.start();
        List<Socket> attackers = new ArrayList<>();
        try {
            int port = awaitPort(server, output);
            int refusedInARow = 0;
            for (int i = 0; i < 400 && refusedInARow < 3; i++) {
                Socket socket = new Socket();
                try {
                    socket.connect(new InetSocketAddress("127.0.0.1", port), 200);
                    attackers.add(socket);
                    refusedInARow = 0;
                } catch (IOException e) {
                    socket.close(); // the backlog is full: the kernel drops further handshakes
                    refusedInARow++;
                }
            }
            awaitText(output, "could not accept a connection", server);
            String log = Files.readString(output, StandardCharsets.UTF_8);
            assertTrue(log.contains("Too many open files"), "accept failed, but not for want of descriptors:\n" + log);
            int attempts = attackers.size();
            long leftAt = System.nanoTime();
            for (Socket socket : attackers) {
                socket.close();
            }
            attackers.clear();
            JobToken token = JobToken.of(TOKEN);
            try (TcpRendezvous rank0 = rank(0, port, token); TcpRendezvous rank1 = rank(1, port, token)) {
                CompletableFuture<byte[][]> other = CompletableFuture.supplyAsync(
                        () -> rank1.allGather("after", new byte[] {1}, Duration.ofSeconds(10)));
                assertArrayEquals(new byte[][] {{0}, {1}}, rank0.allGather("after", new byte[] {0}, Duration.ofSeconds(10)));
                other.get(10, TimeUnit.SECONDS);
            }
            TcpRendezvousAttackTest.measured("fd exhaustion (server under ulimit -n 200)", attempts + " connections held",
                    "accept() failed with EMFILE, loop backed off; group formed after the attackers left",
                    System.nanoTime() - leftAt);
        } finally {
            for (Socket socket : attackers) {
                socket.close();
            }
            server.getOutputStream().close();
            if (!server.waitFor(10, TimeUnit.SECONDS)) {
                server.destroyForcibly();
            }
        }
    }

    private static TcpRendezvous rank(int rank, int port, JobToken token) {
        return TcpRendezvous.builder().rank(rank).worldSize(2).serve(false).serverPort(port).token(token)
                .connectTimeout(Duration.ofSeconds(20)).closeLinger(Duration.ZERO).connect();
    }

    private static int awaitPort(Process server, Path output) throws Exception {
        Pattern port = Pattern.compile("^PORT (\\d+)$", Pattern.MULTILINE);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline && server.isAlive()) {
            Matcher m = port.matcher(Files.exists(output) ? Files.readString(output, StandardCharsets.UTF_8) : "");
            if (m.find()) {
                return Integer.parseInt(m.group(1));
            }
            Thread.sleep(20);
        }
        fail("the server JVM printed no port:\n" + Files.readString(output, StandardCharsets.UTF_8));
        return -1;
    }

    private static void awaitText(Path output, String text, Process server) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (System.nanoTime() < deadline && server.isAlive()) {
            if (Files.readString(output, StandardCharsets.UTF_8).contains(text)) {
                return;
            }
            Thread.sleep(20);
        }
        fail("the server JVM never logged '" + text + "':\n" + Files.readString(output, StandardCharsets.UTF_8));
    }
}
