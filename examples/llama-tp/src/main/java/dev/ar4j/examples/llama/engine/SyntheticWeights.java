package dev.ar4j.examples.llama.engine;

import dev.ar4j.cuda.CudaStream;
import dev.ar4j.examples.llama.model.ShardPiece;
import dev.ar4j.examples.llama.model.ShardPlan;
import dev.ar4j.examples.llama.model.WeightName.Kind;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * Makes one rank's weights on its GPU with no files: every block of its {@link ShardPlan} is
 * filled by the seeded kernel {@code ar4j_llama_fill_random_bf16}, whose value at an element
 * depends only on the tensor's seed and the element's global row and column, so any TP degree
 * holds the same model. Linear and embedding weights are uniform with standard deviation 0.02
 * (transformers' {@code initializer_range}); norm weights are 1.
 */
final class SyntheticWeights {

    static final float STD = 0.02f;

    private SyntheticWeights() {
    }

    static void make(RankWeights weights, LlamaKernels kernels, CudaStream stream, long seed, PrintStream progress) {
        ShardPlan plan = weights.plan();
        ProgressBar bar = new ProgressBar(progress, "rank " + plan.rank() + " making weights", plan.bf16Bytes());
        for (ShardPiece p : plan.pieces()) {
            long dst = weights.get(p.target()).address() + p.targetOffset(0, 2);
            Kind k = p.target().kind();
            if (k == Kind.INPUT_NORM || k == Kind.POST_NORM || k == Kind.FINAL_NORM) {
                kernels.fill(dst, p.rows() * p.cols(), 1.0f);
            } else {
                kernels.fillRandom(dst, p.rows(), p.cols(), p.cols(), p.firstRow(), p.firstCol(), p.sourceCols(),
                        seedOf(p.tensor(), seed), STD);
            }
            stream.synchronize();
            bar.advance(p.rows() * p.cols() * 2);
        }
        bar.finish();
    }

    /** FNV-1a of the tensor's name, mixed with the run's seed. */
    static long seedOf(String tensor, long seed) {
        long h = 0xcbf29ce484222325L;
        for (byte b : tensor.getBytes(StandardCharsets.UTF_8)) {
            h ^= b & 0xff;
            h *= 0x100000001b3L;
        }
        return h ^ (seed * 0x9E3779B97F4A7C15L);
    }
}
