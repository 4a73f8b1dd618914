package dev.ar4j;

import dev.ar4j.dispatch.AllReduceDispatcher;

/** What a communicator tells about itself: {@link Communicator#explain}. */
final class Observation {

    private Observation() {
    }

    static String explain(AllReduceDispatcher dispatcher, boolean customKernels, boolean nccl, long bytes,
                          DType dtype) {
        return dispatcher.explain(bytes, dtype) + (customKernels ? "" : "\n  (custom kernels are not set up on this group)")
                + (nccl ? "" : "\n  (NCCL is off on this group, nccl(false): a call decided for NCCL throws instead)");
    }
}
