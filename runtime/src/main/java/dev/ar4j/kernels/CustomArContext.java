package dev.ar4j.kernels;

import dev.ar4j.DType;
import dev.ar4j.bindings.customar.ar4j_failure_info;
import dev.ar4j.bindings.customar.ar4j_timeout_info;
import dev.ar4j.bindings.customar.custom_all_reduce_h;
import dev.ar4j.cuda.CudaErrors;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One rank's custom all-reduce context ({@code ar4j_context*}), made by
 * {@link CustomAllReduceKernels#createContext}. Owned: {@link #close()} destroys it exactly once;
 * use after that throws {@link IllegalStateException}. Like the C context, it is used by one
 * thread at a time, except {@link #poison(int)} and {@link #readFailure()}, which a watchdog may
 * call from another thread while a call or a kernel runs (but not concurrently with
 * {@link #close()}: the caller keeps the context alive around them). A second thread inside
 * another method at the same time gets {@code AR4J_ERROR_CONCURRENT_USE}.
 */
public final class CustomArContext implements AutoCloseable {
    private final MemorySegment context;
    private final int rank;
    private final int worldSize;
    private final AtomicBoolean closed = new AtomicBoolean();

    CustomArContext(MemorySegment context, int rank, int worldSize) {
        this.context = context;
        this.rank = rank;
        this.worldSize = worldSize;
    }

    /** This rank. */
    public int rank() {
        return rank;
    }

    /** Number of ranks. */
    public int worldSize() {
        return worldSize;
    }

    /** The {@code ar4j_context*} as a zero-length segment. */
    public MemorySegment handle() {
        ensureOpen();
        return context;
    }

    /** False once closed. */
    public boolean isOpen() {
        return !closed.get();
    }

    /**
     * Overrides the launch geometry ({@code ar4j_set_launch_config}; defaults: one block per SM, at
     * most 128, of 512 threads). Every rank must call it with the same values (the group's agreed
     * geometry) before any rank's first all-reduce; the context publishes them in its signal block.
     *
     * @throws CustomArException {@code AR4J_ERROR_LAUNCH_CONFIG} for values out of range,
     *                           {@code AR4J_ERROR_ALREADY_LAUNCHED} after the first all-reduce or
     *                           {@link #checkGeometry()}
     */
    public void setLaunchConfig(int maxBlocks, int threads) {
        ensureOpen();
        check(custom_all_reduce_h.ar4j_set_launch_config(context, maxBlocks, threads),
                "ar4j_set_launch_config(" + maxBlocks + " blocks, " + threads + " threads)");
    }

    /**
     * Compares every peer's published launch geometry with this context's now
     * ({@code ar4j_check_geometry}); call it after every rank configured its context (a group
     * barrier). Otherwise the first all-reduce does it. Once answered, the answer stays.
     *
     * @throws CustomArException {@code AR4J_ERROR_GEOMETRY_MISMATCH} naming the peer and both
     *                           geometries (the group is then poisoned with {@code GEOMETRY})
     */
    public void checkGeometry() {
        ensureOpen();
        check(custom_all_reduce_h.ar4j_check_geometry(context), "ar4j_check_geometry");
    }

    /**
     * Programmatic dependent launch on or off for later launches, eager and captured
     * ({@code ar4j_set_pdl}; off by default). Takes effect only where {@link #pdlActive()} says so
     * (compute capability 9.0 or newer). Ranks need not agree.
     */
    public void setPdl(boolean enabled) {
        ensureOpen();
        check(custom_all_reduce_h.ar4j_set_pdl(context, enabled ? 1 : 0), "ar4j_set_pdl(" + enabled + ")");
    }

    /** Whether this context's launches use programmatic dependent launch ({@code ar4j_pdl_active}). */
    public boolean pdlActive() {
        ensureOpen();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.JAVA_INT);
            check(custom_all_reduce_h.ar4j_pdl_active(context, out), "ar4j_pdl_active");
            return out.get(ValueLayout.JAVA_INT, 0) != 0;
        }
    }

    /**
     * Poisons the group ({@code ar4j_poison}): writes a poison word naming this rank and
     * {@code reason} into this rank's and every peer's signal block (where none is set yet).
     * Running and later kernels of every rank then write NaN over their outputs and return, so
     * replays of captured graphs yield NaN; later calls on every context of the group fail with
     * {@code AR4J_ERROR_POISONED} (after their kernels saw it or {@link #readFailure()} read it).
     * Callable from any thread while kernels run: it copies a few words on a private stream and
     * waits only for those copies (0.2–0.4 ms measured on one H200). Idempotent; the first
     * poison stays.
     *
     * @param reason {@link CustomAllReduceKernels#POISON_ABORT}, {@link CustomAllReduceKernels#POISON_PEER_LOST}
     *               or another code in [1, 255]
     * @throws IllegalArgumentException unless {@code reason} is in [1, 255]
     */
    public void poison(int reason) {
        if (reason < 1 || reason > 255) {
            throw new IllegalArgumentException("poison reason must be in [1, 255], got " + reason);
        }
        ensureOpen();
        check(custom_all_reduce_h.ar4j_poison(context, reason),
                "ar4j_poison(" + CustomAllReduceKernels.poisonReasonName(reason) + ")");
    }

    /**
     * What is known of the group's failure ({@code ar4j_read_failure}): the poison word of this
     * rank's signal block (read on a private stream, never waiting for kernels), this rank's own
     * timeout record and a geometry mismatch. Callable from any thread at any time; a watchdog
     * polls it. Reading a poison marks the context failed: later calls fail fast.
     */
    public KernelFailure readFailure() {
        ensureOpen();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment info = ar4j_failure_info.allocate(arena);
            check(custom_all_reduce_h.ar4j_read_failure(context, info), "ar4j_read_failure");
            return KernelFailure.from(info);
        }
    }

    /**
     * TEST ONLY ({@code ar4j_debug_seed_push_generation}): sets the one-shot push generation of
     * every block to {@code generation}, as if that many push launches had completed. Every rank
     * must seed the same value before its first all-reduce.
     *
     * @throws CustomArException {@code AR4J_ERROR_ALREADY_LAUNCHED} after the first all-reduce
     */
    public void debugSeedPushGeneration(long generation) {
        ensureOpen();
        check(custom_all_reduce_h.ar4j_debug_seed_push_generation(context, generation),
                "ar4j_debug_seed_push_generation(" + Long.toUnsignedString(generation) + ")");
    }

    /**
     * Registers a buffer set ({@code ar4j_register_buffer}): {@code pointersPerRank[r]} is rank r's
     * buffer as addressable from this device; {@code bytes} is the local buffer's size.
     *
     * @throws IllegalArgumentException unless there is one pointer per rank
     */
    public void registerBuffer(long[] pointersPerRank, long bytes) {
        ensureOpen();
        Objects.requireNonNull(pointersPerRank, "pointersPerRank");
        if (pointersPerRank.length != worldSize) {
            throw new IllegalArgumentException("one pointer per rank: world size " + worldSize + ", got "
                    + pointersPerRank.length);
        }
        try (Arena arena = Arena.ofConfined()) {
            check(custom_all_reduce_h.ar4j_register_buffer(context,
                    CustomAllReduceKernels.pointerArray(arena, pointersPerRank), bytes),
                    "ar4j_register_buffer(" + bytes + " bytes)");
        }
    }

    /** Number of registered buffers, graph inputs included ({@code ar4j_registered_count}). */
    public int registeredCount() {
        ensureOpen();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.JAVA_INT);
            check(custom_all_reduce_h.ar4j_registered_count(context, out), "ar4j_registered_count");
            return out.get(ValueLayout.JAVA_INT, 0);
        }
    }

    /**
     * Enqueues a sum all-reduce of {@code count} elements from {@code in} to {@code out} (device
     * addresses; equal for in place) on {@code stream} (a {@code cudaStream_t}, 0 for the legacy
     * default stream) with the given algorithm ({@code ar4j_all_reduce}). Every rank must make the same
     * calls in the same order.
     *
     * @param algorithm {@link CustomAllReduceKernels#ALGO_ONE_STAGE}, {@link CustomAllReduceKernels#ALGO_TWO_STAGE}
     *                  or {@link CustomAllReduceKernels#ALGO_ONE_SHOT_PUSH}
     */
    public void allReduce(int algorithm, DType dtype, long in, long out, long count, long stream) {
        ensureOpen();
        Objects.requireNonNull(dtype, "dtype");
        int status = custom_all_reduce_h.ar4j_all_reduce(context, algorithm, dtype.kernelCode(),
                MemorySegment.ofAddress(in), MemorySegment.ofAddress(out), count, MemorySegment.ofAddress(stream));
        if (status != 0) {
            throw CustomAllReduceKernels.exception(status, "ar4j_all_reduce(algorithm " + algorithm + ", " + dtype
                    + ", count " + count + ")", cudaDetail(status));
        }
    }

    /** Number of graph inputs recorded during capture and not yet registered ({@code ar4j_graph_pending_count}). */
    public int graphPendingCount() {
        ensureOpen();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.JAVA_INT);
            check(custom_all_reduce_h.ar4j_graph_pending_count(context, out),
                    "ar4j_graph_pending_count");
            return out.get(ValueLayout.JAVA_INT, 0);
        }
    }

    /** The recorded graph inputs not yet registered, in capture order (local device addresses). */
    public long[] graphPendingInputs() {
        int n = graphPendingCount();
        long[] result = new long[n];
        if (n == 0) {
            return result;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS, n);
            check(custom_all_reduce_h.ar4j_graph_pending_inputs(context, out, n),
                    "ar4j_graph_pending_inputs(" + n + ")");
            for (int i = 0; i < n; i++) {
                result[i] = out.getAtIndex(ValueLayout.ADDRESS, i).address();
            }
            return result;
        }
    }

    /**
     * Registers the pending graph inputs ({@code ar4j_register_graph_inputs}): row i of
     * {@code pointers} ({@code pointers[i * worldSize + r]}) holds every rank's pointer for the i-th
     * recorded input.
     *
     * @throws IllegalArgumentException unless {@code pointers.length} is a multiple of the world size
     */
    public void registerGraphInputs(long[] pointers) {
        ensureOpen();
        Objects.requireNonNull(pointers, "pointers");
        if (pointers.length % worldSize != 0) {
            throw new IllegalArgumentException("graph input pointers come in rows of world size " + worldSize + "; got "
                    + pointers.length);
        }
        int n = pointers.length / worldSize;
        try (Arena arena = Arena.ofConfined()) {
            check(custom_all_reduce_h.ar4j_register_graph_inputs(context,
                    CustomAllReduceKernels.pointerArray(arena, pointers), n), "ar4j_register_graph_inputs(" + n + ")");
        }
    }

    /** Reads the kernels' timeout record ({@code ar4j_read_timeout}), clearing it if {@code clear}. */
    public KernelTimeout readTimeout(boolean clear) {
        ensureOpen();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment info = ar4j_timeout_info.allocate(arena);
            check(custom_all_reduce_h.ar4j_read_timeout(context, info, clear ? 1 : 0),
                    "ar4j_read_timeout");
            return new KernelTimeout(ar4j_timeout_info.timed_out(info) != 0, ar4j_timeout_info.peer(info),
                    ar4j_timeout_info.block(info), ar4j_timeout_info.barrier(info),
                    Integer.toUnsignedLong(ar4j_timeout_info.flag(info)));
        }
    }

    /** The {@code cudaError_t} of the last failed CUDA call this context made (0 if none; {@code ar4j_last_cuda_error}). */
    public int lastCudaError() {
        ensureOpen();
        return custom_all_reduce_h.ar4j_last_cuda_error(context);
    }

    private void check(int status, String call) {
        if (status != 0) {
            throw CustomAllReduceKernels.exception(status, call, cudaDetail(status));
        }
    }

    private String cudaDetail(int status) {
        if (status == CustomAllReduceKernels.STATUS_PEER_TIMEOUT || status == CustomAllReduceKernels.STATUS_POISONED
                || status == CustomAllReduceKernels.STATUS_GEOMETRY_MISMATCH) {
            return failureDetail();
        }
        if (status != custom_all_reduce_h.AR4J_ERROR_CUDA()) {
            return null;
        }
        int cuda = custom_all_reduce_h.ar4j_last_cuda_error(context);
        return "the CUDA error was " + CudaErrors.name(cuda) + " (" + cuda + "): " + CudaErrors.description(cuda);
    }

    /** The failure record as a sentence, for exception messages; never throws. */
    private String failureDetail() {
        if (context.address() == 0) {
            return null;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment info = ar4j_failure_info.allocate(arena);
            if (custom_all_reduce_h.ar4j_read_failure(context, info) != 0) {
                return null;
            }
            return KernelFailure.from(info).describe() + "; dispose the context and make a new group";
        }
    }

    private void ensureOpen() {
        if (closed.get()) {
            throw new IllegalStateException(this + " is closed");
        }
    }

    /** Destroys the context and what it allocated (once; {@code ar4j_context_destroy}). */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            CustomAllReduceKernels.check(custom_all_reduce_h.ar4j_context_destroy(context), "ar4j_context_destroy");
        }
    }

    @Override
    public String toString() {
        return "CustomArContext[rank " + rank + " of " + worldSize + "]";
    }
}
