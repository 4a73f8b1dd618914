package dev.ar4j;

import dev.ar4j.dispatch.Algorithm;
import dev.ar4j.dispatch.DispatchConfig;
import dev.ar4j.rendezvous.InProcessRendezvous;
import dev.ar4j.rendezvous.Rendezvous;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;

/**
 * The settings of {@link Communicator.Builder} and their setters (package-private, like
 * {@code AbstractStringBuilder} under {@code StringBuilder}: the setters are public through the
 * builder). Each setter validates its value at once ({@link BuilderChecks}).
 */
abstract class BuilderSettings {

    BuilderSettings() {
    }

    private Communicator.Builder self() {
        return (Communicator.Builder) this;
    }
    int rank = -1;
    int worldSize = -1;
    int localRank = -1;
    int localWorldSize = -1;
    int device = -1;
    String masterAddr;
    int masterPort = -1;
    Rendezvous rendezvous;
    boolean fromEnvironment;
    Map<String, String> environment;
    Properties systemProperties;
    long stagingBytes = Communicator.DEFAULT_STAGING_BYTES;
    Duration kernelTimeout = Communicator.DEFAULT_KERNEL_TIMEOUT;
    Duration rendezvousTimeout = Communicator.DEFAULT_RENDEZVOUS_TIMEOUT;
    int maxRegistrations = Communicator.DEFAULT_MAX_REGISTRATIONS;
    String algorithmPolicy;
    Boolean forceCustomOnPcie;
    Boolean nvlinkOverride;
    Boolean p2pOverride;
    long pushUpToBytes = -1;
    int launchBlocks = -1;
    int launchThreads = -1;
    Boolean ncclEnabled;
    Boolean pdlEnabled;
    Duration watchdogInterval;
    FailureListener failureListener;
    /**
     * The fewest ranks assumed to share each GPU when the grid is sized (no public setter): a
     * split's children get their parent's ranks per GPU, because sibling sub-groups run their
     * kernels on the same GPUs at the same time (see {@link CustomKernelPath#agreeGeometry}).
     */
    int ranksPerGpuAtLeast = 1;


    /**
     * Reads rank, world size, local rank and the rendezvous address from the launcher's environment.
     *
     * @return this builder
     */
    public Communicator.Builder fromEnvironment() {
        this.fromEnvironment = true;
        return self();
    }

    /**
     * Uses this map instead of {@code System.getenv()} for the launcher and configuration variables (tests).
     *
     * @param environment the variables to read instead of the process environment; copied, must not be
     *     {@code null} nor hold {@code null} keys or values
     * @return this builder
     * @throws NullPointerException if {@code environment} or one of its keys or values is {@code null}
     */
    public Communicator.Builder environment(Map<String, String> environment) {
        this.environment = Map.copyOf(environment);
        return self();
    }

    /**
     * Uses these instead of {@code System.getProperties()} for configuration (tests).
     *
     * @param properties the properties to read instead of the system properties; kept by reference, not
     *     copied
     * @return this builder
     */
    public Communicator.Builder systemProperties(Properties properties) {
        this.systemProperties = properties;
        return self();
    }

    /**
     * This process's rank (with {@link #worldSize(int)} and {@link #masterAddress(String, int)}, instead of the environment).
     *
     * @param rank this process's rank, 0 to world size - 1 (checked against the world size, and against the
     *     rendezvous's rank if one is given, at {@code build()})
     * @return this builder
     */
    public Communicator.Builder rank(int rank) {
        this.rank = rank;
        return self();
    }

    /**
     * The number of ranks.
     *
     * @param worldSize the number of ranks in the group, at least 1
     * @return this builder
     */
    public Communicator.Builder worldSize(int worldSize) {
        this.worldSize = worldSize;
        return self();
    }

    /**
     * This rank's index on its host; the default GPU.
     *
     * @param localRank this rank's index among the ranks on its host, 0 to the local world size - 1
     * @return this builder
     */
    public Communicator.Builder localRank(int localRank) {
        this.localRank = localRank;
        return self();
    }

    /**
     * The number of ranks on this host. Without it (and without launcher variables) a group
     * whose rendezvous address is loopback is taken to be all on this host.
     *
     * @param localWorldSize the number of ranks on this host, at least 1
     * @return this builder
     */
    public Communicator.Builder localWorldSize(int localWorldSize) {
        this.localWorldSize = localWorldSize;
        return self();
    }

    /**
     * The CUDA ordinal to drive (default: the local rank).
     *
     * @param device the CUDA device ordinal, 0 or more (below the number of visible devices, checked at
     *     {@code build()})
     * @return this builder
     * @throws IllegalArgumentException if {@code device} is negative
     */
    public Communicator.Builder device(int device) {
        if (device < 0) {
            throw new IllegalArgumentException("device ordinal must be >= 0, got " + device);
        }
        this.device = device;
        return self();
    }

