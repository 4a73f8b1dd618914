package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.RendezvousQuotaExceededException;
import dev.ar4j.rendezvous.RendezvousSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A fair share of the server's store: ten ranks fill it as fast as they can (1 MiB values, then
 * 64 KiB, then 4 KiB ones, until not even those fit) while six ranks exchange 4 KiB values. Each filler is refused with a
 * {@link RendezvousQuotaExceededException} naming its reserve once the common half of the budget
 * is used up; the small SETs of the others succeed all along and after (they stay within their
 * reserves). The server runs in a JVM whose heap is the budget plus 48 MiB (the stated constant:
 * the JVM's own objects, and per connection its buffers and a frame of up to 64 KiB that is not
 * charged) and never runs out of memory: a SET's copy of its value is charged before it is made.
 */
@EnabledOnOs(OS.LINUX)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class TcpRendezvousFairBudgetTest {

    private static final String SECRET = "fair-budget-test-secret";
    private static final JobToken TOKEN = JobToken.of(SECRET);
    private static final int MIB = 1 << 20;
    private static final long BUDGET = 64L * MIB;
    private static final int WORLD = 16;
    private static final int FILLERS = 10;
    private static final RendezvousSettings SETTINGS = RendezvousSettings.resolve(new java.util.Properties(),
            java.util.Map.of()).withHeartbeat(Duration.ofMillis(500), Duration.ofSeconds(10));

    @TempDir
    Path outputDir;

    @Test
    void fillersOverTheirShareAreRefusedWhileTheOtherRanksSmallSetsSucceed() throws Exception {
        Process server = serverJvm();
        try {
            int port = awaitPort(server);
            ConcurrentLinkedQueue<String> failures = new ConcurrentLinkedQueue<>();
            ConcurrentLinkedQueue<String> refusals = new ConcurrentLinkedQueue<>();
            CountDownLatch connected = new CountDownLatch(WORLD);
            CountDownLatch go = new CountDownLatch(1);
            CountDownLatch fillersRefused = new CountDownLatch(FILLERS);
            CountDownLatch finished = new CountDownLatch(WORLD);
            List<Thread> ranks = new ArrayList<>();
            for (int r = 0; r < WORLD; r++) {
                int rank = r;
                ranks.add(Thread.ofPlatform().name("fair-budget-rank-" + r).start(() -> {
                    try (TcpRendezvous rendezvous = TcpRendezvous.builder().rank(rank).worldSize(WORLD).serve(false)
                            .serverHost("127.0.0.1").serverPort(port).token(TOKEN).settings(SETTINGS)
                            .connectTimeout(Duration.ofSeconds(30)).closeLinger(Duration.ZERO).connect()) {
                        connected.countDown();
                        go.await();
                        try {
                            if (rank < FILLERS) {
                                fill(rendezvous, rank, refusals, failures);
                                fillersRefused.countDown();
                                assertTrue(fillersRefused.await(60, TimeUnit.SECONDS),
                                        "the fillers were never all refused");
                                assertStillRefused(rendezvous, rank, failures);
                            } else {
                                exchangeSmallValues(rendezvous, rank, "during", failures);
                                assertTrue(fillersRefused.await(60, TimeUnit.SECONDS),
                                        "the fillers were never all refused");
                                exchangeSmallValues(rendezvous, rank, "after", failures);
                            }
                        } finally {
                            finished.countDown();
                        }
                        awaitAllFinished(finished, rank, failures);
                    } catch (Throwable e) {
                        failures.add("rank " + rank + ": " + e);
                    }
                }));
            }
            assertTrue(connected.await(60, TimeUnit.SECONDS), "the ranks did not connect: " + failures);
            go.countDown();
            for (Thread rank : ranks) {
                assertTrue(rank.join(Duration.ofSeconds(90)), rank.getName() + " hung");
            }
            assertEquals(List.of(), List.copyOf(failures), "ranks failed");
            assertEquals(FILLERS, refusals.size(), "every filler is refused once: " + refusals);
            for (String refusal : refusals) {
                assertTrue(refusal.contains("over its reserve of " + (BUDGET / 2 / WORLD) + " bytes")
                        && refusal.contains("the other ranks keep their reserves"), refusal);
            }
        } catch (Exception | AssertionError e) {
            throw new AssertionError(e + "\nserver log:\n" + log(), e);
        } finally {
            server.getOutputStream().close();
            if (!server.waitFor(10, TimeUnit.SECONDS)) {
                server.destroyForcibly();
            }
        }
        assertFalse(log().contains("OutOfMemoryError"), "the server ran out of heap:\n" + log());
    }

    /**
     * Keeps the rank's rendezvous open until every rank is done, so that none is seen leaving while
     * others still work. This is a latch of the test's JVM, not a barrier of the store: a filler has
     * taken its whole share, and whether the few common bytes left hold even a barrier's arrival
     * (88 bytes) depends on how the fillers' last SETs interleaved. Such a SET is refused by design.
     */
    private static void awaitAllFinished(CountDownLatch finished, int rank, ConcurrentLinkedQueue<String> failures) {
        try {
            if (!finished.await(60, TimeUnit.SECONDS)) {
                failures.add("rank " + rank + ": the other ranks did not finish within 60 s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            failures.add("rank " + rank + ": interrupted waiting for the other ranks");
        }
    }

    /**
     * Takes all the store it can: SETs 1 MiB values under new keys until refused for want of share,
     * then 64 KiB values, then 4 KiB ones, so that not even a small value of its fits any more.
     */
    private static void fill(TcpRendezvous rendezvous, int rank, ConcurrentLinkedQueue<String> refusals,
                             ConcurrentLinkedQueue<String> failures) {
        String last = null;
        int key = 0;
        for (int size : new int[] {MIB, 64 << 10, 4 << 10}) {
            byte[] value = new byte[size];
            Arrays.fill(value, (byte) rank);
            last = null;
            for (int i = 0; i < 20_000 && last == null; i++) {
                try {
                    rendezvous.set("fill-" + rank + "-" + key++, value);
                } catch (RendezvousQuotaExceededException refused) {
                    last = refused.getMessage();
                }
            }
            if (last == null) {
                failures.add("filler rank " + rank + " was never refused values of " + size + " bytes");
                return;
            }
        }
        refusals.add(last);
    }

    /**
     * Once every filler is refused, what is left of the common bytes is less than one 4 KiB SET's
     * charge, and nothing releases any: a filler's 16 KiB SET must be refused too.
     */
    private static void assertStillRefused(TcpRendezvous rendezvous, int rank, ConcurrentLinkedQueue<String> failures) {
        try {
            rendezvous.set("fill-" + rank + "-after", new byte[16 << 10]);
            failures.add("filler rank " + rank + " stored 16 KiB after every filler was refused");
        } catch (RendezvousQuotaExceededException expected) {
            if (!expected.getMessage().contains("over its reserve")) {
                failures.add("filler rank " + rank + " refused without naming its reserve: " + expected.getMessage());
            }
        }
    }

    /** Twenty SETs of 4 KiB and a read of each: every one must succeed. */
    private static void exchangeSmallValues(TcpRendezvous rendezvous, int rank, String phase,
                                            ConcurrentLinkedQueue<String> failures) {
        for (int i = 0; i < 20; i++) {
            byte[] value = new byte[4096];
            Arrays.fill(value, (byte) (rank + i));
            String key = "small-" + phase + "-" + rank + "-" + i;
            try {
                rendezvous.set(key, value);
                assertArrayEquals(value, rendezvous.get(key, Duration.ofSeconds(10)));
            } catch (RuntimeException | AssertionError e) {
                failures.add("well-behaved rank " + rank + " " + phase + " the filling, SET " + i + ": " + e);
                return;
            }
        }
    }

    private Process serverJvm() throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String classPath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        long heapMib = BUDGET / MIB + 48;
        ProcessBuilder builder = new ProcessBuilder(java, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
                "-Xmx" + heapMib + "m", "-XX:-UsePerfData", "-Dar4j.rdzv.heartbeatInterval=500",
                "-Dar4j.rdzv.heartbeatTimeout=10000", "-Dar4j.rdzv.maxServerBytes=" + BUDGET,
                "-cp", classPath, ServerChild.class.getName(), String.valueOf(WORLD))
                .redirectErrorStream(true).redirectOutput(outputDir.resolve("server.log").toFile());
        builder.environment().put(JobToken.AR4J_RDZV_TOKEN, SECRET);
        return builder.start();
    }

    private String log() throws Exception {
        Path file = outputDir.resolve("server.log");
        return Files.exists(file) ? Files.readString(file, StandardCharsets.UTF_8) : "";
    }

    private int awaitPort(Process server) throws Exception {
        Pattern port = Pattern.compile("^PORT (\\d+)$", Pattern.MULTILINE);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline && server.isAlive()) {
            Matcher m = port.matcher(log());
            if (m.find()) {
                return Integer.parseInt(m.group(1));
            }
            Thread.sleep(20);
        }
        throw new AssertionError("the server JVM printed no port:\n" + log());
    }
}
