package dev.ar4j.internal.engine;

import dev.ar4j.dispatch.Algorithm;

import dev.ar4j.dispatch.DispatchConfig;
import dev.ar4j.rendezvous.Rendezvous;

import java.time.Duration;
import java.util.Map;
import java.util.Properties;

/**
 * The settings of one communicator, as its builder left them: immutable, checked by
 * {@link BuilderChecks#validate} before any rendezvous or GPU work. A value of -1 (or
 * {@code null}) means "not set": it is resolved from the launcher's environment, the system
 * properties or the default when it is used.
 *
 * @param rank               this rank, or -1
 * @param worldSize          the number of ranks, or -1
 * @param localRank          this rank's index on its host, or -1
 * @param localWorldSize     the number of ranks on this host, or -1
 * @param device             the CUDA ordinal, or -1 (then the local rank)
 * @param masterAddr         rank 0's rendezvous host, or null
 * @param masterPort         rank 0's rendezvous port, or -1
 * @param rendezvous         a rendezvous given by the caller (not closed by the communicator), or null
 * @param fromEnvironment    whether rank, world size and address come from the launcher's variables
 * @param environment        read instead of {@code System.getenv()}, or null
 * @param systemProperties   read instead of {@code System.getProperties()}, or null
 * @param stagingBytes       the staging buffer size
 * @param kernelTimeout      how long a custom kernel waits for a peer
 * @param rendezvousTimeout  how long a rendezvous step waits
 * @param maxRegistrations   registration slots
 * @param algorithmPolicy    the policy, or null
 * @param forceCustomOnPcie  the PCIe gate override, or null
 * @param nvlinkOverride     the "NVLink between every pair" override, or null
 * @param p2pOverride        the "P2P between every pair" override, or null
 * @param pushUpToBytes      the automatic policy's push threshold, or -1
 * @param launchBlocks       the launch geometry's blocks, or -1
 * @param launchThreads      the launch geometry's threads, or -1
 * @param ncclEnabled        NCCL on or off, or null (then property, environment, true)
 * @param pdlEnabled         programmatic dependent launch on or off, or null
 * @param watchdogInterval   the watchdog's interval, or null
 * @param ranksPerGpuAtLeast the fewest ranks assumed to share each GPU when the grid is sized (no
 *                           public setter): a split's children get their parent's ranks per GPU,
 *                           because sibling sub-groups run their kernels on the same GPUs at once
 * @param kernelVariants     the custom kernels' variants, a comma-separated list of
 *                           {@link dev.ar4j.internal.kernels.KernelVariants} names, or null (then
 *                           property, environment, none: {@link BuilderChecks#kernelVariants})
 */
