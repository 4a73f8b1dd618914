package dev.ar4j.examples.llama.engine;

import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.cuda.PinnedHostBuffer;
import dev.ar4j.examples.llama.model.ModelFolder;
import dev.ar4j.examples.llama.model.TensorDType;
import dev.ar4j.examples.llama.model.BFloat16;
import dev.ar4j.examples.llama.model.LlamaTensors;
import dev.ar4j.examples.llama.model.ShardPiece;
import dev.ar4j.examples.llama.model.ShardPlan;

import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * Copies one rank's blocks of a model folder from the memory-mapped safetensors files into its
 * {@link RankWeights}, after checking the folder against the config ({@link LlamaTensors#check}:
 * every load checks, whoever opens the engine). Blocks go through a pinned staging buffer: bf16
 * whole-row blocks in one copy, column blocks (the row-parallel projections) row by row, and
 * float16 or float32 tensors converted to bfloat16 on the way ({@link BFloat16}, round to nearest
 * even; rank 0 logs one line saying so).
 */
final class WeightLoader {

    /** The staging buffer's size. */
    static final long STAGING_BYTES = 64L << 20;

    private static final System.Logger LOG = System.getLogger(WeightLoader.class.getName());

    private WeightLoader() {
    }

    static void load(ModelFolder folder, RankWeights weights, PrintStream progress) {
        ShardPlan plan = weights.plan();
        check(folder, plan);
        ProgressBar bar = new ProgressBar(progress, "rank " + plan.rank() + " loading", plan.bf16Bytes());
        try (PinnedHostBuffer staging = PinnedHostBuffer.allocate(STAGING_BYTES)) {
            MemorySegment stage = staging.segment();
            for (ShardPiece p : plan.pieces()) {
                ModelFolder.Located at = folder.find(p.tensor());
                DeviceBuffer dst = weights.get(p.target());
                long rowBytes = p.cols() * 2;
                long rowsPerChunk = Math.max(1, STAGING_BYTES / rowBytes);
                for (long r = 0; r < p.rows(); r += rowsPerChunk) {
                    long n = Math.min(rowsPerChunk, p.rows() - r);
                    long bytes = stageRows(at, p, r, n, stage);
                    dst.slice(p.targetOffset(r, 2), bytes).copyFrom(stage.asSlice(0, bytes));
                    bar.advance(bytes);
                }
            }
        }
        bar.finish();
    }

    /**
     * The check every load starts with ({@link LlamaTensors#check}), and rank 0's log line when float16 or
     * float32 weights will be converted.
     */
    static LlamaTensors.Checked check(ModelFolder folder, ShardPlan plan) {
        LlamaTensors.Checked checked = LlamaTensors.check(folder, plan.layout().config());
        if (plan.rank() == 0 && checked.converts()) {
            LOG.log(System.Logger.Level.INFO, conversionNote(folder, checked.dtypes()));
        }
        return checked;
    }

    /** The log line of a load that converts. */
    static String conversionNote(ModelFolder folder, Set<TensorDType> dtypes) {
        String from = dtypes.stream().filter(d -> d != TensorDType.BF16).map(d -> d == TensorDType.F16 ? "float16"
                : "float32").sorted().collect(Collectors.joining(" and "));
        return folder.folder() + ": converting the " + from + " weights to bfloat16 while loading (round to nearest "
                + "even, as torch's .to(torch.bfloat16))";
    }

    /**
     * Puts rows {@code [r, r + n)} of a block into the staging buffer as bf16, row-major with the block's
     * columns, converting float16 and float32 on the way.
     *
     * @return the bytes staged, {@code n * cols * 2}
     */
    static long stageRows(ModelFolder.Located at, ShardPiece p, long r, long n, MemorySegment stage) {
        TensorDType dtype = at.entry().dtype();
        if (!BFloat16.readable(dtype)) {
            throw new IllegalStateException(at.where() + " is " + at.entry().dtypeName() + " (LlamaTensors.check "
                    + "refuses it)");
        }
        MemorySegment src = at.data();
        int size = dtype.byteSize();
        long rowBytes = p.cols() * 2;
        if (dtype == TensorDType.BF16 && p.contiguous()) {
            MemorySegment.copy(src, p.sourceOffset(r, 2), stage, 0, n * rowBytes);
        } else {
            for (long i = 0; i < n; i++) {
                BFloat16.convert(dtype, src, p.sourceOffset(r + i, size), stage, i * rowBytes, p.cols());
            }
        }
        return n * rowBytes;
    }
}
