package dev.ar4j.benchmarks.perf;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code -o}, {@code --scenario verify-fused} and {@code --pdl}: parsing, refusals, {@code --plan} and {@code --help}. */
class OperationsCommandTest extends CapturedOutput {
    @Test
    void pdlSettingsParseInOrderAndOtherValuesAreRefused() {
        assertEquals(List.of(PdlSetting.ON, PdlSetting.OFF), PdlSetting.parseList("on,off"));
        assertEquals(List.of(PdlSetting.OFF, PdlSetting.ON), PdlSetting.parseList(" 0 , TRUE ,off"));
        assertEquals(List.of(PdlSetting.DEFAULT), PdlSetting.parseList(null));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PdlSetting.parseList("on,maybe"));
        assertTrue(e.getMessage().contains("maybe") && e.getMessage().contains("on,off"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> PdlSetting.parseList(","));
        assertEquals(Optional.of("1"), PdlSetting.ON.propertyValue());
        assertEquals(Optional.empty(), PdlSetting.DEFAULT.propertyValue());
        assertEquals(Optional.of(true), PdlSetting.ON.enabled(), "Builder.pdl(true)");
        assertEquals(Optional.of(false), PdlSetting.OFF.enabled());
        assertEquals(Optional.empty(), PdlSetting.DEFAULT.enabled(), "the builder is left alone");
    }

    @Test
    void pdlIsSetForABuildAndPutBackAfterwards() {
        String before = System.getProperty(PdlSetting.PROPERTY);
        try {
            System.clearProperty(PdlSetting.PROPERTY);
            String previous = PdlSetting.OFF.apply();
            assertEquals("0", System.getProperty(PdlSetting.PROPERTY));
            PdlSetting.restore(previous);
            assertNull(System.getProperty(PdlSetting.PROPERTY));
            System.setProperty(PdlSetting.PROPERTY, "1");
            previous = PdlSetting.DEFAULT.apply();
            assertEquals("1", System.getProperty(PdlSetting.PROPERTY), "default: a property given by hand stays");
            previous = PdlSetting.OFF.apply();
            assertEquals("0", System.getProperty(PdlSetting.PROPERTY), "--pdl wins over it for the build");
            PdlSetting.restore(previous);
            assertEquals("1", System.getProperty(PdlSetting.PROPERTY));
        } finally {
            PdlSetting.restore(before);
        }
    }

    @Test
    void theRuntimesWordOnPdlIsFoundOrItsSilenceNoted() {
        assertEquals(Optional.empty(), PdlSetting.reportedIn("Communicator[rank 0/2, GPU 0, 2 ranks on one host]\n"
                + "  auto: world size 2, up to 512 KiB -> push"));
        assertEquals(Optional.of("PDL: on (ar4j.pdl=1)"), PdlSetting.reportedIn("Communicator[...]\n  PDL: on (ar4j.pdl=1)"));
        assertEquals(Optional.of("custom kernels ready (grid 16x512, PDL off)"), PdlSetting.reportedIn("Communicator[...]\n"
                + "ar4j rank 0/2 on GPU 0: 2 ranks on one host; custom kernels ready (grid 16x512, PDL off); auto\n"
                + "ar4j rank 1/2 on GPU 1: 2 ranks on one host; custom kernels ready (grid 16x512, PDL off); auto"),
                "the first clause that says it, as main's Communicator logs it");
        assertTrue(PdlSetting.NOT_REPORTED.startsWith("pdl setting not reported by the runtime"));
    }

    @Test
    void planShowsTheNcclCollectivesWithTheirCountsAndFactors() {
        assertEquals(0, Ar4jPerf.run("--plan", "nvlink:4", "-o", "allgather", "--sizes", "1K,1026,4"));
        String text = out();
        assertTrue(text.contains("-o allgather") && text.contains("ncclAllGather"), text);
        assertTrue(text.contains("busbw = algbw x 0.7500"), text);
        List<String> rows = text.lines().filter(l -> !l.startsWith("#")).toList();
        assertEquals(3, rows.size(), text);
        assertTrue(rows.get(0).matches("\\s+1024\\s+1024\\s+128\\s+256\\s+1024\\s+nccl, nccl-symm"), rows.get(0));
        assertTrue(rows.get(1).matches("\\s+1026\\s+1024\\s+128\\s+256\\s+1024.*"), "rounded down: " + rows.get(1));
        assertTrue(rows.get(2).contains("skipped"), rows.get(2));
        resetOut();
        assertEquals(0, Ar4jPerf.run("--plan", "nvlink:2", "-o", "broadcast", "--sizes", "1K"));
        assertTrue(out().contains("ncclBroadcast") && out().contains("x 1.0000"), out());
        resetOut();
        assertEquals(0, Ar4jPerf.run("--plan", "nvlink:8", "-o", "reducescatter", "--sizes", "1M"));
        assertTrue(out().contains("ncclReduceScatter") && out().contains("x 0.8750"), out());
    }

