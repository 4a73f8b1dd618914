package dev.ar4j.benchmarks.perf;

import org.junit.jupiter.api.Test;

import java.io.File;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

class Ar4jPerfCommandTest extends CapturedOutput {
    @Test
    void planPrintsTheDecisionAndReasonForEverySizeWithoutAGpu() {
        assertEquals(0, Ar4jPerf.run("--plan", "nvlink:2", "-b", "1K", "-e", "16M"));
        String text = out();
        List<String> rows = text.lines().filter(l -> !l.startsWith("#")).toList();
        assertEquals(15, rows.size(), text);
        assertTrue(rows.getFirst().matches("\\s+1024\\s+512\\s+push\\s+\\[1]\\s+push\\s+\\[1]"), rows.getFirst());
        assertTrue(rows.getLast().contains("1stage") && rows.getLast().contains("nccl"), "16 MiB unregistered is over the "
                + "staging buffer: " + rows.getLast());
        assertTrue(text.contains("[1] auto: world size 2, up to 512 KiB → push"), text);
        assertTrue(text.contains("larger than the 8 MiB staging buffer"), text);
    }

    @Test
    void planOnPcieShowsTheGateAndHonoursTheStagingSize() {
        assertEquals(0, Ar4jPerf.run("--plan", "pcie:8", "--sizes", "1K,43008", "--staging", "16M"));
        assertTrue(out().contains("PCIe gate"), out());
        assertTrue(out().contains("staging buffer 16MB"), out());
    }

    @Test
    void badArgumentsExitWithTwoAndSayWhatIsAccepted() {
        assertEquals(2, Ar4jPerf.run("--plan", "torus:4"));
        assertTrue(err().contains("nvlink:N"), err());
        assertEquals(2, Ar4jPerf.run("--plan", "nvlink:2", "-b", "64M", "-e", "1K"));
        assertTrue(err().contains("smaller than the smallest"), err());
        assertEquals(2, Ar4jPerf.run("-a", "auto,3stage", "--plan", "nvlink:2"));
        assertEquals(2, Ar4jPerf.run("-b", "12Q"));
        assertTrue(err().contains("K, M or G"), err());
        assertEquals(2, Ar4jPerf.run("--scenario", "verify", "-b", "1K"));
        assertTrue(err().contains("fixed size"), err());
    }

    @Test
    void withoutAUsableGpuItSaysWhatIsMissing() {
        GpuCheck check = GpuCheck.probe();
        assumeFalse(check.usable(), "this machine has usable GPUs: the no-GPU message cannot be seen here");
        assertEquals(2, Ar4jPerf.run("-b", "1K", "-e", "4K"));
        assertTrue(err().contains("cannot run here: " + check.problem()), err());
        assertTrue(err().contains("--plan"), err());
    }

    @Test
    void workersRefuseAnEnvironmentWithNvlinkMulticast() {
        assumeFalse("0".equals(System.getenv("NCCL_NVLS_ENABLE")), "NCCL_NVLS_ENABLE=0 is set in this environment");
        assertEquals(2, Ar4jPerf.run("--worker-rank", "0", "--worker-world-size", "2", "--worker-port", "1"));
        assertTrue(err().contains("NCCL_NVLS_ENABLE=0"), err());
    }

    @Test
    void commandLinesAreQuotedForTheShell() {
        assertEquals("ar4j-perf -b 1K --csv 'my file.csv' 'it'\\''s'",
                Ar4jPerf.commandLine(List.of("-b", "1K", "--csv", "my file.csv", "it's")));
    }

    @Test
    void workersGetThisClassPath() {
        String cp = WorkerLauncher.classPath();
        assertTrue(List.of(cp.split(File.pathSeparator)).stream().anyMatch(e -> e.contains("benchmarks")), cp);
        assertTrue(cp.contains("picocli"), cp);
        assertTrue(WorkerLauncher.FORCED_ENVIRONMENT.get("NCCL_NVLS_ENABLE").equals("0"));
    }

    @Test
    void helpListsTheExitCodesAndTheEnvironmentVariables() {
        assertEquals(ExitCodes.OK, Ar4jPerf.run("--help"));
        String help = out();
        for (String code : ExitCodes.helpLines()) {
            String number = code.substring(0, code.indexOf(':'));
            assertTrue(help.lines().anyMatch(l -> l.trim().startsWith(number + " ") || l.trim().startsWith(number + "\t")),
                    "exit code " + number + " in --help:\n" + help);
        }
        for (String variable : List.of("AR4J_PERF_JAVA_OPTS", "NCCL_NVLS_ENABLE", "NCCL_SOCKET_IFNAME",
                "AR4J_ALLREDUCE_ALGO", "AR4J_NCCL_PATH", "AR4J_CUDART_PATH", "AR4J_CUSTOMAR_PATH", "AR4J_MASTER_ADDR",
                "AR4J_FORCE_CUSTOM_AR_PCIE", "CUDA_VISIBLE_DEVICES", "JAVA_HOME")) {
            assertTrue(help.contains(variable), variable + " in --help:\n" + help);
        }
        assertTrue(help.contains("a worker or benchmark failed"), help);
    }

    @Test
    void plotHelpListsTheExitCodesToo() {
        assertEquals(ExitCodes.OK, Ar4jPerf.run("plot", "--help"));
        assertTrue(out().contains("an input file missing or unreadable"), out());
    }

    @Test
    void versionComesFromTheManifestOrSaysWhyNot() {
        assertEquals(ExitCodes.OK, Ar4jPerf.run("-V"));
        Ar4jVersion v = Ar4jVersion.current();
        assertTrue(out().startsWith("ar4j-perf " + v.version()), out());
        assertTrue(out().contains("commit " + v.commit()), out());
        if (v.source().endsWith(".jar")) {
            assertFalse(v.version().startsWith(Ar4jVersion.UNKNOWN), v.toString());
        } else {
            assertTrue(out().contains("unknown (not from a jar"), out());
            assertFalse(out().contains("0.1.0"), "no hard-coded version: " + out());
        }
    }

    @Test
    void plotOfAMissingFileSaysSoAndExitsWithTheUsageCode() {
        assertEquals(ExitCodes.USAGE, Ar4jPerf.run("plot", "no/such/results.csv"));
        assertTrue(err().contains("no such file: no/such/results.csv"), err());
        assertFalse(err().contains("worker"), err());
    }

    @Test
    void busKeysMatchNvidiaSmiAndCuda() {
        assertEquals(MachineInfo.busKey("00000000:1B:00.0"), MachineInfo.busKey("0000:1b:00.0"));
    }
}