public record Settings(int rank, int worldSize, int localRank, int localWorldSize, int device, String masterAddr,
                       int masterPort, Rendezvous rendezvous, boolean fromEnvironment, Map<String, String> environment,
                       Properties systemProperties, long stagingBytes, Duration kernelTimeout,
                       Duration rendezvousTimeout, int maxRegistrations, Algorithm algorithmPolicy,
                       Boolean forceCustomOnPcie, Boolean nvlinkOverride, Boolean p2pOverride, long pushUpToBytes,
                       int launchBlocks, int launchThreads, Boolean ncclEnabled, Boolean pdlEnabled,
                       Duration watchdogInterval, int ranksPerGpuAtLeast, String kernelVariants) {

    /** The default staging buffer (and two-stage scratch) size: 8 MiB. */
    public static final long DEFAULT_STAGING_BYTES = 8L << 20;
    /** How long a custom kernel waits for a peer before it gives up, by default. */
    public static final Duration DEFAULT_KERNEL_TIMEOUT = Duration.ofSeconds(30);
    /** How long a rendezvous step waits for the other ranks, by default. */
    public static final Duration DEFAULT_RENDEZVOUS_TIMEOUT = Duration.ofMinutes(2);
    /** Registered buffers plus captured graph inputs one communicator can hold, by default. */
    public static final int DEFAULT_MAX_REGISTRATIONS = 4096;
    /** How often the watchdog polls the kernels and NCCL, by default. */
    public static final Duration DEFAULT_WATCHDOG_INTERVAL = Duration.ofMillis(100);

    /** The device this rank drives: the one set, else the local rank, else 0. */
    public int resolvedDevice() {
        return device >= 0 ? device : localRank >= 0 ? localRank : 0;
    }

    /** The dispatch configuration these settings give (the policy and PCIe gate, else properties and environment). */
    public DispatchConfig dispatchConfig() {
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

    /** These settings with the local rank that the launch environment gave. */
    Settings withLocalRank(int resolvedLocalRank) {
        Draft d = Draft.of(this);
        d.localRank = resolvedLocalRank;
        return d.freeze();
    }

    /**
     * The mutable form that a builder fills in, field by field, and freezes into {@link Settings}:
     * every field starts at its default.
     */
    public static final class Draft {
        public int rank = -1;
        public int worldSize = -1;
        public int localRank = -1;
        public int localWorldSize = -1;
        public int device = -1;
        public String masterAddr;
        public int masterPort = -1;
        public Rendezvous rendezvous;
        public boolean fromEnvironment;
        public Map<String, String> environment;
        public Properties systemProperties;
        public long stagingBytes = DEFAULT_STAGING_BYTES;
        public Duration kernelTimeout = DEFAULT_KERNEL_TIMEOUT;
        public Duration rendezvousTimeout = DEFAULT_RENDEZVOUS_TIMEOUT;
        public int maxRegistrations = DEFAULT_MAX_REGISTRATIONS;
        public Algorithm algorithmPolicy;
        public Boolean forceCustomOnPcie;
        public Boolean nvlinkOverride;
        public Boolean p2pOverride;
        public long pushUpToBytes = -1;
        public int launchBlocks = -1;
        public int launchThreads = -1;
        public Boolean ncclEnabled;
        public Boolean pdlEnabled;
        public Duration watchdogInterval;
        public int ranksPerGpuAtLeast = 1;
        public String kernelVariants;

        /** A draft with every setting at its default. */
        public Draft() {
        }

        /** A draft holding every value of {@code s}. */
        static Draft of(Settings s) {
            Draft d = new Draft();
            d.rank = s.rank;
            d.worldSize = s.worldSize;
            d.localRank = s.localRank;
            d.localWorldSize = s.localWorldSize;
            d.device = s.device;
            d.masterAddr = s.masterAddr;
            d.masterPort = s.masterPort;
            d.rendezvous = s.rendezvous;
            d.fromEnvironment = s.fromEnvironment;
            d.environment = s.environment;
            d.systemProperties = s.systemProperties;
            d.stagingBytes = s.stagingBytes;
            d.kernelTimeout = s.kernelTimeout;
            d.rendezvousTimeout = s.rendezvousTimeout;
            d.maxRegistrations = s.maxRegistrations;
            d.algorithmPolicy = s.algorithmPolicy;
            d.forceCustomOnPcie = s.forceCustomOnPcie;
            d.nvlinkOverride = s.nvlinkOverride;
            d.p2pOverride = s.p2pOverride;
            d.pushUpToBytes = s.pushUpToBytes;
            d.launchBlocks = s.launchBlocks;
            d.launchThreads = s.launchThreads;
            d.ncclEnabled = s.ncclEnabled;
            d.pdlEnabled = s.pdlEnabled;
            d.watchdogInterval = s.watchdogInterval;
            d.ranksPerGpuAtLeast = s.ranksPerGpuAtLeast;
            d.kernelVariants = s.kernelVariants;
            return d;
        }

        /** The settings as this draft holds them now; the draft stays usable. */
        public Settings freeze() {
            return new Settings(rank, worldSize, localRank, localWorldSize, device, masterAddr, masterPort, rendezvous,
                    fromEnvironment, environment, systemProperties, stagingBytes, kernelTimeout, rendezvousTimeout,
                    maxRegistrations, algorithmPolicy, forceCustomOnPcie, nvlinkOverride, p2pOverride, pushUpToBytes,
                    launchBlocks, launchThreads, ncclEnabled, pdlEnabled, watchdogInterval, ranksPerGpuAtLeast,
                    kernelVariants);
        }
    }
}
