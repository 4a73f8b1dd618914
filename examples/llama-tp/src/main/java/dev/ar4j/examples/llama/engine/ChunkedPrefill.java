package dev.ar4j.examples.llama.engine;

import dev.ar4j.Communicator;

import java.util.function.Consumer;

/**
 * The chunked prefill of one rank: a prompt in chunks of at most {@link EngineSettings#prefillChunk()} tokens, each
 * an eager step that appends to the sequence's KV cache and is waited for before the next. Only the last chunk
 * computes logits. Before a chunk shape's first use every rank warms it and meets the others
 * ({@link PrefillWarmUp}). Collective, as the engine's steps are.
 */
final class ChunkedPrefill {

    /** The eager step of one chunk. */
    @FunctionalInterface
    interface ChunkStep {
        /**
         * Makes it (the caller closes it).
         *
         * @param tokens    the chunk's tokens
         * @param logitRows its logit rows (0: none)
         * @param start     its first position
         * @param sequence  the batch's sequence whose cache it appends to
         * @return the step
         */
        StepRunner make(int tokens, int logitRows, int start, int sequence);
    }

    private final EngineSettings settings;
    private final ForwardPass forward;
    private final HostIo io;
    private final Communicator comm;
    private final ChunkStep chunkStep;
    private final Consumer<String> finish;
    /** The chunk shapes this engine has warmed up. */
    private final PrefillWarmUp warmUp = new PrefillWarmUp();
    /** The rows of logits the last prefill kept (its last positions), and its prompt's length. */
    private int keptLogitRows;
    private int lastPromptLength;

    /**
     * A rank's prefill over its engine's parts (none owned).
     *
     * @param settings  the engine's sizes: the batch, the longest prompt, the chunk size, whether logits are kept
     * @param forward   the rank's forward pass (its first-use warm-up of a chunk shape)
     * @param io        the pinned inputs the chunks' token ids and positions go through
     * @param comm      the rank's communicator (the barrier after a warm-up)
     * @param chunkStep makes a chunk's eager step
     * @param finish    waits for the stream and checks the status word, naming the step
     */
    ChunkedPrefill(EngineSettings settings, ForwardPass forward, HostIo io, Communicator comm, ChunkStep chunkStep,
                   Consumer<String> finish) {
        this.settings = settings;
        this.forward = forward;
        this.io = io;
        this.comm = comm;
        this.chunkStep = chunkStep;
        this.finish = finish;
    }

    /**
     * Runs the prompt into sequence {@code sequence}'s cache at positions {@code 0 .. n-1}; timer events around
     * every chunk's sections when a timer is given.
     *
     * @param sequence the sequence, 0 to {@code batch - 1}
     * @param prompt   its token ids (checked by the caller), 1 to {@code prefillMax} of them
     * @param timer    the sections' timer, or {@code null}
     */
    void run(int sequence, int[] prompt, SectionTimer timer) {
        if (sequence < 0 || sequence >= settings.batch()) {
            throw new IllegalArgumentException("sequence " + sequence + " of a batch of " + settings.batch()
                    + ": need 0.." + (settings.batch() - 1));
        }
        if (prompt.length < 1 || prompt.length > settings.prefillMax()) {
            throw new IllegalArgumentException("a prompt of " + prompt.length + " tokens; this engine takes 1.."
                    + settings.prefillMax());
        }
        int[] chunks = settings.prefillChunks(prompt.length);
        warmNewChunkShapes(chunks, sequence);
        int start = 0;
        for (int c = 0; c < chunks.length; c++) {
            int t = chunks[c];
            int rows = logitRows(chunks, c, settings.keepLogits());
            try (StepRunner step = chunkStep.make(t, rows, start, sequence)) {
                for (int i = 0; i < t; i++) {
                    io.setInput(i, prompt[start + i], start + i);
                }
                step.runEager(timer);
                // The next chunk's inputs go to the same pinned buffer: wait for this one's copies (and check it).
                finish.accept("prefill");
            }
            if (c == chunks.length - 1) {
                keptLogitRows = rows;
            }
            start += t;
        }
        lastPromptLength = prompt.length;
    }

    /**
     * The rows of logits the last prefill kept.
     *
     * @return its last chunk's logit rows (the last row is the prompt's last position)
     */
    int keptLogitRows() {
        return keptLogitRows;
    }

    /**
     * The prompt position of the first kept logit row.
     *
     * @return the last prompt's length minus {@link #keptLogitRows()}
     */
    int firstKeptPosition() {
        return lastPromptLength - keptLogitRows;
    }

    /**
     * The logit rows of one chunk: none before the last; the last computes its last row, or its last
     * {@link EngineSettings#KEPT_PROMPT_LOGIT_ROWS} rows (at most its tokens) when the engine keeps logits.
     *
     * @param chunks     the prefill's chunks' token counts
     * @param c          the chunk, by index
     * @param keepLogits whether the engine keeps the prompt's last logits
     * @return the chunk's logit rows
     */
    static int logitRows(int[] chunks, int c, boolean keepLogits) {
        if (c < chunks.length - 1) {
            return 0;
        }
        return keepLogits ? Math.min(chunks[c], EngineSettings.KEPT_PROMPT_LOGIT_ROWS) : 1;
    }

    /**
     * Before a prefill with chunk shapes this engine has not run: {@link ForwardPass#warmUp} for each new one, waited
     * for, then a barrier with the other ranks, so that no rank launches the chunk's first all-reduce while another
     * makes a first-use call that waits for the device (see there). Every rank runs the same chunks, so every rank
     * reaches the barrier or none does.
     */
    private void warmNewChunkShapes(int[] chunks, int sequence) {
        if (warmUp.warmNew(chunks, c -> logitRows(chunks, c, settings.keepLogits()),
                (t, rows, start) -> forward.warmUp(t, rows, start, sequence))) {
            finish.accept("prefill warm-up");
            comm.barrier();
        }
    }
}
