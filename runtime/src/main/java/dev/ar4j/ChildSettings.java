package dev.ar4j;

import java.util.Set;

/**
 * The settings a sub-communicator of {@link Communicator#split} inherits from its parent: a
 * snapshot of the parent's builder taken when the parent was built (so a builder changed or
 * reused afterwards changes no child), with the settings that come from properties and the
 * environment (NCCL on/off, PDL, watchdog interval) resolved to the values the parent used. The
 * parent's identity in its group (rank, world size, launcher variables, rendezvous) is not
 * inherited: the child's comes from its sub-group. The device is the parent's.
 */
final class ChildSettings {

    /** The {@link BuilderSettings} fields a child does not inherit (or, for {@code device}, gets resolved). */
    static final Set<String> NOT_INHERITED = Set.of("rank", "worldSize", "localRank", "localWorldSize", "masterAddr",
            "masterPort", "rendezvous", "fromEnvironment");

    private ChildSettings() {
    }

    /**
     * The snapshot of {@code b} for the children of the communicator it built, which drives
     * {@code device} and has {@code ranksPerGpu} ranks on its busiest GPU: the children's grid
     * leaves room for all of them, since sibling sub-groups run on those GPUs at once.
     */
    static Communicator.Builder snapshot(BuilderSettings b, int device, int ranksPerGpu) {
        Communicator.Builder s = copy(b);
        s.device = device;
        s.ranksPerGpuAtLeast = Math.max(b.ranksPerGpuAtLeast, ranksPerGpu);
        s.ncclEnabled = BuilderChecks.ncclEnabled(b);
        s.pdlEnabled = BuilderChecks.pdlEnabled(b);
        s.watchdogInterval = BuilderChecks.watchdogInterval(b);
        return s;
    }

    /** A fresh builder with every inherited setting of {@code b}. */
    static Communicator.Builder copy(BuilderSettings b) {
        Communicator.Builder s = Communicator.builder();
        s.device = b.device;
        s.environment = b.environment;
        s.systemProperties = b.systemProperties;
        s.stagingBytes = b.stagingBytes;
        s.kernelTimeout = b.kernelTimeout;
        s.rendezvousTimeout = b.rendezvousTimeout;
        s.maxRegistrations = b.maxRegistrations;
        s.algorithmPolicy = b.algorithmPolicy;
        s.forceCustomOnPcie = b.forceCustomOnPcie;
        s.nvlinkOverride = b.nvlinkOverride;
        s.p2pOverride = b.p2pOverride;
        s.pushUpToBytes = b.pushUpToBytes;
        s.launchBlocks = b.launchBlocks;
        s.launchThreads = b.launchThreads;
        s.ncclEnabled = b.ncclEnabled;
        s.pdlEnabled = b.pdlEnabled;
        s.watchdogInterval = b.watchdogInterval;
        s.failureListener = b.failureListener;
        s.ranksPerGpuAtLeast = b.ranksPerGpuAtLeast;
        return s;
    }
}
