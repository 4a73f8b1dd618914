package dev.ar4j.examples.llama.engine;

import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.examples.llama.model.TensorParallelLayout;

/**
 * One rank's key and value caches: per layer, {@code positions x kvHeadsPerRank x head_dim} bf16
 * keys and as many values, in one allocation. Bounded: the engine accepts positions below
 * {@link #positions()} only.
 */
final class KvCache implements AutoCloseable {

    private final DeviceBuffer all;
    private final long layerBytes;
    private final int positions;

    KvCache(TensorParallelLayout layout, int positions) {
        this.positions = positions;
        this.layerBytes = 2L * positions * layout.keyValueWidthPerRank();
        this.all = DeviceBuffer.allocate(bytes(layout, positions));
        all.fill(0);
    }

    /** The bytes a cache of {@code positions} positions allocates. */
    static long bytes(TensorParallelLayout layout, int positions) {
        return 4L * positions * layout.keyValueWidthPerRank() * layout.config().numHiddenLayers();
    }

    int positions() {
        return positions;
    }

    long keys(int layer) {
        return all.address() + 2 * layer * layerBytes;
    }

    long values(int layer) {
        return keys(layer) + layerBytes;
    }

    long bytes() {
        return all.byteSize();
    }

    @Override
    public void close() {
        all.close();
    }
}
