package dev.ar4j.examples.llama.engine;

import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.examples.llama.model.RotaryFrequencies;
import dev.ar4j.examples.llama.model.ShardPlan;
import dev.ar4j.examples.llama.model.WeightName;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One rank's weights on its GPU: one device buffer per {@link WeightName} of its
 * {@link ShardPlan}, zero-filled when allocated (so the vocabulary's padding rows stay zero), and
 * the rotary inverse frequencies (fp32). Filled by {@link WeightLoader} or {@link SyntheticWeights}.
 * Owns every buffer; {@link #close()} frees them once.
 */
final class RankWeights implements AutoCloseable {

    private final ShardPlan plan;
    private final Map<WeightName, DeviceBuffer> buffers = new LinkedHashMap<>();
    private final DeviceBuffer invFreq;

    private RankWeights(ShardPlan plan, DeviceBuffer invFreq) {
        this.plan = plan;
        this.invFreq = invFreq;
    }

    /** Allocates (and zeroes) every weight of the plan on the current device. */
    static RankWeights allocate(ShardPlan plan) {
        float[] inv = RotaryFrequencies.of(plan.layout().config());
        DeviceBuffer freq = DeviceBuffer.allocate(4L * inv.length);
        RankWeights w = new RankWeights(plan, freq);
        try {
            try (Arena a = Arena.ofConfined()) {
                MemorySegment host = a.allocateFrom(ValueLayout.JAVA_FLOAT, inv);
                freq.copyFrom(host);
            }
            for (Map.Entry<WeightName, long[]> e : plan.shapes().entrySet()) {
                DeviceBuffer b = DeviceBuffer.allocate(2 * plan.elements(e.getKey()));
                w.buffers.put(e.getKey(), b);
                b.fill(0);
            }
            return w;
        } catch (RuntimeException e) {
            w.close();
            throw e;
        }
    }

    ShardPlan plan() {
        return plan;
    }

    DeviceBuffer get(WeightName name) {
        DeviceBuffer b = buffers.get(name);
        if (b == null) {
            throw new IllegalArgumentException("rank " + plan.rank() + " holds no weight " + name);
        }
        return b;
    }

    long address(WeightName.Kind kind, int layer) {
        return get(new WeightName(kind, layer)).address();
    }

    DeviceBuffer invFreq() {
        return invFreq;
    }

    @Override
    public void close() {
        buffers.values().forEach(DeviceBuffer::close);
        buffers.clear();
        invFreq.close();
    }
}