    @Test
    void planShowsTheFusedScenariosRowsAndThePdlSettings() {
        assertEquals(0, Ar4jPerf.run("--plan", "nvlink:2", "--scenario", "verify-fused", "--pdl", "on,off"));
        String text = out();
        assertTrue(text.contains("122 x (all-reduce of 3 x 7168 bf16 = 43008 B"), text);
        assertTrue(text.contains("push+norm") && text.contains("ar4j push -> push"), text);
        assertTrue(text.contains("nccl+norm") && text.contains("nccl-symm+norm"), text);
        assertTrue(text.matches("(?s).*\\n\\s*fused\\s+Communicator\\.allReduceResidualRmsNorm -> fused \\(push: .*"), text);
        assertTrue(!text.contains("not available"), text);
        assertTrue(text.contains("on (Builder.pdl(true), -Dar4j.pdl=1), then off (Builder.pdl(false), -Dar4j.pdl=0)"), text);
        resetOut();
        assertEquals(0, Ar4jPerf.run("--plan", "nvlink:2", "--scenario", "verify-fused", "-d", "fp32"));
        assertTrue(out().contains("86016 B") && out().contains("within 1.0E-5 relative"), out());
    }

    @Test
    void combinationsThatCannotRunAreRefusedWithTheReason() {
        assertEquals(2, Ar4jPerf.run("--plan", "nvlink:2", "-o", "allgather", "-a", "push"));
        assertTrue(err().contains("runs through NCCL only") && err().contains("-a push"), err());
        assertEquals(2, Ar4jPerf.run("--plan", "nvlink:2", "-o", "broadcast", "--scenario", "verify"));
        assertTrue(err().contains("all-reduce scenario"), err());
        assertEquals(2, Ar4jPerf.run("--plan", "nvlink:2", "-o", "reducescatter", "--registered"));
        assertTrue(err().contains("--registered"), err());
        assertEquals(2, Ar4jPerf.run("--plan", "nvlink:2", "-o", "alltoall"));
        assertTrue(err().contains(Operation.ACCEPTED), err());
        assertEquals(2, Ar4jPerf.run("--plan", "nvlink:2", "--scenario", "verify-fused", "--in-place"));
        assertTrue(err().contains("out of place"), err());
        assertEquals(2, Ar4jPerf.run("--plan", "nvlink:2", "--scenario", "verify-fused", "--sizes", "1K"));
        assertTrue(err().contains("fixed size"), err());
        assertEquals(2, Ar4jPerf.run("--plan", "nvlink:2", "--pdl", "sometimes"));
        assertTrue(err().contains("--pdl"), err());
    }

    @Test
    void helpDocumentsTheNewOptions() {
        assertEquals(0, Ar4jPerf.run("--help"));
        String help = out();
        for (String s : List.of("-o, --op=OP", "allgather, reducescatter, broadcast", "verify-fused", "--pdl=LIST",
                "-Dar4j.pdl", "AR4J_PDL", "--[no-]threads", "allReduceResidualRmsNorm")) {
            assertTrue(help.contains(s), s + " in:\n" + help);
        }
    }