    /**
     * Where rank 0 serves the TCP rendezvous (rank 0 binds it; loopback unless an address is given).
     *
     * @param host the host name or address of rank 0's rendezvous server; not {@code null}
     * @param port the TCP port of rank 0's rendezvous server
     * @return this builder
     * @throws NullPointerException if {@code host} is {@code null}
     */
    public Communicator.Builder masterAddress(String host, int port) {
        this.masterAddr = Objects.requireNonNull(host, "host");
        this.masterPort = port;
        return self();
    }

    /**
     * Uses an existing rendezvous (for example a rank of an {@link InProcessRendezvous}); not closed by the communicator.
     *
     * @param rendezvous the rendezvous to join the group through; not {@code null}. The rank is its rank
     *     unless {@link #rank(int)} is set too, in which case the two must agree (checked at {@code build()})
     * @return this builder
     * @throws NullPointerException if {@code rendezvous} is {@code null}
     */
    public Communicator.Builder rendezvous(Rendezvous rendezvous) {
        this.rendezvous = Objects.requireNonNull(rendezvous, "rendezvous");
        return self();
    }

    /**
     * Size of the staging buffer and the two-stage scratch (default 8 MiB, multiple of 16).
     *
     * @param bytes the staging size in bytes: a multiple of 16 from 16 to 4 GiB
     * @return this builder
     * @throws IllegalArgumentException if {@code bytes} is not a multiple of 16 in that range
     */
    public Communicator.Builder stagingBytes(long bytes) {
        BuilderChecks.stagingBytes(bytes);
        this.stagingBytes = bytes;
        return self();
    }

    /**
     * How long a custom kernel waits for a peer before it gives up (default 30 s).
     *
     * @param timeout how long a kernel spins on a peer, 1 ms to 24 h
     * @return this builder
     * @throws IllegalArgumentException if {@code timeout} is {@code null} or outside 1 ms to 24 h
     */
    public Communicator.Builder kernelTimeout(Duration timeout) {
        BuilderChecks.kernelTimeout(timeout);
        this.kernelTimeout = timeout;
        return self();
    }

    /**
     * How long each rendezvous step waits for the other ranks (default 2 min).
     *
     * @param timeout the wait of each rendezvous step: positive, at most 24 h
     * @return this builder
     * @throws IllegalArgumentException if {@code timeout} is {@code null}, zero, negative or longer than 24 h
     */
    public Communicator.Builder rendezvousTimeout(Duration timeout) {
        BuilderChecks.rendezvousTimeout(timeout);
        this.rendezvousTimeout = timeout;
        return self();
    }

    /**
     * Capacity for registered buffers plus captured graph inputs (default 4096).
     *
     * @param n the number of registration slots, 1 to 1,048,576
     * @return this builder
     * @throws IllegalArgumentException if {@code n} is outside 1 to 1,048,576
     */
    public Communicator.Builder maxRegistrations(int n) {
        BuilderChecks.maxRegistrations(n);
        this.maxRegistrations = n;
        return self();
    }

    /**
     * Algorithm policy: {@code auto | 1stage | oneshot | 2stage | twoshot | push | nccl}. Highest precedence.
     *
     * @param policy one of the policy names above; an unknown name is refused by {@code build()} with
     *     {@link IllegalArgumentException}
     * @return this builder
     * @throws NullPointerException if {@code policy} is {@code null}
     */
    public Communicator.Builder algorithmPolicy(String policy) {
        this.algorithmPolicy = Objects.requireNonNull(policy, "policy");
        return self();
    }

    /**
     * Lifts (true) or keeps (false) the PCIe gate for more than two GPUs without full NVLink.
     *
     * @param force {@code true} to allow the custom kernels on PCIe-only groups of more than two GPUs,
     *     {@code false} to keep them on NCCL
     * @return this builder
     */
    public Communicator.Builder forceCustomOnPcie(boolean force) {
        this.forceCustomOnPcie = force;
        return self();
    }

    /**
     * Overrides the detected "NVLink between every pair" (tests, or hardware the probe misjudges).
     *
     * @param nvlink {@code true} to treat every pair of GPUs as joined by NVLink, {@code false} to treat none
     *     as joined
     * @return this builder
     */
    public Communicator.Builder fullNvlink(boolean nvlink) {
        this.nvlinkOverride = nvlink;
        return self();
    }

    /**
     * Overrides the detected "P2P between every pair".
     *
     * @param p2p {@code true} to treat every pair of GPUs as able to access each other's memory,
     *     {@code false} to treat none as able
     * @return this builder
     */
    public Communicator.Builder p2pAllPairs(boolean p2p) {
        this.p2pOverride = p2p;
        return self();
    }

