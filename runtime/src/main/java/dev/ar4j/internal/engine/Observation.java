package dev.ar4j.internal.engine;

import dev.ar4j.DType;
import dev.ar4j.dispatch.AllReduceDispatcher;

/** What a communicator tells about itself: {@code Communicator.explain}, and the line it logs once built. */
final class Observation {

    private Observation() {
    }

    static String explain(AllReduceDispatcher dispatcher, boolean customKernels, boolean nccl, long bytes,
                          DType dtype) {
        return dispatcher.explain(bytes, dtype) + (customKernels ? "" : "\n  (custom kernels are not set up on this group)")
                + (nccl ? "" : "\n  (NCCL is off on this group, nccl(false): a call decided for NCCL throws instead)");
    }

    /** ", variants ..." when kernel variants are in effect, else nothing (the default line is unchanged). */
    private static String variants(CustomKernelPath kernels) {
        int active = kernels.variantsActive();
        return active == 0 ? "" : ", variants " + dev.ar4j.internal.kernels.KernelVariants.describe(active);
    }

    /** The line a communicator logs (INFO) once built: rank, GPU, topology, kernels, NCCL, configuration. */
    static String built(GroupParts parts) {
        Group g = parts.group();
        CustomKernelPath kernels = parts.kernels();
        return "ar4j rank " + g.rank + "/" + g.worldSize + " on GPU " + g.device + ": " + g.topology.describe()
                + (kernels == null ? "; custom kernels not set up" : "; custom kernels ready (grid "
                + kernels.geometry() + ", PDL " + (kernels.pdlActive() ? "on" : "off") + variants(kernels) + ")")
                + (parts.nccl() == null ? "; NCCL off" : "") + "; " + parts.dispatchers().config.describe();
    }
}
