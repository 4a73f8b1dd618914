package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.*;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
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
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * File-descriptor exhaustion: a server JVM started under {@code ulimit -n 200} is flooded with idle
 * connections until {@code accept()} fails (EMFILE). Its accept loop backs off and retries instead
 * of dying, and once the attackers leave a real group forms on it; at every logging level, and
 * with a log handler that fails every record with an {@link Error}. (Before the accept loop caught
 * every {@link Throwable}, WARNING was fatal: the first warning's time stamp needed the time-zone
 * data file, its loading failed with an {@code Error}, and the accept thread ended for good.)
 */
@EnabledOnOs(OS.LINUX)
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TcpRendezvousFdExhaustionTest {

    private static final String TOKEN = "fd-exhaustion-test-secret";

    @TempDir
    Path outputDir;

    @ParameterizedTest(name = "logging {0}")
    @ValueSource(strings = {"ALL", "FINE", "INFO", "WARNING", "SEVERE", "OFF", "FAILING-HANDLER"})
    void theServerSurvivesEmfileAndServesOnceTheAttackersLeave(String level) throws Exception {
        Path output = outputDir.resolve("server.log");
        Path logging = outputDir.resolve("logging.properties");
        boolean failing = level.equals("FAILING-HANDLER");
        Files.writeString(logging, "handlers=" + (failing ? "FailingLogHandler" : "java.util.logging.ConsoleHandler")
                + "\n.level=" + (failing ? "ALL" : level) + "\njava.util.logging.ConsoleHandler.level=ALL\n");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String classPath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        if (failing) {
            classPath = compileFailingLogHandler() + System.getProperty("path.separator") + classPath;
        }
        String command = "ulimit -n 200 && exec '" + java + "' -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx64m"
                + " -XX:-UsePerfData -Dar4j.rdzv.maxPendingConnections=100000 -Dar4j.rdzv.handshakeTimeout=60000"
                + " -Djava.util.logging.config.file='" + logging + "'"
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
            if (level.equals("ALL") || level.equals("FINE") || level.equals("INFO") || level.equals("WARNING")) {
                awaitText(output, "could not accept a connection", server);
                String log = Files.readString(output, StandardCharsets.UTF_8);
                assertTrue(log.contains("Too many open files"), "accept failed, but not for want of descriptors:\n" + log);
            } else if (failing) {
                awaitText(output, "the warning could not be logged", server);
            } else {
                awaitText(output, "FIRST_ACCEPT_FAILURE", server); // nothing is logged at this level: the child says so
            }
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
            TcpRendezvousAttackTest.measured("fd exhaustion (server under ulimit -n 200), logging " + level,
                    attempts + " connections held",
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
        String log = Files.readString(output, StandardCharsets.UTF_8);
        Matcher failures = Pattern.compile("^ACCEPT_FAILURES (\\d+)$", Pattern.MULTILINE).matcher(log);
        assertTrue(failures.find(), "the server JVM did not report its accept failures:\n" + log);
        assertTrue(Integer.parseInt(failures.group(1)) > 0, "accept() never failed: the test exhausted nothing\n" + log);
        assertFalse(log.contains("Exception in thread"), "a server thread died:\n" + log);
    }

    /**
     * Compiles a {@code java.util.logging} handler that fails every record with an {@link Error}, as
     * one does that must open a file when no descriptor is left (this module does not read
     * {@code java.logging}, so the child JVM gets it from a class directory of its own).
     */
    private Path compileFailingLogHandler() throws Exception {
        Path dir = Files.createDirectories(outputDir.resolve("handler"));
        Path source = dir.resolve("FailingLogHandler.java");
        Files.writeString(source, "public final class FailingLogHandler extends java.util.logging.Handler {\n"
                + "  public void publish(java.util.logging.LogRecord r) { throw new Error(\"this handler needs a file\"); }\n"
                + "  public void flush() { }\n  public void close() { }\n}\n");
        Process javac = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "javac").toString(),
                "-d", dir.toString(), source.toString()).redirectErrorStream(true).start();
        String out = new String(javac.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(javac.waitFor(30, TimeUnit.SECONDS) && javac.exitValue() == 0, "javac failed: " + out);
        return dir;
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
