package dev.ar4j.examples.llama.engine;

import dev.ar4j.cuda.CudaEvent;
import dev.ar4j.cuda.CudaStream;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * CUDA events around the sections of one eager step ({@link StepSection}): either only the
 * all-reduces (for the communication share, disturbing the step least) or every section (for a
 * profile). Events are created as the first step needs them and reused by the next ones. Owns its
 * events. A section's bytes are what it must move at least (weights streamed, KV rows read), so
 * that the profile can state a bandwidth.
 */
final class SectionTimer implements AutoCloseable {

    /** One section's time in a step. */
    private record Mark(StepSection section, long bytes) {
    }

    private final boolean everySection;
    private final List<CudaEvent> starts = new ArrayList<>();
    private final List<CudaEvent> ends = new ArrayList<>();
    private final List<Mark> marks = new ArrayList<>();
    private boolean open;
    private int contextKeys = 1;

    /**
     * A timer.
     *
     * @param everySection every section, or only the all-reduces
     */
    SectionTimer(boolean everySection) {
        this.everySection = everySection;
    }

    /** Forgets the previous step's marks. */
    void reset() {
        marks.clear();
        open = false;
    }

    /**
     * The keys the step's attention reads per query token (its context), for the attention bytes.
     *
     * @param keys positions attended, at least 1
     */
    void contextKeys(int keys) {
        this.contextKeys = Math.max(1, keys);
    }

    int contextKeys() {
        return contextKeys;
    }

    /** Starts a section on the stream (nothing when this timer does not time it). */
    void begin(StepSection section, long bytes, CudaStream stream) {
        if (open) {
            throw new IllegalStateException("section " + section + " begun inside " + marks.getLast().section());
        }
        if (!everySection && !section.communication()) {
            return;
        }
        int i = marks.size();
        if (i == starts.size()) {
            starts.add(CudaEvent.create());
            ends.add(CudaEvent.create());
        }
        starts.get(i).record(stream);
        marks.add(new Mark(section, bytes));
        open = true;
    }

    /** Ends the section begun last (nothing when it was not timed). */
    void end(CudaStream stream) {
        if (!open) {
            return;
        }
        ends.get(marks.size() - 1).record(stream);
        open = false;
    }

    /** Milliseconds inside the all-reduces of the step (after the stream was synchronised). */
    double communicationMillis() {
        double sum = 0;
        for (int i = 0; i < marks.size(); i++) {
            if (marks.get(i).section().communication()) {
                sum += ends.get(i).elapsedMillisSince(starts.get(i));
            }
        }
        return sum;
    }

    /** Per section: calls, milliseconds and bytes of the step (after the stream was synchronised). */
    Map<StepSection, double[]> totals() {
        Map<StepSection, double[]> totals = new EnumMap<>(StepSection.class);
        for (int i = 0; i < marks.size(); i++) {
            double[] t = totals.computeIfAbsent(marks.get(i).section(), s -> new double[3]);
            t[0] += 1;
            t[1] += ends.get(i).elapsedMillisSince(starts.get(i));
            t[2] += marks.get(i).bytes();
        }
        return totals;
    }

    @Override
    public void close() {
        starts.forEach(CudaEvent::close);
        ends.forEach(CudaEvent::close);
        starts.clear();
        ends.clear();
    }
}
