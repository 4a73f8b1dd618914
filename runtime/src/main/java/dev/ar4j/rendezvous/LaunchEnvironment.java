package dev.ar4j.rendezvous;

import java.util.Arrays;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Where this process sits in its launch: rank, world size, local rank and local world size (the
 * ranks on this host), and the master address and port where rank 0 serves the rendezvous.
 *
 * <h2>Sources, strongest first</h2>
 * <ol>
 *   <li>Values given to the {@link #builder()} win, field by field.</li>
 *   <li>torchrun: {@code RANK}, {@code WORLD_SIZE}, {@code LOCAL_RANK}, {@code LOCAL_WORLD_SIZE}
 *       (all four, once any is set).</li>
 *   <li>Slurm (when {@code SLURM_PROCID} is set): {@code SLURM_PROCID}, {@code SLURM_NTASKS},
 *       {@code SLURM_LOCALID}, and the tasks on this node from {@code SLURM_STEP_TASKS_PER_NODE},
 *       {@code SLURM_NTASKS_PER_NODE} or {@code SLURM_TASKS_PER_NODE} (such as {@code 4(x2),3};
 *       for uneven lists {@code SLURM_NODEID} picks the entry).</li>
 *   <li>Open MPI: {@code OMPI_COMM_WORLD_RANK}, {@code OMPI_COMM_WORLD_SIZE},
 *       {@code OMPI_COMM_WORLD_LOCAL_RANK}, {@code OMPI_COMM_WORLD_LOCAL_SIZE}.</li>
 *   <li>None of these: a single process, rank 0 of 1.</li>
 * </ol>
 * One launcher is picked by the first of these whose variables are present; its variables are not
 * mixed with another launcher's (a torchrun job inside a Slurm allocation uses torchrun's).
 *
 * <h2>Master address and port</h2>
 * Address: the builder, {@code AR4J_MASTER_ADDR}, {@code MASTER_ADDR}; else {@code 127.0.0.1} when
 * all ranks run on one host (local world size equals world size); else, under Slurm, the first host
 * of {@code SLURM_STEP_NODELIST} / {@code SLURM_JOB_NODELIST} when that list is simple
 * ({@code node07,node08} or {@code gpu[003-010]}; rank 0 runs on the first node of the step), then
 * {@code SLURM_LAUNCH_NODE_IPADDR}; otherwise it is an error that names {@code MASTER_ADDR}.
 *
 * <p>Port: the builder, {@code AR4J_MASTER_PORT}, {@code MASTER_PORT}, else
 * {@value #DEFAULT_MASTER_PORT}. Under torchrun with {@code TORCHELASTIC_USE_AGENT_STORE=True} the
 * torchrun agent already serves its own store on {@code MASTER_PORT}, so ar4j takes
 * {@code MASTER_PORT + 1}; set {@code AR4J_MASTER_PORT} to choose another.
 *
 * <p>{@link #explain()} says where each value came from. Invalid values fail here, naming the
 * variable, its value and what is accepted.
 */
public final class LaunchEnvironment {

    /** Which launcher the values came from. */
    public enum Source {
        /** The builder gave rank and world size. */
        EXPLICIT,
        /** torchrun's {@code RANK}/{@code WORLD_SIZE}/{@code LOCAL_RANK}/{@code LOCAL_WORLD_SIZE}. */
        TORCHRUN,
        /** Slurm's {@code SLURM_*} variables (srun). */
        SLURM,
        /** Open MPI's {@code OMPI_COMM_WORLD_*} variables (mpirun). */
        OPEN_MPI,
        /** No launcher variables and no builder values: rank 0 of 1. */
        SINGLE_PROCESS
    }

    /** The master port when no variable or builder value gives one (torchrun's default too). */
    public static final int DEFAULT_MASTER_PORT = 29500;
    /** ar4j's own master address variable; beats {@code MASTER_ADDR}. */
    public static final String AR4J_MASTER_ADDR = "AR4J_MASTER_ADDR";
    /** ar4j's own master port variable; beats {@code MASTER_PORT}. */
    public static final String AR4J_MASTER_PORT = "AR4J_MASTER_PORT";

    private static final String LOOPBACK = "127.0.0.1";
    private static final Pattern TASKS_PER_NODE_ITEM = Pattern.compile("(\\d+)(?:\\(x(\\d+)\\))?");
    private static final Pattern FIRST_PLAIN_HOST = Pattern.compile("^([A-Za-z0-9][A-Za-z0-9._-]*)(?:,|$)");
    private static final Pattern FIRST_RANGED_HOST =
            Pattern.compile("^([A-Za-z0-9][A-Za-z0-9._-]*)\\[(\\d+)[-,\\d]*\\](?:,|$)");

    private final int rank;
    private final int worldSize;
    private final int localRank;
    private final int localWorldSize;
    private final String masterAddr;
    private final int masterPort;
    private final Source source;
    private final String explanation;

    private LaunchEnvironment(int rank, int worldSize, int localRank, int localWorldSize, String masterAddr,
                              int masterPort, Source source, String explanation) {
        this.rank = rank;
        this.worldSize = worldSize;
        this.localRank = localRank;
        this.localWorldSize = localWorldSize;
        this.masterAddr = masterAddr;
        this.masterPort = masterPort;
        this.source = source;
        this.explanation = explanation;
    }

    /**
     * Reads the process environment ({@link System#getenv()}).
     *
     * @return this process's place in its launch
     * @throws IllegalArgumentException naming the variable whose value is missing or invalid
     */
    public static LaunchEnvironment fromSystem() {
        return builder().build();
    }

    /**
     * Reads {@code environment}, a map of variable names to values.
     *
     * @param environment the variables to read, instead of the process environment
     * @return this process's place in its launch
     * @throws IllegalArgumentException naming the variable whose value is missing or invalid
     * @throws NullPointerException if {@code environment} is {@code null}
     */
    public static LaunchEnvironment fromEnvironment(Map<String, String> environment) {
        return builder().build(environment);
    }

    /**
     * A builder whose values win over the environment's.
     *
     * @return a new builder with no values set
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * This process's rank, {@code 0 <= rank < worldSize}.
     *
     * @return the rank, 0 to {@link #worldSize()} - 1
     */
    public int rank() {
        return rank;
    }

    /**
     * How many ranks the group has.
     *
     * @return the world size, at least 1
     */
    public int worldSize() {
        return worldSize;
    }

    /**
     * This process's index among the ranks of its host, usually its GPU index.
     *
     * @return the local rank, 0 to {@link #localWorldSize()} - 1
     */
    public int localRank() {
        return localRank;
    }

    /**
     * How many ranks run on this host.
     *
     * @return the local world size, 1 to {@link #worldSize()}
     */
    public int localWorldSize() {
        return localWorldSize;
    }

    /**
     * Host name or address where rank 0 serves the rendezvous.
     *
     * @return the master address, trimmed and not blank
     */
    public String masterAddr() {
        return masterAddr;
    }

    /**
     * Port where rank 0 serves the rendezvous.
     *
     * @return the port, 1 to 65535
     */
    public int masterPort() {
        return masterPort;
    }

    /**
     * Which launcher the values came from.
     *
     * @return the source of rank and world size
     */
    public Source source() {
        return source;
    }

    /**
     * Whether all ranks run on this host, as the launcher tells it (local world size == world size).
     *
     * @return {@code true} if the local world size equals the world size
     */
    public boolean isSingleHost() {
        return localWorldSize == worldSize;
    }

    /**
     * Where each value came from, for logs and error reports.
     *
     * @return one line per value, each naming the variable or builder call it came from
     */
    public String explain() {
        return explanation;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof LaunchEnvironment other
                && rank == other.rank && worldSize == other.worldSize
                && localRank == other.localRank && localWorldSize == other.localWorldSize
                && masterAddr.equals(other.masterAddr) && masterPort == other.masterPort
                && source == other.source;
    }

    @Override
    public int hashCode() {
        return Objects.hash(rank, worldSize, localRank, localWorldSize, masterAddr, masterPort, source);
    }

    @Override
    public String toString() {
        return "LaunchEnvironment[rank=" + rank + ", worldSize=" + worldSize + ", localRank=" + localRank
                + ", localWorldSize=" + localWorldSize + ", master=" + masterAddr + ":" + masterPort
                + ", source=" + source + "]";
    }

    /**
     * Values that win over the environment, field by field. Unset fields come from the launcher
     * variables (see {@link LaunchEnvironment}).
     */
    public static final class Builder {
        private Integer rank;
        private Integer worldSize;
        private Integer localRank;
        private Integer localWorldSize;
        private String masterAddr;
        private Integer masterPort;

        private Builder() {
        }

        /**
         * This process's rank.
         *
         * @param rank the rank, 0 to world size - 1 (checked at {@link #build(Map)})
         * @return this builder
         */
        public Builder rank(int rank) {
            this.rank = rank;
            return this;
        }

        /**
         * How many ranks the group has.
         *
         * @param worldSize the number of ranks, at least 1 (checked at {@link #build(Map)})
         * @return this builder
         */
        public Builder worldSize(int worldSize) {
            this.worldSize = worldSize;
            return this;
        }

        /**
         * This process's index among the ranks of its host.
         *
         * @param localRank the local rank, 0 to local world size - 1 (checked at {@link #build(Map)})
         * @return this builder
         */
        public Builder localRank(int localRank) {
            this.localRank = localRank;
            return this;
        }

        /**
         * How many ranks run on this host.
         *
         * @param localWorldSize the number of ranks on this host, 1 to the world size (checked at
         *     {@link #build(Map)})
         * @return this builder
         */
        public Builder localWorldSize(int localWorldSize) {
            this.localWorldSize = localWorldSize;
            return this;
        }

        /**
         * Host name or address where rank 0 serves the rendezvous.
         *
         * @param masterAddr the host name or address, not blank; surrounding blanks are removed
         * @return this builder
         * @throws NullPointerException if {@code masterAddr} is {@code null}
         * @throws IllegalArgumentException if {@code masterAddr} is blank
         */
        public Builder masterAddr(String masterAddr) {
            Objects.requireNonNull(masterAddr, "masterAddr");
            if (masterAddr.isBlank()) {
                throw new IllegalArgumentException("master address must not be blank");
            }
            this.masterAddr = masterAddr.trim();
            return this;
        }

        /**
         * Port where rank 0 serves the rendezvous, 1..65535.
         *
         * @param masterPort the TCP port, 1 to 65535 (checked at {@link #build(Map)})
         * @return this builder
         */
        public Builder masterPort(int masterPort) {
            this.masterPort = masterPort;
            return this;
        }

        /**
         * Fills the unset fields from the process environment ({@link System#getenv()}).
         *
         * @return this process's place in its launch
         * @throws IllegalArgumentException naming the value that is missing or invalid and what is accepted
         */
        public LaunchEnvironment build() {
            return build(System.getenv());
        }

        /**
         * Fills the unset fields from {@code environment}.
         *
         * @param environment the variables to read for the unset fields
         * @return this process's place in its launch
         * @throws IllegalArgumentException naming the value that is missing or invalid and what is accepted
         * @throws NullPointerException if {@code environment} is {@code null}
         */
        public LaunchEnvironment build(Map<String, String> environment) {
            return new Resolver(this, Objects.requireNonNull(environment, "environment")).resolve();
        }
    }

    /** A value and where it came from, for messages and {@link #explain()}. */
    private record Resolved<T>(T value, String origin) {
        @Override
        public String toString() {
            return value + " (from " + origin + ")";
        }
    }

    /** The launchers that set rank variables, with what each sets, for detection and messages. */
    private enum Launcher {
        TORCHRUN("torchrun", Source.TORCHRUN,
                "torchrun sets RANK, WORLD_SIZE, LOCAL_RANK and LOCAL_WORLD_SIZE together; set all four, or pass"
                        + " the values to LaunchEnvironment.builder()",
                "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"),
        SLURM("Slurm", Source.SLURM,
                "start the program with srun, which sets SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID and the tasks per"
                        + " node, or pass the values to LaunchEnvironment.builder()",
                "SLURM_PROCID"),
        OPEN_MPI("Open MPI", Source.OPEN_MPI,
                "mpirun sets OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK and"
                        + " OMPI_COMM_WORLD_LOCAL_SIZE together; start the program with mpirun, or pass the values"
                        + " to LaunchEnvironment.builder()",
                "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                "OMPI_COMM_WORLD_LOCAL_SIZE");

        final String displayName;
        final Source source;
        final String hint;
        final String[] markers;

        Launcher(String displayName, Source source, String hint, String... markers) {
            this.displayName = displayName;
            this.source = source;
            this.hint = hint;
            this.markers = markers;
        }
    }

    /** Resolves one builder against one environment. */
    private static final class Resolver {
        private static final Resolved<Integer> SINGLE_PROCESS_WORLD = new Resolved<>(1, "default for a single process");
        private static final Resolved<Integer> SINGLE_PROCESS_RANK = new Resolved<>(0, "default for a single process");
        private final Builder builder;
        private final Map<String, String> env;
        private final Launcher launcher;
        private final String detectedBy;

        Resolver(Builder builder, Map<String, String> env) {
            this.builder = builder;
            this.env = env;
            Launcher found = null;
            String marker = null;
            for (Launcher candidate : Launcher.values()) {
                marker = Arrays.stream(candidate.markers).filter(this::isSet).findFirst().orElse(null);
                if (marker != null) {
                    found = candidate;
                    break;
                }
            }
            this.launcher = found;
            this.detectedBy = marker;
        }

        LaunchEnvironment resolve() {
            Resolved<Integer> worldSize = builder.worldSize != null
                    ? new Resolved<>(builder.worldSize, "builder worldSize")
                    : fromLauncher("WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", SINGLE_PROCESS_WORLD);
            Resolved<Integer> rank = builder.rank != null
                    ? new Resolved<>(builder.rank, "builder rank")
                    : fromLauncher("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", SINGLE_PROCESS_RANK);
            requireAtLeast(worldSize, 1, "world size");
            requireAtLeast(rank, 0, "rank");
            if (rank.value() >= worldSize.value()) {
                throw new IllegalArgumentException("rank " + rank + " is out of range for world size " + worldSize
                        + "; ranks are 0.." + (worldSize.value() - 1));
            }

            Resolved<Integer> localWorldSize = builder.localWorldSize != null
                    ? new Resolved<>(builder.localWorldSize, "builder localWorldSize")
                    : launcher == Launcher.SLURM ? slurmTasksOnThisNode()
                    : fromLauncher("LOCAL_WORLD_SIZE", null, "OMPI_COMM_WORLD_LOCAL_SIZE", singleRankDefault(worldSize, 1));
            Resolved<Integer> localRank = builder.localRank != null
                    ? new Resolved<>(builder.localRank, "builder localRank")
                    : fromLauncher("LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", singleRankDefault(worldSize, 0));
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

            Resolved<String> masterAddr = masterAddr(worldSize.value(), localWorldSize.value());
            Resolved<Integer> masterPort = masterPort();

            Source source;
            if (builder.rank != null && builder.worldSize != null) {
                source = Source.EXPLICIT;
            } else if (launcher != null) {
                source = launcher.source;
            } else if (builder.rank != null || builder.worldSize != null) {
                source = Source.EXPLICIT;
            } else {
                source = Source.SINGLE_PROCESS;
            }
            String explanation = "source " + source + (launcher != null ? " (" + launcher.displayName
                    + " variables found, " + detectedBy + " is set)" : " (no launcher variables found)")
                    + "; rank " + rank + "; world size " + worldSize + "; local rank " + localRank
                    + "; local world size " + localWorldSize + "; master address " + masterAddr
                    + "; master port " + masterPort;
            return new LaunchEnvironment(rank.value(), worldSize.value(), localRank.value(), localWorldSize.value(),
                    masterAddr.value(), masterPort.value(), source, explanation);
        }

        /** The default for a field no launcher sets: fine for a single rank, an error otherwise. */
        private Resolved<Integer> singleRankDefault(Resolved<Integer> worldSize, int value) {
            if (worldSize.value() == 1) {
                return new Resolved<>(value, "default for a single rank");
            }
            return null;
        }

        /**
         * The value of the detected launcher's variable for a field; without a launcher,
         * {@code fallback}, or where that is null an error asking for the builder value.
         */
        private Resolved<Integer> fromLauncher(String torchrunVariable, String slurmVariable, String openMpiVariable,
                                               Resolved<Integer> fallback) {
            if (launcher == null) {
                if (fallback != null) {
                    return fallback;
                }
                throw new IllegalArgumentException("no launcher variables found (torchrun RANK..., Slurm SLURM_PROCID...,"
                        + " Open MPI OMPI_COMM_WORLD_...) and the builder sets a world of more than one rank: pass"
                        + " localRank(...) and localWorldSize(...) to the builder as well");
            }
            String variable = switch (launcher) {
                case TORCHRUN -> torchrunVariable;
                case SLURM -> slurmVariable;
                case OPEN_MPI -> openMpiVariable;
            };
            if (launcher == Launcher.SLURM && variable.equals("SLURM_NTASKS") && !isSet(variable) && isSet("SLURM_NPROCS")) {
                variable = "SLURM_NPROCS";
            }
            return requiredInt(variable);
        }

        private Resolved<Integer> requiredInt(String variable) {
            if (!isSet(variable)) {
                throw new IllegalArgumentException(launcher.displayName + " launch detected (" + detectedBy
                        + " is set) but " + variable + " is not set; " + launcher.hint);
            }
            return new Resolved<>(parseInt(variable), variable + ", " + launcher.displayName);
        }

        private int parseInt(String variable) {
            String raw = env.get(variable);
            try {
                return Integer.parseInt(raw.trim());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(variable + "='" + raw + "' is not an integer; expected a whole"
                        + " number such as 0 or 4");
            }
        }

        private Resolved<Integer> slurmTasksOnThisNode() {
            for (String variable : new String[] {"SLURM_STEP_TASKS_PER_NODE", "SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE"}) {
                if (!isSet(variable)) {
                    continue;
                }
                if (variable.equals("SLURM_NTASKS_PER_NODE")) {
                    return new Resolved<>(parseInt(variable), variable + ", Slurm");
                }
                int[] perNode = parseTasksPerNode(variable, env.get(variable));
                if (Arrays.stream(perNode).allMatch(n -> n == perNode[0])) {
                    return new Resolved<>(perNode[0], variable + ", Slurm");
                }
                int node = isSet("SLURM_NODEID") ? parseInt("SLURM_NODEID") : -1;
                if (node < 0 || node >= perNode.length) {
                    throw new IllegalArgumentException(variable + "='" + env.get(variable) + "' gives the nodes different"
                            + " task counts and SLURM_NODEID " + (node < 0 ? "is not set" : "=" + node + " is out of range")
                            + ", so this node's count is unknown; set SLURM_NTASKS_PER_NODE or pass localWorldSize(...)"
                            + " to the builder");
                }
                return new Resolved<>(perNode[node], variable + " entry of SLURM_NODEID=" + node + ", Slurm");
            }
            throw new IllegalArgumentException("Slurm launch detected (SLURM_PROCID is set) but none of"
                    + " SLURM_STEP_TASKS_PER_NODE, SLURM_NTASKS_PER_NODE, SLURM_TASKS_PER_NODE is set, so the number of"
                    + " ranks on this node is unknown; " + Launcher.SLURM.hint);
        }

        private static int[] parseTasksPerNode(String variable, String raw) {
            String[] items = raw.trim().split(",");
            int[][] expanded = new int[items.length][];
            for (int i = 0; i < items.length; i++) {
                Matcher m = TASKS_PER_NODE_ITEM.matcher(items[i].trim());
                if (!m.matches()) {
                    throw new IllegalArgumentException(variable + "='" + raw + "' is not a Slurm tasks-per-node list;"
                            + " expected entries such as '4', '4(x2)' or '4(x2),3'");
                }
                try {
                    int tasks = Integer.parseInt(m.group(1));
                    int repeat = m.group(2) == null ? 1 : Integer.parseInt(m.group(2));
                    if (repeat < 1 || repeat > 1_000_000) {
                        throw new NumberFormatException("repeat " + repeat);
                    }
                    expanded[i] = new int[repeat];
                    Arrays.fill(expanded[i], tasks);
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException(variable + "='" + raw + "' has an entry out of range: '"
                            + items[i] + "'");
                }
            }
            return Arrays.stream(expanded).flatMapToInt(Arrays::stream).toArray();
        }

        private Resolved<String> masterAddr(int worldSize, int localWorldSize) {
            if (builder.masterAddr != null) {
                return new Resolved<>(builder.masterAddr, "builder masterAddr");
            }
            for (String variable : new String[] {AR4J_MASTER_ADDR, "MASTER_ADDR"}) {
                if (isSet(variable)) {
                    return new Resolved<>(env.get(variable).trim(), variable);
                }
            }
            if (worldSize == 1) {
                return new Resolved<>(LOOPBACK, "default for a single rank");
            }
            if (localWorldSize == worldSize) {
                return new Resolved<>(LOOPBACK, "default: all " + worldSize + " ranks run on this host");
            }
            String unparsedNodeList = null;
            if (launcher == Launcher.SLURM) {
                for (String variable : new String[] {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"}) {
                    if (isSet(variable)) {
                        String first = firstHostOfNodeList(env.get(variable).trim());
                        if (first != null) {
                            return new Resolved<>(first, "first host of " + variable + ", Slurm");
                        }
                        unparsedNodeList = variable + "='" + env.get(variable) + "'";
                        break;
                    }
                }
                if (isSet("SLURM_LAUNCH_NODE_IPADDR")) {
                    return new Resolved<>(env.get("SLURM_LAUNCH_NODE_IPADDR").trim(), "SLURM_LAUNCH_NODE_IPADDR, Slurm");
                }
            }
            throw new IllegalArgumentException("no master address: the " + worldSize + " ranks span several hosts ("
                    + localWorldSize + " on this one) and none of builder masterAddr, " + AR4J_MASTER_ADDR
                    + ", MASTER_ADDR is set" + (unparsedNodeList != null ? " (" + unparsedNodeList
                    + " is not a simple host list ar4j can read)" : "")
                    + "; set MASTER_ADDR to the host name or address of rank 0's host");
        }

        /** The first host of a Slurm node list in its simple forms, or null when it is not that simple. */
        static String firstHostOfNodeList(String nodeList) {
            Matcher plain = FIRST_PLAIN_HOST.matcher(nodeList);
            if (plain.find()) {
                return plain.group(1);
            }
            Matcher ranged = FIRST_RANGED_HOST.matcher(nodeList);
            if (ranged.find()) {
                return ranged.group(1) + ranged.group(2);
            }
            return null;
        }

        private Resolved<Integer> masterPort() {
            if (builder.masterPort != null) {
                return new Resolved<>(checkPort(builder.masterPort, "builder masterPort " + builder.masterPort), "builder masterPort");
            }
            if (isSet(AR4J_MASTER_PORT)) {
                return new Resolved<>(checkPort(parseInt(AR4J_MASTER_PORT), AR4J_MASTER_PORT + "='"
                        + env.get(AR4J_MASTER_PORT) + "'"), AR4J_MASTER_PORT);
            }
            if (isSet("MASTER_PORT")) {
                int port = checkPort(parseInt("MASTER_PORT"), "MASTER_PORT='" + env.get("MASTER_PORT") + "'");
                if (launcher == Launcher.TORCHRUN && "true".equalsIgnoreCase(env.getOrDefault("TORCHELASTIC_USE_AGENT_STORE", "").trim())) {
                    if (port == 65535) {
                        throw new IllegalArgumentException("MASTER_PORT=65535 is taken by torchrun's own store"
                                + " (TORCHELASTIC_USE_AGENT_STORE=True) and ar4j's default, MASTER_PORT + 1, does not"
                                + " exist; set " + AR4J_MASTER_PORT + " to a free port");
                    }
                    return new Resolved<>(port + 1, "MASTER_PORT + 1, because TORCHELASTIC_USE_AGENT_STORE=True means"
                            + " torchrun's agent serves its own store on MASTER_PORT; set " + AR4J_MASTER_PORT
                            + " to choose another");
                }
                return new Resolved<>(port, "MASTER_PORT");
            }
            return new Resolved<>(DEFAULT_MASTER_PORT, "default");
        }

        private static int checkPort(int port, String what) {
            if (port < 1 || port > 65535) {
                throw new IllegalArgumentException(what + " is not a TCP port; expected 1..65535");
            }
            return port;
        }

        private static void requireAtLeast(Resolved<Integer> value, int minimum, String name) {
            if (value.value() < minimum) {
                throw new IllegalArgumentException(name + " " + value + (minimum == 0 ? " must not be negative"
                        : " must be at least " + minimum));
            }
        }

        private boolean isSet(String variable) {
            String value = env.get(variable);
            return value != null && !value.isBlank();
        }
    }
}
