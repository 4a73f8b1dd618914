package dev.ar4j.internal.engine;

import dev.ar4j.dispatch.AlgorithmThresholds;
import dev.ar4j.internal.rendezvous.AbortSignal;
import dev.ar4j.rendezvous.Rendezvous;

/**
 * The native parts of one communicator, opened in order (group, dispatchers, NCCL, custom
 * kernels, the "ready" barrier) by {@link #open}, which closes whatever it opened when a later
 * step fails or the build is aborted: a failed build leaves no port, rank slot, mapping or device
 * memory behind.
 */
record GroupParts(Group group, Dispatchers dispatchers, NcclPath nccl, CustomKernelPath kernels) {

    static GroupParts open(Settings b, Rendezvous rendezvous, boolean ownsRendezvous, AbortSignal abort) {
        int device = b.resolvedDevice();
        Group g = null;
        NcclPath ncclPath = null;
        CustomKernelPath custom = null;
        try {
            g = Group.join(rendezvous, ownsRendezvous, b.rendezvousTimeout(), device, b.p2pOverride(), b.nvlinkOverride());
            g.inheritSettings(ChildSettings.snapshot(b, device, g.maxRanksPerGpu()));
            Dispatchers d = new Dispatchers(g.topology, b.dispatchConfig(), b.stagingBytes(), thresholds(g.worldSize, b));
            if (ncclWanted(g.worldSize, b)) {
                abort.throwIfAborted("before NCCL's init");
                ncclPath = NcclPath.open(g, abort);
            }
            if (g.customKernelsPossible()) {
                abort.throwIfAborted("before the custom kernels were set up");
                custom = CustomKernelPath.open(g, b.stagingBytes(), b.maxRegistrations(), b.kernelTimeout().toNanos(),
                        b.launchBlocks(), b.launchThreads(), b.ranksPerGpuAtLeast(), BuilderChecks.pdlEnabled(b),
                        BuilderChecks.kernelVariants(b));
            }
            // Every context exists (and its push buffers are filled) before any rank launches.
            abort.throwIfAborted("before the group's ready barrier");
            g.rendezvous.barrier(g.key("ready"), g.timeout);
            if (custom != null) {
                custom.afterGroupReady();
            }
            return new GroupParts(g, d, ncclPath, custom);
        } catch (RuntimeException e) {
            new GroupParts(g, null, ncclPath, custom).closeAfterFailure(e);
            if (g == null && ownsRendezvous) {
                Closing.quietly(e, rendezvous);
            }
            throw e;
        }
    }

    /**
     * Whether the group sets up NCCL: when it is enabled ({@link BuilderChecks#ncclEnabled}) and the
     * group has more than one rank. A group of one rank communicates nothing, so it neither loads
     * libnccl nor initialises a communicator (its all-reduce is a copy or nothing, see
     * {@link dev.ar4j.dispatch.Algorithm#LOCAL}); the custom kernels are not set up there either
     * ({@link Group#customKernelsPossible}).
     */
    static boolean ncclWanted(int worldSize, Settings b) {
        return worldSize > 1 && BuilderChecks.ncclEnabled(b);
    }

    /** The automatic policy's switch points: {@link AlgorithmThresholds#forWorldSize}, unless the builder set the push threshold. */
    static AlgorithmThresholds thresholds(int worldSize, Settings b) {
        AlgorithmThresholds base = AlgorithmThresholds.forWorldSize(worldSize);
        return b.pushUpToBytes() >= 0 ? base.withPushUpToBytes(b.pushUpToBytes()) : base;
    }

    /** Closes everything opened, in reverse order, adding failures to {@code e}. NCCL is aborted: the group never formed. */
    void closeAfterFailure(RuntimeException e) {
        Closing.quietly(e, kernels);
        if (group != null) {
            group.closeSharedBuffers(e);
        }
        if (nccl != null) {
            try {
                nccl.close(true);
            } catch (RuntimeException ex) {
                e.addSuppressed(ex);
            }
        }
        if (group != null) {
            group.closeRendezvous(e);
        }
    }
}
