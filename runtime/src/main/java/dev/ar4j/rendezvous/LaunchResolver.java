package dev.ar4j.rendezvous;

import dev.ar4j.rendezvous.LaunchEnvironment.Source;

import java.util.Map;

/**
 * Resolves one {@link LaunchEnvironment.Builder}'s values against one environment: builder values
 * win, the rest comes from the {@link LauncherVariables}; checks the result and explains it.
 */
final class LaunchResolver {
    private static final String LOOPBACK = "127.0.0.1";
    private static final LaunchValue<Integer> SINGLE_PROCESS_WORLD = new LaunchValue<>(1, "default for a single process");
    private static final LaunchValue<Integer> SINGLE_PROCESS_RANK = new LaunchValue<>(0, "default for a single process");

    private final Integer builderRank;
    private final Integer builderWorldSize;
    private final Integer builderLocalRank;
    private final Integer builderLocalWorldSize;
    private final String builderMasterAddr;
    private final Integer builderMasterPort;
    private final LauncherVariables vars;
    private final Launcher launcher;

    /** The builder's values, each null where the builder did not set it, and the environment to read. */
    LaunchResolver(Integer rank, Integer worldSize, Integer localRank, Integer localWorldSize, String masterAddr,
                   Integer masterPort, Map<String, String> env) {
        this.builderRank = rank;
        this.builderWorldSize = worldSize;
        this.builderLocalRank = localRank;
        this.builderLocalWorldSize = localWorldSize;
        this.builderMasterAddr = masterAddr;
        this.builderMasterPort = masterPort;
        this.vars = new LauncherVariables(env);
        this.launcher = vars.launcher();
    }

    LaunchEnvironment resolve() {
        LaunchValue<Integer> worldSize = builderWorldSize != null
                ? new LaunchValue<>(builderWorldSize, "builder worldSize")
                : vars.fromLauncher("WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", SINGLE_PROCESS_WORLD);
        LaunchValue<Integer> rank = builderRank != null
                ? new LaunchValue<>(builderRank, "builder rank")
                : vars.fromLauncher("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", SINGLE_PROCESS_RANK);
        requireAtLeast(worldSize, 1, "world size");
        requireAtLeast(rank, 0, "rank");
        if (rank.value() >= worldSize.value()) {
            throw new IllegalArgumentException("rank " + rank + " is out of range for world size " + worldSize
                    + "; ranks are 0.." + (worldSize.value() - 1));
        }

        LaunchValue<Integer> localWorldSize = builderLocalWorldSize != null
                ? new LaunchValue<>(builderLocalWorldSize, "builder localWorldSize")
                : launcher == Launcher.SLURM ? vars.slurmTasksOnThisNode()
                : vars.fromLauncher("LOCAL_WORLD_SIZE", null, "OMPI_COMM_WORLD_LOCAL_SIZE", singleRankDefault(worldSize, 1));
        LaunchValue<Integer> localRank = builderLocalRank != null
                ? new LaunchValue<>(builderLocalRank, "builder localRank")
                : vars.fromLauncher("LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", singleRankDefault(worldSize, 0));
        requireAtLeast(localWorldSize, 1, "local world size");
        requireAtLeast(localRank, 0, "local rank");
        if (localWorldSize.value() > worldSize.value()) {
            throw new IllegalArgumentException("local world size " + localWorldSize + " is larger than the world size "
                    + worldSize + "; a host cannot run more ranks than the whole group has");
        }
        if (localRank.value() >= localWorldSize.value()) {
            throw new IllegalArgumentException("local rank " + localRank + " is out of range for local world size "
                    + localWorldSize + "; local ranks are 0.." + (localWorldSize.value() - 1));
        }

        LaunchValue<String> masterAddr = masterAddr(worldSize.value(), localWorldSize.value());
        LaunchValue<Integer> masterPort = masterPort();

        Source source;
        if (builderRank != null && builderWorldSize != null) {
            source = Source.EXPLICIT;
        } else if (launcher != null) {
            source = launcher.source;
        } else if (builderRank != null || builderWorldSize != null) {
            source = Source.EXPLICIT;
        } else {
            source = Source.SINGLE_PROCESS;
        }
        String explanation = "source " + source + (launcher != null ? " (" + launcher.displayName
                + " variables found, " + vars.detectedBy() + " is set)" : " (no launcher variables found)")
                + "; rank " + rank + "; world size " + worldSize + "; local rank " + localRank
                + "; local world size " + localWorldSize + "; master address " + masterAddr
                + "; master port " + masterPort;
        return new LaunchEnvironment(rank.value(), worldSize.value(), localRank.value(), localWorldSize.value(),
                masterAddr.value(), masterPort.value(), source, explanation);
    }

