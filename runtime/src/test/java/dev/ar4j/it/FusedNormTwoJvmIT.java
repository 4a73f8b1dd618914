package dev.ar4j.it;

import dev.ar4j.Communicator;
import dev.ar4j.DType;
import dev.ar4j.internal.platform.ChildJvm;
import dev.ar4j.internal.rendezvous.JobToken;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link Communicator#allReduceResidualRmsNorm} with one JVM per rank, two ranks sharing GPU 0
 * without NCCL (the one-GPU host's model; {@link FusedNormOneJvmIT} is the one-JVM model), the
 * group formed over the TCP rendezvous with a token made for this test. Each rank
 * ({@link FusedNormChild}) runs every dtype x shape x placement (out of place, out == in, and
 * also residualOut == residual), fused shapes and ones that fall back to the unfused path, on
 * seeded data that differs per rank, and checks its outputs against a host reference of the
 * kernels' definition (residualOut bitwise, out within 8 fp32 ulps or one fp16/bf16 step) and
 * bitwise against the unfused path on the GPU. This test asserts that both JVMs exited 0 within
 * {@link #DEADLINE_S}, every case passed on both ranks, both ranks' outputs are bitwise the same
 * (the SHA-256 of out and residualOut per case), and every dtype had both fused and unfused cases.
 */
@Tag("gpu")
class FusedNormTwoJvmIT {

    /** Both JVMs together: start, rendezvous, 54 cases, close. */
    static final long DEADLINE_S = 180;

    @BeforeAll
    static void needAGpu() {
        GpuRequirement.requireDevices(1);
    }

    @Test
    @Timeout(DEADLINE_S + 60)
    void fusedNormIsExactAndBitwiseTheSameInBothJvms() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        byte[] secret = new byte[24];
        new SecureRandom().nextBytes(secret);
        Map<String, String> env = Map.of(JobToken.AR4J_RDZV_TOKEN, "fused-norm-two-jvm-it-" + HexFormat.of().formatHex(secret));
        List<ChildJvm> ranks = new ArrayList<>();
        try {
            for (int r = 0; r < FusedNormChild.WORLD; r++) {
                Path log = Files.createTempFile("ar4j-fused-norm-rank" + r + "-", ".log");
                ranks.add(ChildJvm.start(FusedNormChild.class, List.of(), List.of(String.valueOf(r), String.valueOf(port)),
                        env, log));
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(DEADLINE_S);
            int[] exits = new int[ranks.size()];
            for (int r = 0; r < ranks.size(); r++) {
                long left = Math.max(1, TimeUnit.NANOSECONDS.toSeconds(deadline - System.nanoTime()));
                exits[r] = ranks.get(r).await(left);  // kills it and throws, with its output, past the deadline
            }
            List<List<String[]>> cases = new ArrayList<>();
            for (int r = 0; r < ranks.size(); r++) {
                String out = ranks.get(r).output();
                int rank = r;
                out.lines().forEach(l -> System.out.println("[rank " + rank + "] " + l));
                assertEquals(0, exits[r], "rank " + r + " failed (exit " + exits[r] + "):\n" + out);
                assertTrue(out.lines().anyMatch(l -> l.equals("TOKEN present=true source=" + JobToken.AR4J_RDZV_TOKEN)),
                        "rank " + r + " did not see the test's rendezvous token:\n" + out);
                cases.add(caseLines(out, r));
            }
            int expected = DType.values().length * FusedNormChild.SHAPES.length * FusedNormChild.PLACEMENTS.length;
            for (int r = 0; r < cases.size(); r++) {
                List<String[]> mine = cases.get(r);
                assertEquals(expected, mine.size(), "rank " + r + " reported " + mine.size() + " cases, not " + expected);
                String failed = String.join("\n", mine.stream().filter(c -> !c[7].equals("PASS"))
                        .map(c -> String.join(" ", c)).toList());
                assertTrue(failed.isEmpty(), "rank " + r + ": cases failed:\n" + failed);
                String out = ranks.get(r).output();
                assertTrue(out.lines().anyMatch(l -> l.equals("DONE cases=" + expected + " failed=0")),
                        "rank " + r + " printed no DONE line for " + expected + " passed cases");
            }
            for (int i = 0; i < expected; i++) {
                String[] a = cases.get(0).get(i), b = cases.get(1).get(i);
                assertEquals(String.valueOf(i), a[1], "rank 0's case lines are out of order");
                // index, dtype, rows, hidden, placement, fused, PASS, hash: the same on both ranks.
                for (int f = 1; f <= 8; f++) {
                    assertEquals(a[f], b[f], "case " + i + ": the ranks differ in field " + f + " (the hash is of out and"
                            + " residualOut):\nrank 0: " + String.join(" ", a) + "\nrank 1: " + String.join(" ", b));
                }
            }
            for (DType dtype : DType.values()) {
                List<String[]> ofType = cases.get(0).stream().filter(c -> c[2].equals(dtype.toString())).toList();
                assertTrue(ofType.stream().anyMatch(c -> c[6].equals("fused=true")), dtype + ": no case ran the fused kernel");
                assertTrue(ofType.stream().anyMatch(c -> c[6].equals("fused=false")), dtype
                        + ": no case fell back to the unfused path");
            }
        } finally {
            ranks.forEach(ChildJvm::kill);
        }
    }

    /**
     * The child's {@code CASE} lines, each cut into {@code CASE, index, dtype, rows=, hidden=,
     * placement, fused=, PASS|FAIL, hash=, rest}.
     */
    private static List<String[]> caseLines(String output, int rank) {
        List<String[]> cases = new ArrayList<>();
        for (String line : output.lines().filter(l -> l.startsWith("CASE ")).toList()) {
            String[] fields = line.split(" ", 10);
            assertTrue(fields.length >= 9 && fields[8].startsWith("hash="), "rank " + rank + ": malformed line: " + line);
            cases.add(fields);
        }
        return cases;
    }
}
