package dev.ar4j.examples.llama.engine;

import dev.ar4j.cuda.PinnedHostBuffer;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * One rank's pinned host memory that steps read their inputs from and write their outputs to:
 * token ids and positions (int32), argmax (int32), the kernels' status word, and optionally the
 * bf16 logits. The graphs copy from and to these addresses on every replay, so the host writes
 * the next inputs here and reads results here after synchronising. Owns the pinned buffers.
 */
final class HostIo implements AutoCloseable {

    private final PinnedHostBuffer ints;
    private final PinnedHostBuffer logitsBuffer;
    private final int maxTokens;

    HostIo(int maxTokens, long logitsBytes, boolean keepLogits) {
        this.maxTokens = maxTokens;
        this.ints = PinnedHostBuffer.allocate(4L * (3L * maxTokens + 4));
        this.logitsBuffer = keepLogits ? PinnedHostBuffer.allocate(logitsBytes) : null;
    }

    MemorySegment ids() {
        return ints.segment().asSlice(0, 4L * maxTokens);
    }

    MemorySegment positions() {
        return ints.segment().asSlice(4L * maxTokens, 4L * maxTokens);
    }

    MemorySegment argmax() {
        return ints.segment().asSlice(8L * maxTokens, 4L * maxTokens);
    }

    MemorySegment status() {
        return ints.segment().asSlice(12L * maxTokens, 4);
    }

    boolean keepsLogits() {
        return logitsBuffer != null;
    }

    MemorySegment logits() {
        return logitsBuffer.segment();
    }

    void setInput(int i, int id, int position) {
        ints.segment().setAtIndex(ValueLayout.JAVA_INT, i, id);
        ints.segment().setAtIndex(ValueLayout.JAVA_INT, maxTokens + i, position);
    }

    int argmax(int i) {
        return ints.segment().getAtIndex(ValueLayout.JAVA_INT, 2L * maxTokens + i);
    }

    int statusWord() {
        return ints.segment().getAtIndex(ValueLayout.JAVA_INT, 3L * maxTokens);
    }

    @Override
    public void close() {
        ints.close();
        if (logitsBuffer != null) {
            logitsBuffer.close();
        }
    }
}