    /** The default for a field no launcher sets: fine for a single rank, an error otherwise. */
    private LaunchValue<Integer> singleRankDefault(LaunchValue<Integer> worldSize, int value) {
        if (worldSize.value() == 1) {
            return new LaunchValue<>(value, "default for a single rank");
        }
        return null;
    }

    private LaunchValue<String> masterAddr(int worldSize, int localWorldSize) {
        if (builderMasterAddr != null) {
            return new LaunchValue<>(builderMasterAddr, "builder masterAddr");
        }
        for (String variable : new String[] {LaunchEnvironment.AR4J_MASTER_ADDR, "MASTER_ADDR"}) {
            if (vars.isSet(variable)) {
                return new LaunchValue<>(vars.get(variable).trim(), variable);
            }
        }
        if (worldSize == 1) {
            return new LaunchValue<>(LOOPBACK, "default for a single rank");
        }
        if (localWorldSize == worldSize) {
            return new LaunchValue<>(LOOPBACK, "default: all " + worldSize + " ranks run on this host");
        }
        String unparsedNodeList = null;
        if (launcher == Launcher.SLURM) {
            LaunchValue<String> slurm = vars.slurmMasterAddr();
            if (slurm != null) {
                return slurm;
            }
            unparsedNodeList = vars.unreadableSlurmNodeList();
        }
        throw new IllegalArgumentException("no master address: the " + worldSize + " ranks span several hosts ("
                + localWorldSize + " on this one) and none of builder masterAddr, " + LaunchEnvironment.AR4J_MASTER_ADDR
                + ", MASTER_ADDR is set" + (unparsedNodeList != null ? " (" + unparsedNodeList
                + " is not a simple host list ar4j can read)" : "")
                + "; set MASTER_ADDR to the host name or address of rank 0's host");
    }

    private LaunchValue<Integer> masterPort() {
        String ar4jPort = LaunchEnvironment.AR4J_MASTER_PORT;
        if (builderMasterPort != null) {
            return new LaunchValue<>(checkPort(builderMasterPort, "builder masterPort " + builderMasterPort), "builder masterPort");
        }
        if (vars.isSet(ar4jPort)) {
            return new LaunchValue<>(checkPort(vars.parseInt(ar4jPort), ar4jPort + "='" + vars.get(ar4jPort) + "'"),
                    ar4jPort);
        }
        if (vars.isSet("MASTER_PORT")) {
            int port = checkPort(vars.parseInt("MASTER_PORT"), "MASTER_PORT='" + vars.get("MASTER_PORT") + "'");
            if (vars.torchrunAgentServesStore()) {
                if (port == 65535) {
                    throw new IllegalArgumentException("MASTER_PORT=65535 is taken by torchrun's own store"
                            + " (TORCHELASTIC_USE_AGENT_STORE=True) and ar4j's default, MASTER_PORT + 1, does not"
                            + " exist; set " + ar4jPort + " to a free port");
                }
                return new LaunchValue<>(port + 1, "MASTER_PORT + 1, because TORCHELASTIC_USE_AGENT_STORE=True means"
                        + " torchrun's agent serves its own store on MASTER_PORT; set " + ar4jPort
                        + " to choose another");
            }
            return new LaunchValue<>(port, "MASTER_PORT");
        }
        return new LaunchValue<>(LaunchEnvironment.DEFAULT_MASTER_PORT, "default");
    }

    private static int checkPort(int port, String what) {
        if (port < 1 || port > 65535) {
            throw new IllegalArgumentException(what + " is not a TCP port; expected 1..65535");
        }
        return port;
    }

    private static void requireAtLeast(LaunchValue<Integer> value, int minimum, String name) {
        if (value.value() < minimum) {
            throw new IllegalArgumentException(name + " " + value + (minimum == 0 ? " must not be negative"
                    : " must be at least " + minimum));
        }
    }
}
