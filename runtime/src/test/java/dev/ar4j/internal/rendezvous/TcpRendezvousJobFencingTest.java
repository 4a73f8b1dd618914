package dev.ar4j.internal.rendezvous;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Two jobs on one host, both launched with torchrun's default run id {@code none} and the same
 * port, never join each other: each job is a launcher process (a shell here, as torchrun's agent
 * is one) that starts its ranks, and without a token a rank's key is derived from its launcher.
 * Job A's rank 0 serves and waits for a rank 1; job B's rank 1 reaches A's server and is refused
 * as another job's rank, so A's gather times out naming rank 1 instead of forming
 * {@code [jobA:r0, jobB:r1]}.
 */
@EnabledOnOs(OS.LINUX)
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class TcpRendezvousJobFencingTest {

    @TempDir
    Path outputDir;

    @Test
    void twoJobsWithTheRunIdNoneOnOneHostDoNotJoinEachOther() throws Exception {
        int port = TcpRendezvousTest.freeLoopbackPort();
        Process jobA = launch("a", port, 0);
        try {
            awaitListening(port, jobA);
            Process jobB = launch("b", port, 1);
            try {
                assertTrue(jobB.waitFor(40, TimeUnit.SECONDS), "job B's rank did not end: " + log("b"));
                assertTrue(jobA.waitFor(40, TimeUnit.SECONDS), "job A's rank did not end: " + log("a"));
                String a = log("a");
                String b = log("b");
                assertFalse(a.contains("GATHER"), "job A's rank formed a group with job B's rank:\n" + a + "\n" + b);
                assertTrue(a.contains("TIMEOUT") && a.contains("missing=[1]"), "job A's rank 0:\n" + a);
                assertTrue(b.contains("ERROR") && b.contains("another job's rank (token mismatch)")
                        && b.contains("AR4J_RDZV_TOKEN"), "job B's rank 1:\n" + b);
                assertEquals(4, jobB.exitValue(), b);
            } finally {
                jobB.destroyForcibly();
            }
        } finally {
            jobA.destroyForcibly();
        }
    }

    /** Starts a launcher (bash) whose one child is rank {@code rank} of a group of 2, with TORCHELASTIC_RUN_ID=none. */
    private Process launch(String job, int port, int rank) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String classPath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        String command = "'" + java + "' -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx64m -XX:-UsePerfData -cp '"
                + classPath + "' " + RendezvousChild.class.getName() + " " + port + " " + rank + " 2 gather 4000"
                + " > '" + outputDir.resolve(job + ".log") + "' 2>&1 & wait $!";
        ProcessBuilder builder = new ProcessBuilder("bash", "-c", command);
        builder.environment().remove(JobToken.AR4J_RDZV_TOKEN);
        builder.environment().remove("SLURM_JOB_ID");
        builder.environment().remove("OMPI_MCA_ess_base_jobid");
        builder.environment().put("TORCHELASTIC_RUN_ID", "none");
        return builder.start();
    }

    private String log(String job) throws Exception {
        Path file = outputDir.resolve(job + ".log");
        return Files.exists(file) ? Files.readString(file, StandardCharsets.UTF_8) : "";
    }

    /** Waits until job A's rank 0 serves on {@code port} (a connection is accepted), so that job B's rank finds it. */
    private static void awaitListening(int port, Process launcher) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline && launcher.isAlive()) {
            try (java.net.Socket probe = new java.net.Socket()) {
                probe.connect(new java.net.InetSocketAddress("127.0.0.1", port), 200);
                return;
            } catch (java.io.IOException notYet) {
                Thread.sleep(20);
            }
        }
        throw new AssertionError("job A's rank 0 never served on port " + port);
    }
}
