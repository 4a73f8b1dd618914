package dev.ar4j.examples.llama.engine;

import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.examples.llama.model.TensorParallelLayout;

/**
 * One rank's key and value caches of a batch of sequences: per layer, each sequence's
 * {@code positions x kvHeadsPerRank x head_dim} bf16 keys one after another, then as many values, in one
 * allocation. Bounded: the engine accepts positions below {@link #positions()} only.
 */
final class KvCache implements AutoCloseable {

    private final DeviceBuffer all;
    private final long layerBytes;  // one layer's keys (of every sequence), bytes
    private final int positions;
    private final int sequences;
    private final long sequenceElements;

    KvCache(TensorParallelLayout layout, int positions, int sequences) {
        this.positions = positions;
        this.sequences = sequences;
        this.sequenceElements = (long) positions * layout.keyValueWidthPerRank();
        this.layerBytes = 2L * sequences * sequenceElements;
        this.all = DeviceBuffer.allocate(bytes(layout, positions, sequences));
        all.fill(0);
    }

    /** The bytes a cache of {@code sequences} sequences of {@code positions} positions allocates. */
    static long bytes(TensorParallelLayout layout, int positions, int sequences) {
        return 4L * sequences * positions * layout.keyValueWidthPerRank() * layout.config().numHiddenLayers();
    }

    int positions() {
        return positions;
    }

    int sequences() {
        return sequences;
    }

    /** The bf16 elements from one sequence's cache of a layer to the next one's. */
    long sequenceStride() {
        return sequenceElements;
    }

    /** The keys of the layer's first sequence. */
    long keys(int layer) {
        return all.address() + 2 * layer * layerBytes;
    }

    /** The keys of one sequence of the layer. */
    long keys(int layer, int sequence) {
        return keys(layer) + 2L * sequence * sequenceElements;
    }

    /** The values of the layer's first sequence. */
    long values(int layer) {
        return keys(layer) + layerBytes;
    }

    /** The values of one sequence of the layer. */
    long values(int layer, int sequence) {
        return values(layer) + 2L * sequence * sequenceElements;
    }

    long bytes() {
        return all.byteSize();
    }

    @Override
    public void close() {
        all.close();
    }
}
