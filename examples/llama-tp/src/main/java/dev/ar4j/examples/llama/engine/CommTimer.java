package dev.ar4j.examples.llama.engine;

import dev.ar4j.cuda.CudaEvent;
import dev.ar4j.cuda.CudaStream;

/**
 * Timing events around every all-reduce of one eager step (the embedding's, two per layer, the
 * logits'), so that the share of a step spent communicating can be measured. Owns its events.
 */
final class CommTimer implements AutoCloseable {

    private final CudaEvent[] starts;
    private final CudaEvent[] ends;
    private int next;

    CommTimer(int allReducesPerStep) {
        starts = new CudaEvent[allReducesPerStep];
        ends = new CudaEvent[allReducesPerStep];
        try {
            for (int i = 0; i < allReducesPerStep; i++) {
                starts[i] = CudaEvent.create();
                ends[i] = CudaEvent.create();
            }
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    /** Forgets the previous step's marks. */
    void reset() {
        next = 0;
    }

    void before(CudaStream stream) {
        if (next >= starts.length) {
            throw new IllegalStateException("more all-reduces in one step than the " + starts.length + " timed");
        }
        starts[next].record(stream);
    }

    void after(CudaStream stream) {
        ends[next++].record(stream);
    }

    /** Milliseconds inside the all-reduces of the step (after the stream was synchronised). */
    double totalMillis() {
        double sum = 0;
        for (int i = 0; i < next; i++) {
            sum += ends[i].elapsedMillisSince(starts[i]);
        }
        return sum;
    }

    int marks() {
        return next;
    }

    @Override
    public void close() {
        for (CudaEvent e : starts) {
            if (e != null) {
                e.close();
            }
        }
        for (CudaEvent e : ends) {
            if (e != null) {
                e.close();
            }
        }
    }
}
