package dev.ar4j.rendezvous;

import dev.ar4j.ConfigurationException;
import java.util.Map;
import java.util.Objects;

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

    private final int rank;
    private final int worldSize;
    private final int localRank;
    private final int localWorldSize;
    private final String masterAddr;
    private final int masterPort;
    private final Source source;
    private final String explanation;

    /** Made by {@link LaunchResolver#resolve()}, which has checked the values. */
    LaunchEnvironment(int rank, int worldSize, int localRank, int localWorldSize, String masterAddr,
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
     * @throws ConfigurationException naming the variable whose value is missing or invalid
     */
    public static LaunchEnvironment fromSystem() {
        return builder().build();
    }

    /**
     * Reads {@code environment}, a map of variable names to values.
     *
     * @param environment the variables to read, instead of the process environment
     * @return this process's place in its launch
     * @throws ConfigurationException naming the variable whose value is missing or invalid
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
         * @throws ConfigurationException naming the value that is missing or invalid and what is accepted
         */
        public LaunchEnvironment build() {
            return build(System.getenv());
        }

        /**
         * Fills the unset fields from {@code environment}.
         *
         * @param environment the variables to read for the unset fields
         * @return this process's place in its launch
         * @throws ConfigurationException naming the value that is missing or invalid and what is accepted
         * @throws NullPointerException if {@code environment} is {@code null}
         */
        public LaunchEnvironment build(Map<String, String> environment) {
            LaunchResolver resolver = new LaunchResolver(rank, worldSize, localRank, localWorldSize, masterAddr,
                    masterPort, Objects.requireNonNull(environment, "environment"));
            try {
                return resolver.resolve();
            } catch (IllegalArgumentException e) {
                throw new ConfigurationException(e.getMessage(), e);
            }
        }
    }
}
