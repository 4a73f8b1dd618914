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

    /**
     * Enqueues the fused all-reduce (sum) + residual add + RMSNorm over {@code rows} rows of
     * {@code hidden} elements ({@code ar4j_all_reduce_residual_rmsnorm}) on {@code stream}:
     * {@code residualOut = allreduce(in) + residual} (the sum rounded to the dtype, then one fp32 add
     * rounded to the dtype) and {@code out = residualOut * rsqrt(mean(residualOut^2) + eps) * weight}
     * per row, fp32 arithmetic. Bitwise the same as {@link #allReduce} with
     * {@link CustomAllReduceKernels#ALGO_ONE_SHOT_PUSH} followed by {@link ResidualRmsNorm#launch}, and
     * the same on every rank (give every rank the same residual and weight). Device addresses of this
     * context's device; every rank must make the same calls in the same order; graph capture and PDL as
     * for {@link #allReduce}. On a poisoned or failed launch, {@code out} and {@code residualOut} are NaN.
     *
     * @param algorithm   {@link CustomAllReduceKernels#ALGO_ONE_SHOT_PUSH}, the one algorithm with a fused kernel
     * @param in          {@code rows * hidden} elements, this rank's addend; may equal {@code out}
     * @param residual    {@code rows * hidden} elements; may equal {@code residualOut}
     * @param weight      {@code hidden} elements
     * @param out         {@code rows * hidden} elements; overlaps no other argument unless it equals {@code in}
     * @param residualOut {@code rows * hidden} elements; may equal {@code residual} or {@code in}, overlaps nothing else
     * @param rows        at least 1; {@code rows * hidden * dtype size} at most {@link CustomAllReduceKernels#PUSH_MAX_BYTES}
     * @param hidden      1 to {@link CustomAllReduceKernels#FUSED_MAX_HIDDEN}, {@code hidden * dtype size} a multiple of 16
     * @param eps         finite and greater than 0
     * @param stream      a {@code cudaStream_t} handle; 0 is the legacy default stream
     * @throws IllegalArgumentException for an argument outside the rules above, before any native call
     * @throws CustomArException        for a status the native side returns (e.g. {@code AR4J_ERROR_POISONED})
     */
    public void allReduceResidualRmsNorm(int algorithm, DType dtype, long in, long residual, long weight, long out,
                                         long residualOut, long rows, int hidden, float eps, long stream) {
        checkFusedArguments(algorithm, dtype, in, residual, weight, out, residualOut, rows, hidden, eps);
        ensureOpen();
        int status = custom_all_reduce_h.ar4j_all_reduce_residual_rmsnorm(context, algorithm, dtype.kernelCode(),
                MemorySegment.ofAddress(in), MemorySegment.ofAddress(residual), MemorySegment.ofAddress(weight),
                MemorySegment.ofAddress(out), MemorySegment.ofAddress(residualOut), rows, hidden, eps,
                MemorySegment.ofAddress(stream));
        if (status != 0) {
            throw CustomAllReduceKernels.exception(status, "ar4j_all_reduce_residual_rmsnorm(algorithm " + algorithm
                    + ", " + dtype + ", rows " + rows + ", hidden " + hidden + ")", cudaDetail(status));
        }
    }

    /** The argument rules of {@link #allReduceResidualRmsNorm}, checked without any native call. */
    static void checkFusedArguments(int algorithm, DType dtype, long in, long residual, long weight, long out,
                                    long residualOut, long rows, int hidden, float eps) {
        Objects.requireNonNull(dtype, "dtype");
        if (algorithm != CustomAllReduceKernels.ALGO_ONE_SHOT_PUSH) {
            throw new IllegalArgumentException("algorithm " + algorithm + " has no fused all-reduce + residual + RMSNorm "
                    + "kernel; only ALGO_ONE_SHOT_PUSH (" + CustomAllReduceKernels.ALGO_ONE_SHOT_PUSH + ") has one (call "
                    + "allReduce, then ResidualRmsNorm.launch, for the others)");
        }
        if (hidden < 1 || hidden > CustomAllReduceKernels.FUSED_MAX_HIDDEN) {
            throw new IllegalArgumentException("hidden must be 1 to " + CustomAllReduceKernels.FUSED_MAX_HIDDEN
                    + " elements, got " + hidden);
        }
        long rowBytes = (long) hidden * dtype.byteSize();
        if (rowBytes % 16 != 0) {
            throw new IllegalArgumentException("hidden * element size must be a multiple of 16 bytes for the fused "
                    + "kernel; " + hidden + " " + dtype + " elements are " + rowBytes + " bytes");
        }
        long maxRows = CustomAllReduceKernels.PUSH_MAX_BYTES / rowBytes;
        if (rows < 1 || rows > maxRows) {
            throw new IllegalArgumentException("rows must be 1 to " + maxRows + " (rows * hidden * element size at most "
                    + CustomAllReduceKernels.PUSH_MAX_BYTES + " bytes, the push limit, with " + rowBytes
                    + " bytes a row), got " + rows);
        }
        if (!(eps > 0f) || !Float.isFinite(eps)) {
            throw new IllegalArgumentException("eps must be finite and greater than 0, got " + eps);
        }
        long[] addresses = {in, residual, weight, out, residualOut};
        String[] names = {"in", "residual", "weight", "out", "residualOut"};
        for (int i = 0; i < addresses.length; i++) {
            if (addresses[i] == 0) {
                throw new IllegalArgumentException(names[i] + " must not be 0 (a device address)");
            }
            if ((addresses[i] & 15) != 0) {
                throw new IllegalArgumentException(names[i] + " must be 16-byte aligned, got 0x"
                        + Long.toHexString(addresses[i]));
            }
        }
        long bytes = rows * rowBytes;
        if (overlaps(out, bytes, residualOut, bytes)) {
            throw new IllegalArgumentException("out and residualOut overlap");
        }
        if (out != in && overlaps(out, bytes, in, bytes)) {
            throw new IllegalArgumentException("out overlaps in without being equal to it (in place is out == in)");
        }
        if (overlaps(out, bytes, residual, bytes)) {
            throw new IllegalArgumentException("out overlaps residual (the kernel reads residual after writing out "
                    + "elsewhere); out may be in, residualOut may be residual or in");
        }
        if (residualOut != residual && overlaps(residualOut, bytes, residual, bytes)) {
            throw new IllegalArgumentException("residualOut overlaps residual without being equal to it");
        }
        if (residualOut != in && overlaps(residualOut, bytes, in, bytes)) {
            throw new IllegalArgumentException("residualOut overlaps in without being equal to it");
        }
        if (overlaps(weight, rowBytes, out, bytes) || overlaps(weight, rowBytes, residualOut, bytes)) {
            throw new IllegalArgumentException("weight overlaps out or residualOut (every row reads weight)");
        }
    }

    private static boolean overlaps(long a, long aBytes, long b, long bBytes) {
        return Long.compareUnsigned(a, b + bBytes) < 0 && Long.compareUnsigned(b, a + aBytes) < 0;
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
