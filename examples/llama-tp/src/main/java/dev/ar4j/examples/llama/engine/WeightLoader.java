package dev.ar4j.examples.llama.engine;

import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.cuda.PinnedHostBuffer;
import dev.ar4j.examples.llama.safetensors.ModelFolder;
import dev.ar4j.examples.llama.weights.ShardPiece;
import dev.ar4j.examples.llama.weights.ShardPlan;

import java.io.PrintStream;
import java.lang.foreign.MemorySegment;

/**
 * Copies one rank's blocks of a checked model folder ({@code LlamaTensors.check}) from the
 * memory-mapped safetensors files into its {@link RankWeights}: whole-row blocks straight from
 * the mapping, column blocks (the row-parallel projections) gathered row by row into a pinned
 * staging buffer first.
 */
final class WeightLoader {

    /** The staging buffer's size. */
    static final long STAGING_BYTES = 64L << 20;

    private WeightLoader() {
    }

    static void load(ModelFolder folder, RankWeights weights, PrintStream progress) {
        ShardPlan plan = weights.plan();
        ProgressBar bar = new ProgressBar(progress, "rank " + plan.rank() + " loading", plan.bf16Bytes());
        try (PinnedHostBuffer staging = PinnedHostBuffer.allocate(STAGING_BYTES)) {
            MemorySegment stage = staging.segment();
            for (ShardPiece p : plan.pieces()) {
                ModelFolder.Located at = folder.find(p.tensor());
                if (at == null) {
                    throw new IllegalStateException("tensor '" + p.tensor() + "' is not in " + folder.folder()
                            + " (check the folder with LlamaTensors.check first)");
                }
                MemorySegment src = at.data();
                DeviceBuffer dst = weights.get(p.target());
                long rowBytes = p.cols() * 2;
                long rowsPerChunk = Math.max(1, STAGING_BYTES / rowBytes);
                for (long r = 0; r < p.rows(); r += rowsPerChunk) {
                    long n = Math.min(rowsPerChunk, p.rows() - r);
                    long bytes = n * rowBytes;
                    if (p.contiguous()) {
                        MemorySegment.copy(src, p.sourceOffset(r, 2), stage, 0, bytes);
                    } else {
                        for (long i = 0; i < n; i++) {
                            MemorySegment.copy(src, p.sourceOffset(r + i, 2), stage, i * rowBytes, rowBytes);
                        }
                    }
                    dst.slice(p.targetOffset(r, 2), bytes).copyFrom(stage.asSlice(0, bytes));
                    bar.advance(bytes);
                }
            }
        }
        bar.finish();
    }
}
