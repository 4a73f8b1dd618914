package dev.ar4j.examples.llama.engine;

import dev.ar4j.examples.llama.model.LlamaConfig;
import dev.ar4j.examples.llama.model.ModelFileException;
import dev.ar4j.examples.llama.model.ModelFolder;
import dev.ar4j.examples.llama.model.TensorDType;
import dev.ar4j.examples.llama.model.TestFiles;
import dev.ar4j.examples.llama.model.BFloat16;
import dev.ar4j.examples.llama.model.LlamaTensors;
import dev.ar4j.examples.llama.model.ShardPiece;
import dev.ar4j.examples.llama.model.ShardPlan;
import dev.ar4j.examples.llama.model.TensorParallelLayout;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The host side of loading (no GPU): the check every load starts with, and the staging of each rank's blocks
 * from bf16, fp16 and fp32 tensors, element by element against the tensors' values converted to bf16.
 */
class WeightLoaderTest {

    /** 4 heads of 4, 2 KV heads (replicated at TP 4), hidden 16, intermediate 24, vocab 37 (padded at TP 2 and 4). */
    static final LlamaConfig C = new LlamaConfig(16, 24, 1, 4, 2, 4, 37, 64, 1e-5, 10000, null, false, "float16");

    private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    @TempDir
    Path dir;

    /** Element i of every tensor is a value with bits below bf16's precision: {@code (i + 1) * (1 + 2^-10) / 7}. */
    private static float value(long i) {
        return (float) ((i + 1) * (1 + 0x1p-10) / 7);
    }

    /** Every tensor the config needs, in the given dtype per tensor index (cycling BF16, F16, F32). */
    private static List<TestFiles.Tensor> tensors(LlamaConfig c, String badName, String badDtype) {
        String[] dtypes = {"BF16", "F16", "F32"};
        List<TestFiles.Tensor> out = new ArrayList<>();
        int k = 0;
        for (LlamaTensors.Expected e : LlamaTensors.expected(c)) {
            long n = 1;
            for (long d : e.shape()) {
                n *= d;
            }
            String dtype = e.name().equals(badName) ? badDtype : dtypes[k++ % dtypes.length];
            int size = dtype.equals("F32") ? 4 : 2;
            ByteBuffer b = ByteBuffer.allocate((int) (size * n)).order(ByteOrder.LITTLE_ENDIAN);
            for (long i = 0; i < n; i++) {
                float v = value(i);
                switch (dtype) {
                    case "F32" -> b.putFloat(v);
                    case "F16" -> b.putShort(Float.floatToFloat16(v));
                    default -> b.putShort((short) (Float.floatToRawIntBits(v) >>> 16));  // truncated: any bf16
                }
            }
            out.add(new TestFiles.Tensor(e.name(), dtype, e.shape(), b.array()));
        }
        return out;
    }

    /** The bf16 the loader must produce for element {@code i} of a tensor of {@code dtype}. */
    private static short expected(TensorDType dtype, long i) {
        float v = value(i);
        return switch (dtype) {
            case F32 -> BFloat16.fromFloat(v);
            case F16 -> BFloat16.fromHalf(Float.floatToFloat16(v));
            default -> (short) (Float.floatToRawIntBits(v) >>> 16);
        };
    }

    @Test
    void stagesEveryBlockOfEveryRankConvertedToBf16() throws IOException {
        TestFiles.write(dir.resolve("model.safetensors"), tensors(C, null, null));
        try (ModelFolder folder = ModelFolder.open(dir); Arena arena = Arena.ofConfined()) {
            for (int tp : new int[] {1, 2, 4}) {
                TensorParallelLayout layout = new TensorParallelLayout(C, tp);
                for (int rank = 0; rank < tp; rank++) {
                    ShardPlan plan = ShardPlan.forRank(layout, rank);
                    LlamaTensors.Checked checked = WeightLoader.check(folder, plan);
                    assertEquals(Set.of(TensorDType.BF16, TensorDType.F16, TensorDType.F32), checked.dtypes());
                    for (ShardPiece p : plan.pieces()) {
                        ModelFolder.Located at = folder.find(p.tensor());
                        MemorySegment stage = arena.allocate(2 * p.rows() * p.cols());
                        long bytes = WeightLoader.stageRows(at, p, 0, p.rows(), stage);
                        assertEquals(2 * p.rows() * p.cols(), bytes);
                        for (long r = 0; r < p.rows(); r++) {
                            for (long c = 0; c < p.cols(); c++) {
                                long element = (p.firstRow() + r) * p.sourceCols() + p.firstCol() + c;
                                assertEquals(expected(at.entry().dtype(), element), stage.get(SHORT, 2 * (r * p.cols() + c)),
                                        "tp " + tp + " rank " + rank + " " + p.tensor() + " (" + at.entry().dtype()
                                                + ") row " + r + " col " + c);
                            }
                        }
                        // A chunk from the middle lands at the stage's start.
                        if (p.rows() > 2) {
                            WeightLoader.stageRows(at, p, 1, 1, stage);
                            long element = (p.firstRow() + 1) * p.sourceCols() + p.firstCol();
                            assertEquals(expected(at.entry().dtype(), element), stage.get(SHORT, 0), p.tensor());
                        }
                    }
                }
            }
        }
    }

    @Test
    void everyLoadChecksTheFolderFirst() throws IOException {
        // Right shape, wrong dtype: an int16 q_proj would load as garbage; the check refuses it by name.
        TestFiles.write(dir.resolve("model.safetensors"), tensors(C, "model.layers.0.self_attn.q_proj.weight", "I16"));
        try (ModelFolder folder = ModelFolder.open(dir)) {
            ShardPlan plan = ShardPlan.forRank(new TensorParallelLayout(C, 2), 1);
            ModelFileException e = assertThrows(ModelFileException.class, () -> WeightLoader.check(folder, plan));
            assertTrue(e.getMessage().contains("model.layers.0.self_attn.q_proj.weight"), e.getMessage());
            assertTrue(e.getMessage().contains("is I16"), e.getMessage());
            ShardPiece q = plan.pieces().stream().filter(p -> p.tensor().endsWith("q_proj.weight")).findFirst()
                    .orElseThrow();
            try (Arena arena = Arena.ofConfined()) {
                assertThrows(IllegalStateException.class,
                        () -> WeightLoader.stageRows(folder.find(q.tensor()), q, 0, 1, arena.allocate(1024)));
            }
        }
    }

    @Test
    void theConversionLogLineNamesTheDtypes() throws IOException {
        TestFiles.write(dir.resolve("model.safetensors"), tensors(C, null, null));
        try (ModelFolder folder = ModelFolder.open(dir)) {
            String line = WeightLoader.conversionNote(folder, Set.of(TensorDType.BF16, TensorDType.F16, TensorDType.F32));
            assertTrue(line.contains("converting the float16 and float32 weights to bfloat16 while loading"), line);
            assertTrue(line.contains("round to nearest even"), line);
        }
    }
}
