package dev.ar4j.examples.llama.engine;

import dev.ar4j.cuda.DeviceBuffer;

/**
 * The first {@code tokens} rows of the activation buffers the all-reduces take as buffers, made
 * once per step kind so that a step makes no Java objects.
 *
 * @param tokens   rows
 * @param partial  row-parallel partial sums
 * @param residual the residual stream
 * @param normed   the normed rows
 * @param zeros    a zero residual (the first layer's)
 * @param allLogits the whole logits buffer (rows over the padded vocabulary)
 * @param logitRowBytes bytes of one row of logits
 */
record StepViews(int tokens, DeviceBuffer partial, DeviceBuffer residual, DeviceBuffer normed, DeviceBuffer zeros,
                 DeviceBuffer allLogits, long logitRowBytes) {

    /** The logits of every row of the step. */
    DeviceBuffer logits() {
        return logitRows(tokens);
    }

    /** The first {@code rows} rows of logits. */
    DeviceBuffer logitRows(int rows) {
        return allLogits.slice(0, rows * logitRowBytes);
    }
}
