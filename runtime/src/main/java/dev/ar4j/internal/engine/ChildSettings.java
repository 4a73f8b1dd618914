package dev.ar4j.internal.engine;

import dev.ar4j.internal.kernels.KernelVariants;

import java.util.Set;

/**
 * The settings a sub-communicator of a split inherits from its parent: a snapshot of the
 * parent's settings taken when the parent was built, with the settings that come from properties
 * and the environment (NCCL on/off, PDL, watchdog interval) resolved to the values the parent
 * used. The parent's identity in its group (rank, world size, launcher variables, rendezvous) is
 * not inherited: the child's comes from its sub-group. The device is the parent's.
 */
public final class ChildSettings {

    /** The {@link Settings} components a child does not inherit (or, for {@code device}, gets resolved). */
    public static final Set<String> NOT_INHERITED = Set.of("rank", "worldSize", "localRank", "localWorldSize",
            "masterAddr", "masterPort", "rendezvous", "fromEnvironment");

    private ChildSettings() {
    }

    /**
     * The snapshot of {@code b} for the children of the communicator it built, which drives
     * {@code device} and has {@code ranksPerGpu} ranks on its busiest GPU: the children's grid
     * leaves room for all of them, since sibling sub-groups run on those GPUs at once.
     */
    public static Settings snapshot(Settings b, int device, int ranksPerGpu) {
        Settings.Draft s = inherited(b);
        s.device = device;
        s.ranksPerGpuAtLeast = Math.max(b.ranksPerGpuAtLeast(), ranksPerGpu);
        s.ncclEnabled = BuilderChecks.ncclEnabled(b);
        s.pdlEnabled = BuilderChecks.pdlEnabled(b);
        s.watchdogInterval = BuilderChecks.watchdogInterval(b);
        s.kernelVariants = KernelVariants.describe(BuilderChecks.kernelVariants(b));
        return s.freeze();
    }

    /** Every inherited setting of {@code b}; the others at their defaults. */
    public static Settings copy(Settings b) {
        return inherited(b).freeze();
    }

    private static Settings.Draft inherited(Settings b) {
        Settings.Draft s = new Settings.Draft();
        s.device = b.device();
        s.environment = b.environment();
        s.systemProperties = b.systemProperties();
        s.stagingBytes = b.stagingBytes();
        s.kernelTimeout = b.kernelTimeout();
        s.rendezvousTimeout = b.rendezvousTimeout();
        s.maxRegistrations = b.maxRegistrations();
        s.algorithmPolicy = b.algorithmPolicy();
        s.forceCustomOnPcie = b.forceCustomOnPcie();
        s.nvlinkOverride = b.nvlinkOverride();
        s.p2pOverride = b.p2pOverride();
        s.pushUpToBytes = b.pushUpToBytes();
        s.launchBlocks = b.launchBlocks();
        s.launchThreads = b.launchThreads();
        s.ncclEnabled = b.ncclEnabled();
        s.pdlEnabled = b.pdlEnabled();
        s.watchdogInterval = b.watchdogInterval();
        s.ranksPerGpuAtLeast = b.ranksPerGpuAtLeast();
        s.kernelVariants = b.kernelVariants();
        return s;
    }
}
