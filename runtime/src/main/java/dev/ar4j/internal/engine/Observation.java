package dev.ar4j.internal.engine;

import dev.ar4j.DType;
import dev.ar4j.dispatch.AllReduceDispatcher;

/** What a communicator tells about itself: {@code Communicator.explain}, and the line it logs once built. */
final class Observation {

    private Observation() {
    }

    /** Why a group of one rank has no NCCL collectives ({@code Communicator.collectives()} refuses with it). */
    static final String SOLO_NO_NCCL = "world size 1: this communicator has no NCCL communicator and no NCCL "
            + "collectives (a group of one rank communicates nothing, so ar4j neither loads libnccl nor initialises "
            + "it); every collective of one rank is its own input: copy it (DeviceBuffer.copyFromAsync) or use it as "
            + "it is, or build a group of more ranks";

    /** What a group of one rank sets up, in {@code explain} and the build line. */
    static final String SOLO = "world size 1: no communication; allReduce is a copy (out of place) or nothing (in "
            + "place), allReduceResidualRmsNorm one residual add + RMSNorm kernel; no NCCL (libnccl is not loaded), "
            + "no custom kernels, no IPC";

    static String explain(AllReduceDispatcher dispatcher, int worldSize, boolean customKernels, boolean nccl, long bytes,
                          DType dtype) {
        if (worldSize == 1) {
            return dispatcher.explain(bytes, dtype) + "\n  (" + SOLO + ")";
        }
        return dispatcher.explain(bytes, dtype) + (customKernels ? "" : "\n  (custom kernels are not set up on this group)")
                + (nccl ? "" : "\n  (NCCL is off on this group, nccl(false): a call decided for NCCL throws instead)");
    }

    /** ", variants ..." when kernel variants are in effect, else nothing (the default line is unchanged). */
    private static String variants(CustomKernelPath kernels) {
        int active = kernels.variantsActive();
        return active == 0 ? "" : ", variants " + dev.ar4j.internal.kernels.KernelVariants.describe(active);
    }

    /**
     * The warning a rank logs (WARNING) when other ranks of this process share its GPU and CUDA loads modules
     * lazily ({@code CUDA_MODULE_LOADING} unset, the default since CUDA 12.2, or {@code LAZY}); else null.
     * The custom kernels spin until their peers arrive, and under lazy loading a kernel's first launch can
     * wait for the kernels running in its context while holding the launch path: a rank that first launches a
     * kernel (its own, cuBLAS's) while a peer's all-reduce spins for that rank's next launch then waits for
     * it until the kernel timeout. ar4j preloads its own kernels; the application's cannot be known here.
     *
     * @param sameProcess   every rank of the group is in this process
     * @param device        this rank's GPU
     * @param peerDevices   every rank's GPU, this rank's included
     * @param moduleLoading the value of {@code CUDA_MODULE_LOADING}, or null
     */
    static String lazyLoadingHazard(boolean sameProcess, int device, java.util.List<Integer> peerDevices,
                                    String moduleLoading) {
        boolean shared = sameProcess && peerDevices.stream().filter(d -> d == device).count() > 1;
        if (!shared || "EAGER".equalsIgnoreCase(moduleLoading)) {
            return null;
        }
        return "ar4j: ranks of this process share GPU " + device + " and CUDA loads modules lazily (CUDA_MODULE_LOADING="
                + (moduleLoading == null ? "unset, LAZY by default" : moduleLoading) + "): a kernel launched for the "
                + "first time while a peer's all-reduce spins can wait for it until the kernel timeout "
                + "(PeerTimeoutException). Start the process with CUDA_MODULE_LOADING=EAGER, or run one process per GPU";
    }

    /** The line a communicator logs (INFO) once built: rank, GPU, topology, kernels, NCCL, configuration. */
    static String built(GroupParts parts) {
        Group g = parts.group();
        CustomKernelPath kernels = parts.kernels();
        if (g.worldSize == 1) {
            return "ar4j rank 0/1 on GPU " + g.device + ": " + SOLO + "; " + parts.dispatchers().config.describe();
        }
        return "ar4j rank " + g.rank + "/" + g.worldSize + " on GPU " + g.device + ": " + g.topology.describe()
                + (kernels == null ? "; custom kernels not set up" : "; custom kernels ready (grid "
                + kernels.geometry() + ", PDL " + (kernels.pdlActive() ? "on" : "off") + variants(kernels) + ")")
                + (parts.nccl() == null ? "; NCCL off" : "") + "; " + parts.dispatchers().config.describe();
    }
}
