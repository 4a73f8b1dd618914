package dev.ar4j.internal.engine;

import dev.ar4j.cuda.Cuda;

/**
 * The all-reduce of a group of one rank ({@link dev.ar4j.dispatch.Algorithm#LOCAL}): the sum over one
 * rank is its input, so in place nothing is enqueued and out of place one device-to-device
 * {@code cudaMemcpyAsync} on the caller's stream. Stream-ordered and never synchronising, so it can
 * be captured into a CUDA graph (the copy becomes a memcpy node).
 */
final class LocalCopy {

    private LocalCopy() {
    }

    /**
     * @throws IllegalArgumentException if {@code out} overlaps {@code in} without being {@code in}
     *                                  (nothing is enqueued)
     */
    static void allReduce(long in, long out, long bytes, long stream) {
        if (in == out) {
            return;
        }
        if (FusedNormRoute.overlaps(in, out, bytes)) {
            throw new IllegalArgumentException("the output (0x" + Long.toHexString(out) + ") overlaps the input (0x"
                    + Long.toHexString(in) + ", " + bytes + " bytes) without being it; pass the same address for an "
                    + "in-place all-reduce, or ranges that do not overlap");
        }
        Cuda.memcpyDeviceToDeviceAsync(out, in, bytes, stream);
    }
}
