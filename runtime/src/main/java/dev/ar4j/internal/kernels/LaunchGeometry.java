package dev.ar4j.internal.kernels;

/**
 * A context's launch geometry as published in its signal block: the one- and two-stage grid
 * ({@code maxBlocks} blocks of {@code threads}) and the push grid the library was built
 * with. Every rank of a group must launch the same grids; {@code 0} fields mean the rank published
 * none (its context was not created yet).
 *
 * @param maxBlocks   the most CUDA blocks of a one- or two-stage launch, 1 to
 *                    {@link CustomAllReduceKernels#MAX_BLOCKS} (default one per SM), or 0 if none published
 * @param threads     threads per block of a one- or two-stage launch, a multiple of 32 up to
 *                    {@link CustomAllReduceKernels#MAX_THREADS} (default 512), or 0 if none published
 * @param pushBlocks  CUDA blocks of a push launch, fixed when the library was built, or 0
 * @param pushThreads threads per block of a push launch, fixed when the library was built, or 0
 */
public record LaunchGeometry(int maxBlocks, int threads, int pushBlocks, int pushThreads) {
    @Override
    public String toString() {
        return maxBlocks + " x " + threads + " (push " + pushBlocks + " x " + pushThreads + ")";
    }
}