    @Test
    void shareGpuRunsEveryRankAsAThreadOfOneJvmAndRefusesAJvmPerRank() {
        assertEquals(0, Ar4jPerf.run("--plan", "nvlink:2", "--share-gpu", "--sizes", "1K,43008,256K", "-a",
                "push,1stage,2stage", "--pdl", "on,off"));
        assertTrue(out().contains("# process model: one JVM, every rank a thread of it"), out());
        assertTrue(out().contains("each a thread of one JVM (one CUDA context"), out());
        resetOut();
        assertEquals(0, Ar4jPerf.run("--plan", "nvlink:2", "--share-gpu", "--threads"));
        assertTrue(out().contains("# process model: one JVM, every rank a thread of it"), out());
        resetOut();
        assertEquals(2, Ar4jPerf.run("--plan", "nvlink:2", "--share-gpu", "--no-threads", "--scenario", "verify-fused"));
        assertTrue(err().contains("--share-gpu runs every rank as a thread of one JVM")
                && err().contains("time-slices") && err().contains("without MPS")
                && err().contains("Leave out --no-threads"), err());
        assertTrue(out().isEmpty(), "nothing planned: " + out());
        assertEquals(0, Ar4jPerf.run("--plan", "nvlink:2"));
        assertTrue(out().contains("# process model: one JVM per GPU"), out());
        resetOut();
        assertEquals(0, Ar4jPerf.run("--plan", "nvlink:2", "--threads"));
        assertTrue(out().contains("# process model: one JVM, every rank a thread of it"), out());
        resetOut();
        assertEquals(0, Ar4jPerf.run("--plan", "nvlink:2", "--no-threads"));
        assertTrue(out().contains("# process model: one JVM per GPU"), out());

        assertTrue(WorkerLauncher.threads(true, null), "--share-gpu: threads by default");
        assertTrue(WorkerLauncher.threads(true, true));
        assertTrue(!WorkerLauncher.threads(false, null), "a GPU per rank: a JVM per GPU by default");
        assertTrue(WorkerLauncher.threads(false, true));
        assertTrue(!WorkerLauncher.threads(false, false));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> WorkerLauncher.threads(true, false));
        assertEquals(WorkerLauncher.SHARE_GPU_NEEDS_THREADS, e.getMessage());
    }

    @Test
    void shareGpuRunsAr4jsKernelsOnlyOnGpuZero() {
        assertEquals(0, Ar4jPerf.run("--plan", "nvlink:2", "--share-gpu", "--scenario", "verify-fused", "--pdl", "on,off"));
        String text = out();
        assertTrue(text.contains("columns push\n") || text.contains("columns push" + System.lineSeparator()), text);
        assertTrue(text.contains("--share-gpu: every rank on GPU 0, each a thread of one JVM") && text.contains("built with nccl(false)"), text);
        assertTrue(!text.contains("nccl+norm"), "no NCCL row: " + text);
        assertTrue(text.contains("push+norm") && text.contains("allReduceResidualRmsNorm -> fused"), text);
        assertEquals(2, Ar4jPerf.run("--plan", "nvlink:2", "--share-gpu", "-o", "allgather"));
        assertTrue(err().contains("refuses two ranks on one GPU"), err());
        assertEquals(2, Ar4jPerf.run("--plan", "nvlink:2", "--share-gpu", "-a", "nccl"));
        assertTrue(err().contains("ar4j's kernels only"), err());
        GpuCheck oneGpu = new GpuCheck(1, null, "2.28.3");
        assertEquals(2, oneGpu.worldSize(0, true), "two ranks on the one GPU by default");
        assertEquals(8, oneGpu.worldSize(8, true));
        assertThrows(IllegalArgumentException.class, () -> oneGpu.worldSize(3, true));
        assertThrows(IllegalArgumentException.class, () -> oneGpu.worldSize(2, false), "without --share-gpu: 2 GPUs");
    }

    @Test
    void theLogTapHearsWhatTheCommunicatorLogsWhileOpenAndNothingAfter() {
        System.Logger log = System.getLogger(RuntimeLogTap.LOGGER);
        String heard;
        try (RuntimeLogTap tap = RuntimeLogTap.open()) {
            log.log(System.Logger.Level.INFO, "ar4j rank 0/2 on GPU 0: x; custom kernels ready (grid 1x1, PDL on)");
            heard = tap.text();
        }
        assertEquals(Optional.of("custom kernels ready (grid 1x1, PDL on)"), PdlSetting.reportedIn(heard));
        RuntimeLogTap late = RuntimeLogTap.open();
        late.close();
        log.log(System.Logger.Level.INFO, "after close: PDL off");
        assertEquals("", late.text(), "a closed tap hears nothing");
    }
}
