package dev.ar4j;

import dev.ar4j.dispatch.Algorithm;
import dev.ar4j.internal.engine.BuilderChecks;
import dev.ar4j.internal.engine.Settings;
import dev.ar4j.rendezvous.Rendezvous;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;

/**
 * The setters of the group builder ({@code Communicator.Builder}, what {@code Communicator.builder()}
 * returns); every setter validates its value at once, and {@code build()} the whole. A type of its
 * own so that the group's class stays a small facade; it is extended only inside ar4j.
 *
 * <p>Precedence: a value set here wins over the system property, which wins over the environment
 * variable, which wins over the default.
 *
 * @param <B> the builder type the setters return, for chaining
 */
public abstract class CommunicatorBuilder<B extends CommunicatorBuilder<B>> {

    /** The settings as set so far; frozen into an immutable record at build. */
    final Settings.Draft draft = new Settings.Draft();

    CommunicatorBuilder() {
    }

    /** This builder, as the type its setters return. */
    abstract B self();

    /**
     * Reads rank, world size, local rank and the rendezvous address from the launcher's environment.
     *
     * @return this builder
     */
    public B fromEnvironment() {
        draft.fromEnvironment = true;
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
    public B environment(Map<String, String> environment) {
        draft.environment = Map.copyOf(environment);
        return self();
    }

    /**
     * Uses these instead of {@code System.getProperties()} for configuration (tests).
     *
     * @param properties the properties to read instead of the system properties; kept by reference, not
     *     copied
     * @return this builder
     */
    public B systemProperties(Properties properties) {
        draft.systemProperties = properties;
        return self();
    }

    /**
     * This process's rank (with {@link #worldSize(int)} and {@link #masterAddress(String, int)}, instead of the environment).
     *
     * @param rank this process's rank, 0 to world size - 1 (checked against the world size, and against the
     *     rendezvous's rank if one is given, at {@code build()})
     * @return this builder
     */
    public B rank(int rank) {
        draft.rank = rank;
        return self();
    }

    /**
     * The number of ranks.
     *
     * @param worldSize the number of ranks in the group, at least 1
     * @return this builder
     */
    public B worldSize(int worldSize) {
        draft.worldSize = worldSize;
        return self();
    }

    /**
     * This rank's index on its host; the default GPU.
     *
     * @param localRank this rank's index among the ranks on its host, 0 to the local world size - 1
     * @return this builder
     */
    public B localRank(int localRank) {
        draft.localRank = localRank;
        return self();
    }

    /**
     * The number of ranks on this host. Without it (and without launcher variables) a group
     * whose rendezvous address is loopback is taken to be all on this host.
     *
     * @param localWorldSize the number of ranks on this host, at least 1
     * @return this builder
     */
    public B localWorldSize(int localWorldSize) {
        draft.localWorldSize = localWorldSize;
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
    public B device(int device) {
        if (device < 0) {
            throw new IllegalArgumentException("device ordinal must be >= 0, got " + device);
        }
        draft.device = device;
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
    public B masterAddress(String host, int port) {
        draft.masterAddr = Objects.requireNonNull(host, "host");
        draft.masterPort = port;
        return self();
    }

    /**
     * Uses an existing rendezvous (an implementation of the application's); not closed by the communicator.
     *
     * @param rendezvous the rendezvous to join the group through; not {@code null}. The rank is its rank
     *     unless {@link #rank(int)} is set too, in which case the two must agree (checked at {@code build()})
     * @return this builder
     * @throws NullPointerException if {@code rendezvous} is {@code null}
     */
    public B rendezvous(Rendezvous rendezvous) {
        draft.rendezvous = Objects.requireNonNull(rendezvous, "rendezvous");
        return self();
    }

    /**
     * Size of the staging buffer and the two-stage scratch (default 8 MiB, multiple of 16).
     *
     * @param bytes the staging size in bytes: a multiple of 16 from 16 to 4 GiB
     * @return this builder
     * @throws IllegalArgumentException if {@code bytes} is not a multiple of 16 in that range
     */
    public B stagingBytes(long bytes) {
        BuilderChecks.stagingBytes(bytes);
        draft.stagingBytes = bytes;
        return self();
    }

    /**
     * How long a custom kernel waits for a peer before it gives up (default 30 s).
     *
     * @param timeout how long a kernel spins on a peer, 1 ms to 24 h
     * @return this builder
     * @throws IllegalArgumentException if {@code timeout} is {@code null} or outside 1 ms to 24 h
     */
    public B kernelTimeout(Duration timeout) {
        BuilderChecks.kernelTimeout(timeout);
        draft.kernelTimeout = timeout;
        return self();
    }

    /**
     * How long each rendezvous step waits for the other ranks (default 2 min).
     *
     * @param timeout the wait of each rendezvous step: positive, at most 24 h
     * @return this builder
     * @throws IllegalArgumentException if {@code timeout} is {@code null}, zero, negative or longer than 24 h
     */
    public B rendezvousTimeout(Duration timeout) {
        BuilderChecks.rendezvousTimeout(timeout);
        draft.rendezvousTimeout = timeout;
        return self();
    }

    /**
     * Capacity for registered buffers plus captured graph inputs (default 4096).
     *
     * @param n the number of registration slots, 1 to 1,048,576
     * @return this builder
     * @throws IllegalArgumentException if {@code n} is outside 1 to 1,048,576
     */
    public B maxRegistrations(int n) {
        BuilderChecks.maxRegistrations(n);
        draft.maxRegistrations = n;
        return self();
    }

    /**
     * Algorithm policy (highest precedence): {@code auto}, {@code 1stage} (also {@code oneshot},
     * {@code force_1stage}), {@code 2stage} (also {@code twoshot}, {@code force_2stage}),
     * {@code push} (also {@code lamport}) or {@code nccl}; see {@link Algorithm#parse}.
     *
     * @param policy one of the policy names above, case-insensitive
     * @return this builder
     * @throws NullPointerException if {@code policy} is {@code null}
     * @throws IllegalArgumentException if {@code policy} names no policy (the message lists those accepted)
     */
    public B algorithmPolicy(String policy) {
        Algorithm.parse(Objects.requireNonNull(policy, "policy"), "algorithmPolicy(..)");
        draft.algorithmPolicy = policy;
        return self();
    }

    /**
     * Lifts (true) or keeps (false) the PCIe gate for more than two GPUs without full NVLink.
     *
     * @param force {@code true} to allow the custom kernels on PCIe-only groups of more than two GPUs,
     *     {@code false} to keep them on NCCL
     * @return this builder
     */
    public B forceCustomOnPcie(boolean force) {
        draft.forceCustomOnPcie = force;
        return self();
    }

    /**
     * Overrides the detected "NVLink between every pair" (tests, or hardware the probe misjudges).
     *
     * @param nvlink {@code true} to treat every pair of GPUs as joined by NVLink, {@code false} to treat none
     *     as joined
     * @return this builder
     */
    public B fullNvlink(boolean nvlink) {
        draft.nvlinkOverride = nvlink;
        return self();
    }

    /**
     * Overrides the detected "P2P between every pair".
     *
     * @param p2p {@code true} to treat every pair of GPUs as able to access each other's memory,
     *     {@code false} to treat none as able
     * @return this builder
     */
    public B p2pAllPairs(boolean p2p) {
        draft.p2pOverride = p2p;
        return self();
    }

    /**
     * Up to which size the automatic policy uses the push kernel (0: never; at most
     * 512 KiB). Default: 512 KiB for two ranks, 256 KiB for more.
     *
     * @param bytes the largest size in bytes sent to the push kernel by the automatic policy, 0 to 524,288
     *     ({@link Algorithm#PUSH_MAX_BYTES})
     * @return this builder
     * @throws IllegalArgumentException if {@code bytes} is negative or above {@link Algorithm#PUSH_MAX_BYTES}
     */
    public B pushUpToBytes(long bytes) {
        if (bytes < 0 || bytes > Algorithm.PUSH_MAX_BYTES) {
            throw new IllegalArgumentException("pushUpToBytes must be between 0 and " + Algorithm.PUSH_MAX_BYTES
                    + " (the push kernel's limit), got " + bytes);
        }
        draft.pushUpToBytes = bytes;
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
    public B launchConfig(int maxBlocks, int threads) {
        BuilderChecks.launchConfig(maxBlocks, threads);
        draft.launchBlocks = maxBlocks;
        draft.launchThreads = threads;
        return self();
    }

    /**
     * Whether the group sets up NCCL (default true; else system property
     * {@code ar4j.nccl}, environment {@code AR4J_NCCL}). Without
     * NCCL, every call the dispatcher would send to NCCL throws {@link dev.ar4j.nccl.NcclDisabledException}
     * naming the size and why, instead of falling back silently: for ranks sharing one GPU
     * (which NCCL refuses), and for users who want a fallback to be an error.
     *
     * @param enabled {@code false} to build the group without NCCL, {@code true} to set it up
     * @return this builder
     */
    public B nccl(boolean enabled) {
        draft.ncclEnabled = enabled;
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
    public B pdl(boolean enabled) {
        draft.pdlEnabled = enabled;
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
    public B watchdogInterval(Duration interval) {
        BuilderChecks.watchdogInterval(interval);
        draft.watchdogInterval = interval;
        return self();
    }

    /**
     * Variants of the custom kernels, each off by default (the kernels of C ABI 0.6):
     * a comma-separated list of {@code early-trigger} (the push kernels let the next kernel launch
     * at once; in effect only when no two ranks share a GPU), {@code clear-on-read} (each push pack
     * is cleared right after it is read, off the completion path), {@code fused-grid-push} (the
     * fused push kernel pushes over the whole grid), {@code two-stage-push} (2-stage as posted
     * writes: each rank pushes its shards to their owners and the reduced shards back), and
     * {@code push-pass-on-poison} (a push kernel that gives up passes the poison on), or
     * {@code all} / {@code none}. Default: system property {@code ar4j.kernel.variants}, else
     * environment {@code AR4J_KERNEL_VARIANTS}, else none. Every rank must pass the same list,
     * {@code early-trigger} and {@code push-pass-on-poison} excepted (a difference fails the group
     * at its first call, naming it). Not yet measured on two GPUs: keep the default until a
     * measurement says otherwise (benchmarks/RESULTS.md).
     *
     * @param variants the list, {@code all} or {@code none}
     * @return this builder
     * @throws IllegalArgumentException for an unknown name, naming the accepted ones
     */
    public B kernelVariants(String variants) {
        dev.ar4j.internal.kernels.KernelVariants.parse(variants, "builder value kernelVariants");
        draft.kernelVariants = variants;
        return self();
    }

    /** The settings as they stand (tests of the checks). */
    Settings settings() {
        return draft.freeze();
    }
}
