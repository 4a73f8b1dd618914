package dev.ar4j.rendezvous;

import dev.ar4j.ConfigurationException;
import dev.ar4j.rendezvous.LaunchEnvironment.Source;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class LaunchEnvironmentTest {

    private static Map<String, String> env(String... keysAndValues) {
        Map<String, String> map = new HashMap<>();
        for (int i = 0; i < keysAndValues.length; i += 2) {
            map.put(keysAndValues[i], keysAndValues[i + 1]);
        }
        return map;
    }

    private static Map<String, String> torchrun() {
        return env("RANK", "5", "WORLD_SIZE", "8", "LOCAL_RANK", "1", "LOCAL_WORLD_SIZE", "4",
                "MASTER_ADDR", "10.0.0.1", "MASTER_PORT", "29400");
    }

    private static String failure(Map<String, String> environment) {
        return assertThrows(ConfigurationException.class, () -> LaunchEnvironment.fromEnvironment(environment))
                .getMessage();
    }

    private static void assertContains(String text, String... parts) {
        for (String part : parts) {
            assertTrue(text.contains(part), () -> "expected '" + part + "' in: " + text);
        }
    }

    @Test
    void readsTorchrun() {
        LaunchEnvironment e = LaunchEnvironment.fromEnvironment(torchrun());
        assertEquals(5, e.rank());
        assertEquals(8, e.worldSize());
        assertEquals(1, e.localRank());
        assertEquals(4, e.localWorldSize());
        assertEquals("10.0.0.1", e.masterAddr());
        assertEquals(29400, e.masterPort());
        assertEquals(Source.TORCHRUN, e.source());
        assertFalse(e.isSingleHost());
        assertContains(e.explain(), "RANK, torchrun", "MASTER_PORT");
    }

    @Test
    void torchrunAgentStoreMovesThePortByOne() {
        Map<String, String> m = torchrun();
        m.put("TORCHELASTIC_USE_AGENT_STORE", "True");
        LaunchEnvironment e = LaunchEnvironment.fromEnvironment(m);
        assertEquals(29401, e.masterPort());
        assertContains(e.explain(), "MASTER_PORT + 1", "TORCHELASTIC_USE_AGENT_STORE");
        m.put("AR4J_MASTER_PORT", "31000");
        assertEquals(31000, LaunchEnvironment.fromEnvironment(m).masterPort());
        m.remove("AR4J_MASTER_PORT");
        m.put("MASTER_PORT", "65535");
        assertContains(failure(m), "AR4J_MASTER_PORT");
    }

    @Test
    void readsSlurmWithCompressedTasksPerNode() {
        LaunchEnvironment e = LaunchEnvironment.fromEnvironment(env(
                "SLURM_PROCID", "6", "SLURM_NTASKS", "8", "SLURM_LOCALID", "2", "SLURM_TASKS_PER_NODE", "4(x2)",
                "SLURM_JOB_NODELIST", "gpu[007-008]", "SLURM_LAUNCH_NODE_IPADDR", "10.1.1.1"));
        assertEquals(6, e.rank());
        assertEquals(8, e.worldSize());
        assertEquals(2, e.localRank());
        assertEquals(4, e.localWorldSize());
        assertEquals("gpu007", e.masterAddr());
        assertEquals(LaunchEnvironment.DEFAULT_MASTER_PORT, e.masterPort());
        assertEquals(Source.SLURM, e.source());
    }

    @Test
    void slurmTasksPerNodeVariants() {
        Map<String, String> base = env("SLURM_PROCID", "0", "SLURM_NTASKS", "7", "SLURM_LOCALID", "0",
                "MASTER_ADDR", "head");
        Map<String, String> m = new HashMap<>(base);
        m.put("SLURM_NTASKS_PER_NODE", "3");
        m.put("SLURM_TASKS_PER_NODE", "9");
        assertEquals(3, LaunchEnvironment.fromEnvironment(m).localWorldSize(), "SLURM_NTASKS_PER_NODE beats SLURM_TASKS_PER_NODE");
        m.put("SLURM_STEP_TASKS_PER_NODE", "2(x2),3");
        m.put("SLURM_NODEID", "2");
        assertEquals(3, LaunchEnvironment.fromEnvironment(m).localWorldSize(), "the step's list, entry of this node");
        m.remove("SLURM_NODEID");
        assertContains(failure(m), "SLURM_STEP_TASKS_PER_NODE='2(x2),3'", "SLURM_NODEID is not set");
        m.put("SLURM_STEP_TASKS_PER_NODE", "four");
        assertContains(failure(m), "SLURM_STEP_TASKS_PER_NODE='four' is not a Slurm tasks-per-node list", "4(x2)");
        Map<String, String> none = new HashMap<>(base);
        assertContains(failure(none), "SLURM_TASKS_PER_NODE", "srun");
    }

    @Test
    void slurmMasterAddressFallbacks() {
        Map<String, String> m = env("SLURM_PROCID", "1", "SLURM_NTASKS", "4", "SLURM_LOCALID", "1",
                "SLURM_TASKS_PER_NODE", "2(x2)", "SLURM_JOB_NODELIST", "nodeA,nodeB");
        assertEquals("nodeA", LaunchEnvironment.fromEnvironment(m).masterAddr());
        m.put("SLURM_STEP_NODELIST", "nodeB,nodeC");
        assertEquals("nodeB", LaunchEnvironment.fromEnvironment(m).masterAddr(), "the step's node list comes first");
        m.put("SLURM_STEP_NODELIST", "rack[1-2]-gpu[3-4]");
        m.put("SLURM_LAUNCH_NODE_IPADDR", "10.2.2.2");
        assertEquals("10.2.2.2", LaunchEnvironment.fromEnvironment(m).masterAddr(), "an intricate list is not guessed at");
        m.remove("SLURM_LAUNCH_NODE_IPADDR");
        assertContains(failure(m), "MASTER_ADDR", "rack[1-2]-gpu[3-4]", "not a simple host list");
        m.put("MASTER_ADDR", "explicit-head");
        assertEquals("explicit-head", LaunchEnvironment.fromEnvironment(m).masterAddr());
    }

    @Test
    void firstHostOfNodeList() {
        assertEquals("n1", LaunchEnvironment.fromEnvironment(slurmOnNodes("n1")).masterAddr());
        assertEquals("gpu-a01", LaunchEnvironment.fromEnvironment(slurmOnNodes("gpu-a[01-04,09],cpu[1-2]")).masterAddr());
        assertEquals("x12", LaunchEnvironment.fromEnvironment(slurmOnNodes("x[12],y[3]")).masterAddr());
    }

    private static Map<String, String> slurmOnNodes(String nodeList) {
        return env("SLURM_PROCID", "0", "SLURM_NTASKS", "2", "SLURM_LOCALID", "0", "SLURM_TASKS_PER_NODE", "1(x2)",
                "SLURM_JOB_NODELIST", nodeList);
    }

    @Test
    void readsOpenMpiAndDefaultsToLoopbackOnOneHost() {
        LaunchEnvironment e = LaunchEnvironment.fromEnvironment(env("OMPI_COMM_WORLD_RANK", "3", "OMPI_COMM_WORLD_SIZE", "4",
                "OMPI_COMM_WORLD_LOCAL_RANK", "3", "OMPI_COMM_WORLD_LOCAL_SIZE", "4"));
        assertEquals(3, e.rank());
        assertEquals(4, e.worldSize());
        assertEquals(3, e.localRank());
        assertEquals(4, e.localWorldSize());
        assertEquals("127.0.0.1", e.masterAddr());
        assertTrue(e.isSingleHost());
        assertEquals(Source.OPEN_MPI, e.source());
    }

    @Test
    void nothingSetIsASingleProcess() {
        LaunchEnvironment e = LaunchEnvironment.fromEnvironment(Map.of());
        assertEquals(0, e.rank());
        assertEquals(1, e.worldSize());
        assertEquals(0, e.localRank());
        assertEquals(1, e.localWorldSize());
        assertEquals("127.0.0.1", e.masterAddr());
        assertEquals(Source.SINGLE_PROCESS, e.source());
    }

    @Test
    void torchrunWinsOverSlurmAndOpenMpi() {
        Map<String, String> m = torchrun();
        m.putAll(env("SLURM_PROCID", "0", "SLURM_NTASKS", "2", "SLURM_LOCALID", "0", "SLURM_TASKS_PER_NODE", "1(x2)",
                "OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "2"));
        LaunchEnvironment e = LaunchEnvironment.fromEnvironment(m);
        assertEquals(Source.TORCHRUN, e.source());
        assertEquals(5, e.rank());
        assertEquals(8, e.worldSize());
    }

    @Test
    void slurmWinsOverOpenMpi() {
        Map<String, String> m = env("SLURM_PROCID", "1", "SLURM_NTASKS", "2", "SLURM_LOCALID", "1", "SLURM_TASKS_PER_NODE", "2",
                "OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "1", "OMPI_COMM_WORLD_LOCAL_RANK", "0",
                "OMPI_COMM_WORLD_LOCAL_SIZE", "1");
        LaunchEnvironment e = LaunchEnvironment.fromEnvironment(m);
        assertEquals(Source.SLURM, e.source());
        assertEquals(1, e.rank());
        assertEquals(2, e.worldSize());
    }

    @Test
    void builderValuesWinFieldByField() {
        LaunchEnvironment e = LaunchEnvironment.builder().rank(2).worldSize(3).localRank(2).localWorldSize(3)
                .masterAddr("h0").masterPort(40000).build(torchrun());
        assertEquals(2, e.rank());
        assertEquals(3, e.worldSize());
        assertEquals("h0", e.masterAddr());
        assertEquals(40000, e.masterPort());
        assertEquals(Source.EXPLICIT, e.source());

        LaunchEnvironment partial = LaunchEnvironment.builder().masterAddr("other").build(torchrun());
        assertEquals(Source.TORCHRUN, partial.source());
        assertEquals(5, partial.rank());
        assertEquals("other", partial.masterAddr());
        assertContains(partial.explain(), "builder masterAddr");

        Map<String, String> m = torchrun();
        m.put("AR4J_MASTER_ADDR", "ar4j-head");
        assertEquals("ar4j-head", LaunchEnvironment.fromEnvironment(m).masterAddr(), "AR4J_MASTER_ADDR beats MASTER_ADDR");
    }

    @Test
    void builderAloneNeedsLocalValuesForSeveralRanks() {
        assertContains(assertThrows(ConfigurationException.class,
                        () -> LaunchEnvironment.builder().rank(1).worldSize(2).build(Map.of())).getMessage(),
                "localRank(...)", "localWorldSize(...)");
        LaunchEnvironment e = LaunchEnvironment.builder().rank(1).worldSize(2).localRank(1).localWorldSize(2).build(Map.of());
        assertEquals("127.0.0.1", e.masterAddr());
        assertEquals(Source.EXPLICIT, e.source());
    }

    @Test
    void rejectsNonIntegers() {
        Map<String, String> m = torchrun();
        m.put("RANK", "one");
        assertContains(failure(m), "RANK='one' is not an integer");
        m = torchrun();
        m.put("MASTER_PORT", "http");
        assertContains(failure(m), "MASTER_PORT='http' is not an integer");
        assertContains(failure(env("OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "2.0",
                "OMPI_COMM_WORLD_LOCAL_RANK", "0", "OMPI_COMM_WORLD_LOCAL_SIZE", "1")), "OMPI_COMM_WORLD_SIZE='2.0'");
    }

    @Test
    void rejectsRankOutOfRange() {
        Map<String, String> m = torchrun();
        m.put("RANK", "8");
        assertContains(failure(m), "rank 8 (from RANK, torchrun) is out of range for world size 8", "ranks are 0..7");
        m = torchrun();
        m.put("LOCAL_RANK", "4");
        assertContains(failure(m), "local rank 4 (from LOCAL_RANK, torchrun) is out of range for local world size 4");
        m = torchrun();
        m.put("LOCAL_WORLD_SIZE", "9");
        assertContains(failure(m), "local world size 9", "larger than the world size 8");
    }

    @Test
    void rejectsNegativeAndZero() {
        Map<String, String> m = torchrun();
        m.put("RANK", "-1");
        assertContains(failure(m), "rank -1 (from RANK, torchrun) must not be negative");
        m = torchrun();
        m.put("LOCAL_RANK", "-2");
        assertContains(failure(m), "local rank -2 (from LOCAL_RANK, torchrun) must not be negative");
        m = torchrun();
        m.put("WORLD_SIZE", "0");
        m.put("RANK", "0");
        assertContains(failure(m), "world size 0 (from WORLD_SIZE, torchrun) must be at least 1");
        m = torchrun();
        m.put("MASTER_PORT", "70000");
        assertContains(failure(m), "MASTER_PORT='70000' is not a TCP port; expected 1..65535");
        assertContains(assertThrows(ConfigurationException.class,
                () -> LaunchEnvironment.builder().masterPort(0).build(torchrun())).getMessage(), "builder masterPort 0");
    }

    @Test
    void rejectsMissingMasterAddressAcrossHosts() {
        Map<String, String> m = torchrun();
        m.remove("MASTER_ADDR");
        assertContains(failure(m), "no master address", "8 ranks span several hosts", "set MASTER_ADDR");
        Map<String, String> mpi = env("OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "8",
                "OMPI_COMM_WORLD_LOCAL_RANK", "0", "OMPI_COMM_WORLD_LOCAL_SIZE", "4");
        assertContains(failure(mpi), "set MASTER_ADDR");
    }

    @Test
    void rejectsIncompleteLauncherVariables() {
        Map<String, String> m = torchrun();
        m.remove("LOCAL_WORLD_SIZE");
        assertContains(failure(m), "torchrun launch detected (RANK is set) but LOCAL_WORLD_SIZE is not set",
                "set all four");
        assertContains(failure(env("SLURM_PROCID", "0")), "Slurm launch detected (SLURM_PROCID is set) but SLURM_NTASKS is not set", "srun");
        assertContains(failure(env("OMPI_COMM_WORLD_SIZE", "2")), "Open MPI launch detected (OMPI_COMM_WORLD_SIZE is set)",
                "OMPI_COMM_WORLD_RANK is not set");
    }

    @Test
    void valueSemantics() {
        LaunchEnvironment a = LaunchEnvironment.fromEnvironment(torchrun());
        LaunchEnvironment b = LaunchEnvironment.fromEnvironment(torchrun());
        assertEquals(a, b);
        assertEquals(a.hashCode(), b.hashCode());
        assertEquals("LaunchEnvironment[rank=5, worldSize=8, localRank=1, localWorldSize=4, master=10.0.0.1:29400,"
                + " source=TORCHRUN]", a.toString());
    }
}
