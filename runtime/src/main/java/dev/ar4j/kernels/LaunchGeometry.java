package dev.ar4j.kernels;

/**
 * A context's launch geometry as published in its signal block: the one- and two-stage grid
 * ({@code maxBlocks} blocks of {@code threads}) and the one-shot push grid the library was built
 * with. Every rank of a group must launch the same grids; {@code 0} fields mean the rank published
 * none (its context was not created yet).
 */
public record LaunchGeometry(int maxBlocks, int threads, int pushBlocks, int pushThreads) {
    @Override
    public String toString() {
        return maxBlocks + " x " + threads + " (push " + pushBlocks + " x " + pushThreads + ")";
    }
}
