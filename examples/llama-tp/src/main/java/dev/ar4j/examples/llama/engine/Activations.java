package dev.ar4j.examples.llama.engine;

import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.examples.llama.model.TensorParallelLayout;

import java.util.ArrayList;
import java.util.List;

/**
 * One rank's activation buffers for steps of up to {@code maxTokens} tokens (bf16 unless said):
 * the residual stream, the normed input of the next projection, the row-parallel partial sums
 * (all-reduced), a zero residual for the first layer, the fused QKV and gate/up outputs, the
 * attention output, the logits over the padded vocabulary (of the rows that get logits only: a
 * prompt's last, a verify step's draft, never prompt x vocabulary), and the int32 token ids,
 * positions and argmax. Sized by the longest step (a prefill chunk), not by the prompt. Owns every
 * buffer.
 */
final class Activations implements AutoCloseable {

    final int maxTokens;
    final int hidden;
    final DeviceBuffer residual;
    final DeviceBuffer normed;
    final DeviceBuffer partial;
    final DeviceBuffer zeros;
    final DeviceBuffer qkv;
    final DeviceBuffer attention;
    final DeviceBuffer gateUp;
    final DeviceBuffer logits;
    final DeviceBuffer ids;
    final DeviceBuffer positions;
    final DeviceBuffer argmax;
    final DeviceBuffer argmaxValue;
    final DeviceBuffer attentionWorkspace;
    /** The LM head's argmax candidates and counter (zeroed here, once, as the kernel needs). */
    final DeviceBuffer argmaxWorkspace;
    /**
     * At TP > 1: the ranks' (value, index) pairs of greedy decoding, all-reduced instead of the logits (zeroed here,
     * once: its padding is never written); {@code null} at TP 1.
     */
    final DeviceBuffer argmaxExchange;
    /** The sampling kernel's state: its step counter (from 0) and completion word (zeroed here, once). */
    final DeviceBuffer sampleState;
    private final List<DeviceBuffer> owned = new ArrayList<>();

    Activations(TensorParallelLayout layout, int maxTokens, int logitRows, long attentionWorkspaceBytes) {
        this.maxTokens = maxTokens;
        this.hidden = layout.config().hiddenSize();
        long t = maxTokens;
        try {
            residual = bf16(t * hidden);
            normed = bf16(t * hidden);
            partial = bf16(t * hidden);
            zeros = bf16(t * hidden);
            qkv = bf16(t * layout.qkvWidthPerRank());
            attention = bf16(t * layout.queryWidthPerRank());
            gateUp = bf16(t * layout.gateUpWidthPerRank());
            logits = bf16((long) logitRows * layout.paddedVocab());
            ids = own(4 * t);
            positions = own(4 * t);
            argmax = own(4 * t);
            argmaxValue = own(4 * t);
            attentionWorkspace = own(Math.max(16, attentionWorkspaceBytes));
            argmaxWorkspace = own(Math.max(16, LlamaKernels.linearRowsArgmaxWorkspaceBytes(
                    Math.min(logitRows, LlamaKernels.MAX_LINEAR_ROWS), layout.vocabPerRank())));
            sampleState = own(LlamaKernels.SAMPLE_STATE_BYTES);
            argmaxExchange = layout.tp() > 1 ? own(exchangeBytes(layout, logitRows)) : null;
            for (DeviceBuffer b : owned) {
                b.fill(0);
            }
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    /**
     * The bytes the constructor allocates (each buffer rounded up to 16 bytes, as allocated), for the
     * engine's check that everything fits before it allocates.
     */
    static long bytes(TensorParallelLayout layout, int maxTokens, int logitRows, long attentionWorkspaceBytes) {
        long t = maxTokens;
        long h = layout.config().hiddenSize();
        long bf16 = 2 * (4 * t * h + t * layout.qkvWidthPerRank() + t * layout.queryWidthPerRank()
                + t * layout.gateUpWidthPerRank() + (long) logitRows * layout.paddedVocab());
        return bf16 + 16 * t + Math.max(16, attentionWorkspaceBytes) + 16 * 16 + 16 + Math.max(16,
                LlamaKernels.linearRowsArgmaxWorkspaceBytes(Math.min(logitRows, LlamaKernels.MAX_LINEAR_ROWS),
                        layout.vocabPerRank())) + (layout.tp() > 1 ? exchangeBytes(layout, logitRows) + 16 : 0);
    }

    /** Bytes of the argmax exchange buffer for steps of up to {@code logitRows} rows of logits. */
    static long exchangeBytes(TensorParallelLayout layout, int logitRows) {
        long floats = LlamaKernels.argmaxExchangeFloats(logitRows, layout.tp());
        if (floats <= 0) {
            throw new IllegalArgumentException("no argmax exchange for " + logitRows + " rows at TP " + layout.tp());
        }
        return 4 * floats;
    }

    private DeviceBuffer bf16(long elements) {
        return own(2 * elements);
    }

    private DeviceBuffer own(long bytes) {
        DeviceBuffer b = DeviceBuffer.allocate((bytes + 15) / 16 * 16);
        owned.add(b);
        return b;
    }

    /** The first {@code tokens} rows of a buffer of rows of {@code rowBytes}. */
    static DeviceBuffer rows(DeviceBuffer b, int tokens, long rowBytes) {
        return b.slice(0, tokens * rowBytes);
    }

    @Override
    public void close() {
        owned.forEach(DeviceBuffer::close);
        owned.clear();
    }
}
