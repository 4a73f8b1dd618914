package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.*;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A launcher's default job id is shared by every job, so it never becomes a token: torchrun's
 * default {@code --rdzv-id} ({@code none}) and the like count as unset, with a warning naming the
 * variable, and without another source the rendezvous keeps to loopback.
 */
class JobTokenDefaultsTest {

    @ParameterizedTest(name = "TORCHELASTIC_RUN_ID=\"{0}\"")
    @ValueSource(strings = {"none", "NONE", " none ", "default", "0", "-1", "null", "nil", "unset", "undefined", "unknown",
        "-", "''", "'none'", "\"none\"", "\"'none'\"", "${RUN_ID}", "$TORCHELASTIC_RUN_ID", "${RUN_ID:-x}", "%RUN_ID%",
        "<run-id>", "{{run_id}}", "$(uuidgen)", "n/a", "N/A", "NaN", "(null)", "\"\"", "\"", "`none`"})
    void aLaunchersDefaultRunIdGivesNoToken(String id) {
        JobToken token = JobToken.fromEnvironment(Map.of("TORCHELASTIC_RUN_ID", id));
        assertFalse(token.isPresent(), id);
        assertTrue(token.source().contains("TORCHELASTIC_RUN_ID is '" + id.trim() + "', a default every job shares"),
                token.source());
        assertArrayEquals(JobToken.none().key(), token.key());
    }

    @Test
    void withoutATokenFromADefaultIdTheServerKeepsToLoopback() {
        JobToken token = JobToken.fromEnvironment(Map.of("TORCHELASTIC_RUN_ID", "none"));
        RendezvousAuthenticationException e = assertThrows(RendezvousAuthenticationException.class,
                () -> TcpRendezvousServer.start(new InetSocketAddress(InetAddress.getByName("0.0.0.0"), 0), 2, token,
                        RendezvousSettings.resolve(new java.util.Properties(), Map.of())));
        assertTrue(e.getMessage().contains("without a job token"), e.getMessage());
        try (TcpRendezvousServer loopback = TcpRendezvousServer.start(
                new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 2, token,
                RendezvousSettings.resolve(new java.util.Properties(), Map.of()))) {
            assertTrue(loopback.port() > 0);
        }
    }

    @Test
    void aDefaultIdFallsThroughToTheNextSource() {
        JobToken slurm = JobToken.fromEnvironment(Map.of("SLURM_JOB_ID", "4242", "SLURM_STEP_ID", "0"));
        JobToken both = JobToken.fromEnvironment(Map.of("TORCHELASTIC_RUN_ID", "none", "SLURM_JOB_ID", "4242",
                "SLURM_STEP_ID", "0"));
        assertTrue(both.isPresent());
        assertEquals("derived from SLURM_JOB_ID and SLURM_STEP_ID", both.source());
        assertArrayEquals(slurm.key(), both.key());
        assertFalse(JobToken.fromEnvironment(Map.of(JobToken.AR4J_RDZV_TOKEN, "default")).isPresent());
    }

    @Test
    void withoutATokenTheKeyIsTheLaunchersNotAFixedOne() {
        byte[] ofThisJvm = JobToken.LauncherKey.of(ProcessHandle.current());
        byte[] ofItsLauncher = JobToken.LauncherKey.of(ProcessHandle.current().parent().orElseThrow());
        assertFalse(java.util.Arrays.equals(ofThisJvm, ofItsLauncher), "two processes, one key");
        assertArrayEquals(ofItsLauncher, JobToken.none().key(), "a rank proves its launcher's key");
        assertEquals(2, JobToken.none().acceptedKeys().size());
        assertArrayEquals(ofThisJvm, JobToken.none().acceptedKeys().get(1), "a server accepts the ranks it started");
        assertFalse(java.util.Arrays.equals(JobToken.digest("ar4j-token:<none>"), JobToken.none().key()),
                "the fixed no-token key every job shared");
        assertFalse(JobToken.isSharedDefault("job-2026-12-02-7f3a"));
        assertFalse(JobToken.isSharedDefault("run-7f3a$b"), "a dollar sign inside an id is not a placeholder");
    }

    @Test
    void realIdsStillGiveDistinctTokens() {
        JobToken a = JobToken.fromEnvironment(Map.of("TORCHELASTIC_RUN_ID", "job-7f3a"));
        JobToken b = JobToken.fromEnvironment(Map.of("TORCHELASTIC_RUN_ID", "job-7f3b"));
        assertTrue(a.isPresent() && b.isPresent());
        assertFalse(java.util.Arrays.equals(a.key(), b.key()));
        assertFalse(JobToken.isSharedDefault("12345"));
        assertTrue(JobToken.isSharedDefault(""));
    }

    @Test
    void theWarningNamesTheVariable() {
        List<String> warnings = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.function.Consumer<String> log = JobToken.warningSink;
        JobToken.warningSink = warnings::add;
        try {
            JobToken.fromEnvironment(Map.of("OMPI_MCA_ess_base_jobid", "Undefined"));
            JobToken.fromEnvironment(Map.of("OMPI_MCA_ess_base_jobid", "Undefined"));
        } finally {
            JobToken.warningSink = log;
        }
        assertEquals(1, warnings.size(), "one warning per variable and value, got " + warnings);
        String message = warnings.getFirst();
        assertTrue(message.contains("OMPI_MCA_ess_base_jobid") && message.contains("'Undefined'")
                && message.contains("loopback only") && message.contains(JobToken.AR4J_RDZV_TOKEN), message);
    }
}