    /**
     * Up to which size the automatic policy uses the one-shot push kernel (0: never; at most
     * 512 KiB). Default: 512 KiB for two ranks, 256 KiB for more.
     *
     * @param bytes the largest size in bytes sent to the push kernel by the automatic policy, 0 to 524,288
     *     ({@link Algorithm#PUSH_MAX_BYTES})
     * @return this builder
     * @throws IllegalArgumentException if {@code bytes} is negative or above {@link Algorithm#PUSH_MAX_BYTES}
     */
    public Communicator.Builder pushUpToBytes(long bytes) {
        if (bytes < 0 || bytes > Algorithm.PUSH_MAX_BYTES) {
            throw new IllegalArgumentException("pushUpToBytes must be between 0 and " + Algorithm.PUSH_MAX_BYTES
                    + " (the push kernel's limit), got " + bytes);
        }
        this.pushUpToBytes = bytes;
        return self();
    }

    /**
     * Overrides the custom kernels' launch geometry (defaults: one block per SM, at most 128,
     * of 512 threads; with several ranks on one GPU, the smallest SM count / ranks per GPU).
     * Every rank must give the same values (checked at build).
     *
     * @param maxBlocks 1 to 128
     * @param threads   a multiple of 32, 32 to 1024
     * @return this builder
     * @throws IllegalArgumentException if {@code maxBlocks} or {@code threads} is outside its range
     */
    public Communicator.Builder launchConfig(int maxBlocks, int threads) {
        BuilderChecks.launchConfig(maxBlocks, threads);
        this.launchBlocks = maxBlocks;
        this.launchThreads = threads;
        return self();
    }

    /**
     * Whether the group sets up NCCL (default true; else system property
     * {@code ar4j.nccl}, environment {@code AR4J_NCCL}). Without
     * NCCL, every call the dispatcher would send to NCCL throws {@link IllegalStateException}
     * naming the size and why, instead of falling back silently: for ranks sharing one GPU
     * (which NCCL refuses), and for users who want a fallback to be an error.
     *
     * @param enabled {@code false} to build the group without NCCL, {@code true} to set it up
     * @return this builder
     */
    public Communicator.Builder nccl(boolean enabled) {
        this.ncclEnabled = enabled;
        return self();
    }

    /**
     * Whether the custom kernels use programmatic dependent launch on GPUs of compute capability
     * 9.0 and newer (default true; else system property {@code ar4j.pdl}, environment
     * {@code AR4J_PDL}, each {@code 0|1|false|true|off|on}): a kernel then starts while the
     * previous one on the stream finishes and waits ({@code griddepcontrol.wait}) before its first
     * dependent access, which saves a few hundred nanoseconds a call in CUDA graphs. Older GPUs are
     * unaffected.
     *
     * @param enabled false to launch the kernels plainly
     * @return this builder
     */
    public Communicator.Builder pdl(boolean enabled) {
        this.pdlEnabled = enabled;
        return self();
    }

    /**
     * How often the watchdog polls the kernels' timeout record and NCCL's asynchronous error
     * (default 100 ms; else system property {@code ar4j.watchdog.interval.ms} or
     * environment {@code AR4J_WATCHDOG_INTERVAL_MS}, in milliseconds). Zero stops the
     * polling (peer-loss reports from the rendezvous are still acted on).
     *
     * @param interval zero, or 1 ms to 60 s
     * @return this builder
     * @throws IllegalArgumentException if {@code interval} is {@code null}, negative, or between zero and 1
     *     ms, or above 60 s
     */
    public Communicator.Builder watchdogInterval(Duration interval) {
        BuilderChecks.watchdogInterval(interval);
        this.watchdogInterval = interval;
        return self();
    }

    /**
     * Told once when the communicator fails or is aborted (see {@link FailureListener}).
     *
     * @param listener called once, on the thread that notices, with the first failure; not {@code null}
     * @return this builder
     * @throws NullPointerException if {@code listener} is {@code null}
     */
    public Communicator.Builder onFailure(FailureListener listener) {
        this.failureListener = Objects.requireNonNull(listener, "listener");
        return self();
    }

    DispatchConfig dispatchConfig() {
        DispatchConfig.Builder c = DispatchConfig.builder();
        if (environment != null) {
            c.environment(environment);
        }
        if (systemProperties != null) {
            c.systemProperties(systemProperties);
        }
        if (algorithmPolicy != null) {
            c.algorithmPolicy(algorithmPolicy);
        }
        if (forceCustomOnPcie != null) {
            c.forceCustomOnPcie(forceCustomOnPcie);
        }
        return c.build();
    }
}
