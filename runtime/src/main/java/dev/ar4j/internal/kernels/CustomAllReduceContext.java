package dev.ar4j.internal.kernels;

import dev.ar4j.internal.cuda.CudaErrors;

import dev.ar4j.CustomAllReduceException;
import dev.ar4j.DType;
import dev.ar4j.bindings.customar.ar4j_failure_info;
import dev.ar4j.bindings.customar.ar4j_timeout_info;
import dev.ar4j.bindings.customar.custom_all_reduce_h;

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
public final class CustomAllReduceContext implements AutoCloseable {
    private final MemorySegment context;
    private final int rank;
    private final int worldSize;
    private final AtomicBoolean closed = new AtomicBoolean();

    CustomAllReduceContext(MemorySegment context, int rank, int worldSize) {
        this.context = context;
        this.rank = rank;
        this.worldSize = worldSize;
    }

    /**
     * This context's rank within its group, as given to {@link CustomAllReduceKernels#createContext}.
     *
     * @return the rank, in [0, {@link #worldSize()})
     */
    public int rank() {
        return rank;
    }

    /**
     * The number of ranks of this context's group, as given to {@link CustomAllReduceKernels#createContext}.
     *
     * @return the world size (2, 4, 6 or 8, the sizes the library accepts)
     */
    public int worldSize() {
        return worldSize;
    }

    /**
     * The native {@code ar4j_context*}, for calls this class does not wrap. The segment stays valid
     * only until {@link #close()}; never pass it to {@code ar4j_context_destroy} yourself.
     *
     * @return the context pointer as a zero-length segment
     * @throws IllegalStateException if this context is closed
     */
    public MemorySegment handle() {
        ensureOpen();
        return context;
    }

    /**
     * Whether {@link #close()} has not been called yet. Never throws.
     *
     * @return {@code true} until the first {@link #close()}, {@code false} after it
     */
    public boolean isOpen() {
        return !closed.get();
    }

    /**
     * Overrides the launch geometry ({@code ar4j_set_launch_config}; defaults: one block per SM, at
     * most 128, of 512 threads). Every rank must call it with the same values (the group's agreed
     * geometry) before any rank's first all-reduce; the context publishes them in its signal block.
     *
     * @param maxBlocks the most CUDA blocks of a one- or two-stage launch, 1 to
     *                  {@link CustomAllReduceKernels#MAX_BLOCKS}
     * @param threads   threads per block, a multiple of 32 from 32 to {@link CustomAllReduceKernels#MAX_THREADS}
     * @throws IllegalStateException if this context is closed
     * @throws CustomAllReduceException {@code AR4J_ERROR_LAUNCH_CONFIG} for values out of range,
     *                           {@code AR4J_ERROR_ALREADY_LAUNCHED} after the first all-reduce or
     *                           {@link #checkGeometry()}, {@code AR4J_ERROR_CONCURRENT_USE} while
     *                           another thread is inside a call, {@code AR4J_ERROR_CUDA} if publishing
     *                           the geometry fails
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
     * @throws CustomAllReduceException {@code AR4J_ERROR_GEOMETRY_MISMATCH} naming the peer and both
     *                           geometries (the group is then poisoned with {@code GEOMETRY});
     *                           {@code AR4J_ERROR_CONCURRENT_USE} while another thread is inside a call,
     *                           {@code AR4J_ERROR_CUDA} if reading the peers' signal blocks fails
     * @throws IllegalStateException if this context is closed
     */
    public void checkGeometry() {
        ensureOpen();
        check(custom_all_reduce_h.ar4j_check_geometry(context), "ar4j_check_geometry");
    }

    /**
     * Programmatic dependent launch on or off for later launches, eager and captured
     * ({@code ar4j_set_pdl}; off by default). Takes effect only where {@link #pdlActive()} says so
     * (compute capability 9.0 or newer, kernels built for it); accepted on every device. Ranks need
     * not agree.
     *
     * @param enabled {@code true} to let each later kernel start while the previous kernel of its
     *                stream is finishing, {@code false} (the default) to launch them plainly
     * @throws IllegalStateException if this context is closed
     * @throws CustomAllReduceException     {@code AR4J_ERROR_CONCURRENT_USE} while another thread is inside a call
     */
    public void setPdl(boolean enabled) {
        ensureOpen();
        check(custom_all_reduce_h.ar4j_set_pdl(context, enabled ? 1 : 0), "ar4j_set_pdl(" + enabled + ")");
    }

    /**
     * Sets the kernel variants ({@code ar4j_set_variants}; {@link KernelVariants} flags, 0 = the
     * default kernels). Like {@link #setLaunchConfig}: on every rank, with the same flags except
     * {@link KernelVariants#PUSH_EARLY_TRIGGER} (each rank's own), before any rank's first call; a
     * difference is refused at the first call with {@code AR4J_ERROR_GEOMETRY_MISMATCH}.
     *
     * @param flags the variants
     * @throws IllegalArgumentException for a flag outside {@link KernelVariants#ALL} (checked first)
     * @throws IllegalStateException if this context is closed
     * @throws CustomAllReduceException     {@code AR4J_ERROR_ALREADY_LAUNCHED} after the first call or geometry
     *                               check, {@code AR4J_ERROR_CONCURRENT_USE} while another thread is inside a call
     */
    public void setVariants(int flags) {
        if ((flags & ~KernelVariants.ALL) != 0) {
            throw new IllegalArgumentException("kernel variant flags 0x" + Integer.toHexString(flags)
                    + " name an unknown variant; accepted: bits of 0x" + Integer.toHexString(KernelVariants.ALL));
        }
        ensureOpen();
        check(custom_all_reduce_h.ar4j_set_variants(context, flags), "ar4j_set_variants(" + flags + ")");
    }

    /**
     * The kernel variants in effect now ({@code ar4j_variants_active}): those set, less the early
     * trigger unless the geometry check found that no rank shares this rank's GPU.
     *
     * @return the {@link KernelVariants} flags in effect
     * @throws IllegalStateException if this context is closed
     * @throws CustomAllReduceException     for a status the library returns
     */
    public int variantsActive() {
        ensureOpen();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.JAVA_INT);
            check(custom_all_reduce_h.ar4j_variants_active(context, out), "ar4j_variants_active");
            return out.get(ValueLayout.JAVA_INT, 0);
        }
    }

    /**
     * Whether this context's launches use programmatic dependent launch ({@code ar4j_pdl_active}):
     * {@link #setPdl(boolean) requested} and supported by the device and the built kernels.
     *
     * @return {@code true} if later launches use programmatic dependent launch
     * @throws IllegalStateException if this context is closed
     * @throws CustomAllReduceException     for a status the library returns
     */
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
     * waits only for those copies, never for the kernels. Idempotent; the first
     * poison stays.
     *
     * @param reason {@link CustomAllReduceKernels#POISON_ABORT}, {@link CustomAllReduceKernels#POISON_PEER_LOST}
     *               or another code in [1, 255]
     * @throws IllegalArgumentException unless {@code reason} is in [1, 255] (checked before anything else)
     * @throws IllegalStateException    if this context is closed
     * @throws CustomAllReduceException        {@code AR4J_ERROR_CUDA} if the copies to the signal blocks fail
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
     *
     * @return the failure record; all its fields zero or -1 ({@link KernelFailure#failed()} false)
     *         while the group is healthy
     * @throws IllegalStateException if this context is closed
     * @throws CustomAllReduceException     {@code AR4J_ERROR_CUDA} if reading the signal block fails
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
     * TEST ONLY ({@code ar4j_debug_seed_push_generation}): sets the push generation of
     * every block to {@code generation}, as if that many push launches had completed. Every rank
     * must seed the same value before its first all-reduce. Lets a test cross 2^32 push launches
     * without making them.
     *
     * @param generation the generation to start from, read as an unsigned 64-bit value
     * @throws IllegalStateException if this context is closed
     * @throws CustomAllReduceException     {@code AR4J_ERROR_ALREADY_LAUNCHED} after the first all-reduce,
     *                               {@code AR4J_ERROR_CONCURRENT_USE} while another thread is inside a call,
     *                               {@code AR4J_ERROR_CUDA} if writing the counters fails
     */
    public void debugSeedPushGeneration(long generation) {
        ensureOpen();
        check(custom_all_reduce_h.ar4j_debug_seed_push_generation(context, generation),
                "ar4j_debug_seed_push_generation(" + Long.toUnsignedString(generation) + ")");
    }

    /**
     * Registers a buffer set ({@code ar4j_register_buffer}): {@code pointersPerRank[r]} is rank r's
     * buffer as addressable from this device. Inputs anywhere inside the local buffer are then
     * reduced by the one- and two-stage algorithms without copies, at the same offset on every rank.
     *
     * @param pointersPerRank one device address per rank, {@code pointersPerRank[rank()]} the local
     *                        buffer; each non-zero and 16-byte aligned
     * @param bytes           the local buffer's size in bytes, greater than 0; every rank's buffer must
     *                        be at least that large
     * @throws NullPointerException     if {@code pointersPerRank} is null
     * @throws IllegalArgumentException unless there is one pointer per rank
     * @throws IllegalStateException    if this context is closed
     * @throws CustomAllReduceException        {@code AR4J_ERROR_NULL_POINTER} or {@code AR4J_ERROR_MISALIGNED}
     *                                  for a bad pointer, {@code AR4J_ERROR_EMPTY} for 0 bytes,
     *                                  {@code AR4J_ERROR_ALREADY_REGISTERED} if the buffer overlaps a
     *                                  registered one, {@code AR4J_ERROR_CAPACITY} when the table is full
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

    /**
     * Frees the registration slot of the buffer registered with local pointer {@code local}
     * ({@code ar4j_unregister_buffer}; {@code pointersPerRank[rank()]} of {@link #registerBuffer},
     * exactly). Launches that read the buffer must have completed: one that reads the freed slot
     * poisons the group ({@code AR4J_POISON_UNREGISTERED}).
     *
     * @param local the local buffer's device address as registered
     * @return {@code true} if the slot was freed; {@code false} while a CUDA graph captured with an
     *         input in the buffer still exists ({@code AR4J_ERROR_SLOT_IN_USE}: destroy it and retry)
     * @throws IllegalStateException if this context is closed
     * @throws CustomAllReduceException     {@code AR4J_ERROR_NOT_REGISTERED} if no registration starts at
     *                               {@code local}, or another status the library returns
     */
    public boolean unregisterBuffer(long local) {
        ensureOpen();
        int status = custom_all_reduce_h.ar4j_unregister_buffer(context, MemorySegment.ofAddress(local));
        if (status == CustomAllReduceKernels.STATUS_SLOT_IN_USE) {
            return false;
        }
        check(status, String.format("ar4j_unregister_buffer(0x%x)", local));
        return true;
    }

    /**
     * The number of registration-table slots in use ({@code ar4j_registered_count}).
     *
     * @return registered buffers plus recorded graph inputs, at most the {@code maxBuffers} given at
     *         creation
     * @throws IllegalStateException if this context is closed
     * @throws CustomAllReduceException     for a status the library returns
     */
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
     * calls in the same order, and the context's launches must not overlap on the device (one
     * stream at a time, or streams ordered by events). During graph capture, a one- or two-stage
     * input outside registered buffers is recorded as a graph input (see {@link #graphPendingInputs()}).
     *
     * @param algorithm {@link CustomAllReduceKernels#ALGO_ONE_STAGE}, {@link CustomAllReduceKernels#ALGO_TWO_STAGE}
     *                  or {@link CustomAllReduceKernels#ALGO_PUSH}
     * @param dtype     the element type of {@code in} and {@code out}
     * @param in        device address of this rank's input, 16-byte aligned; for the one- and
     *                  two-stage algorithms inside a {@link #registerBuffer registered} buffer (unless
     *                  capturing), for the push algorithm any address of this context's device
     * @param out       device address of the result, 16-byte aligned; may equal {@code in}
     * @param count     number of elements, at least 1, {@code count * dtype size} a multiple of 16;
     *                  at most {@link CustomAllReduceKernels#PUSH_MAX_BYTES} bytes for the push
     *                  algorithm; for the others within the registered buffer, and for the two-stage
     *                  one at most the {@code maxBytes} the context was created with
     * @param stream    a {@code cudaStream_t} handle; 0 is the legacy default stream
     * @throws NullPointerException  if {@code dtype} is null
     * @throws IllegalStateException if this context is closed
     * @throws CustomAllReduceException     for the status the library returns, e.g. {@code AR4J_ERROR_NOT_REGISTERED},
     *                               {@code AR4J_ERROR_TOO_LARGE}, {@code AR4J_ERROR_PEER_TIMEOUT} or
     *                               {@code AR4J_ERROR_POISONED} (then the message includes the failure record)
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
     * per row, fp32 arithmetic. Bitwise the same as {@link #allReduce} with the same algorithm followed
     * by {@link ResidualRmsNorm#launch}, and the same on every rank (give every rank the same residual
     * and weight). Device addresses of this context's device; every rank must make the same calls in
     * the same order; graph capture and PDL as for {@link #allReduce}. On a poisoned or failed launch,
     * {@code out} and {@code residualOut} are NaN.
     *
     * <p>{@link CustomAllReduceKernels#ALGO_PUSH}: any input of this device, at most
     * {@link CustomAllReduceKernels#PUSH_MAX_BYTES}; {@code out} may equal {@code in}.
     * {@link CustomAllReduceKernels#ALGO_ONE_STAGE}: the input lies in a {@link #registerBuffer registered}
     * buffer (or is recorded as a graph input while capturing, as for {@link #allReduce}), and the call
     * fits in the registration; the peers read it during the whole launch, so neither output may
     * overlap it at all (copy the input into a registered buffer first for an in-place call).
     *
     * @param algorithm   {@link CustomAllReduceKernels#ALGO_PUSH} or {@link CustomAllReduceKernels#ALGO_ONE_STAGE},
     *                    the algorithms with a fused kernel
     * @param dtype       the element type of every buffer
     * @param in          {@code rows * hidden} elements, this rank's addend; may equal {@code out} (push only)
     * @param residual    {@code rows * hidden} elements; may equal {@code residualOut}
     * @param weight      {@code hidden} elements
     * @param out         {@code rows * hidden} elements; overlaps no other argument unless it equals {@code in} (push)
     * @param residualOut {@code rows * hidden} elements; may equal {@code residual} (or {@code in}, push only),
     *                    overlaps nothing else
     * @param rows        at least 1; push: {@code rows * hidden * dtype size} at most
     *                    {@link CustomAllReduceKernels#PUSH_MAX_BYTES}; one-stage: within the registered buffer
     * @param hidden      1 to {@link CustomAllReduceKernels#FUSED_MAX_HIDDEN}, {@code hidden * dtype size} a multiple of 16
     * @param eps         finite and greater than 0
     * @param stream      a {@code cudaStream_t} handle; 0 is the legacy default stream
     * @throws NullPointerException     if {@code dtype} is null
     * @throws IllegalArgumentException for an argument outside the rules above (also a 0 or not 16-byte
     *                                  aligned address, or {@link CustomAllReduceKernels#ALGO_TWO_STAGE}, which
     *                                  has no fused kernel), before any native call
     * @throws IllegalStateException    if this context is closed
     * @throws CustomAllReduceException        for a status the native side returns (e.g. {@code AR4J_ERROR_POISONED},
     *                                  or for one-stage {@code AR4J_ERROR_NOT_REGISTERED} and {@code AR4J_ERROR_TOO_LARGE})
     */
    public void allReduceResidualRmsNorm(int algorithm, DType dtype, long in, long residual, long weight, long out,
                                         long residualOut, long rows, int hidden, float eps, long stream) {
        FusedArguments.check(algorithm, dtype, in, residual, weight, out, residualOut, rows, hidden, eps);
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

    /**
     * The number of graph inputs recorded during capture and not yet registered
     * ({@code ar4j_graph_pending_count}).
     *
     * @return 0 or more; {@link #registerGraphInputs} must supply that many rows before the graph is replayed
     * @throws IllegalStateException if this context is closed
     * @throws CustomAllReduceException     for a status the library returns
     */
    public int graphPendingCount() {
        ensureOpen();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.JAVA_INT);
            check(custom_all_reduce_h.ar4j_graph_pending_count(context, out),
                    "ar4j_graph_pending_count");
            return out.get(ValueLayout.JAVA_INT, 0);
        }
    }

    /**
     * The graph inputs recorded during capture and not yet registered ({@code ar4j_graph_pending_inputs}).
     * Exchange them with the peers to build the argument of {@link #registerGraphInputs}.
     *
     * @return this rank's device addresses of the pending inputs, in capture order; empty if none
     * @throws IllegalStateException if this context is closed
     * @throws CustomAllReduceException     for a status the library returns
     */
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
     * recorded input. Clears the pending list.
     *
     * @param pointers {@link #graphPendingCount()} rows of {@link #worldSize()} device addresses, each
     *                 non-zero and 16-byte aligned; row i's entry for this rank must be the i-th
     *                 address {@link #graphPendingInputs()} returns
     * @throws NullPointerException     if {@code pointers} is null
     * @throws IllegalArgumentException unless {@code pointers.length} is a multiple of the world size
     * @throws IllegalStateException    if this context is closed
     * @throws CustomAllReduceException        {@code AR4J_ERROR_GRAPH_COUNT} unless there is one row per pending
     *                                  input, {@code AR4J_ERROR_NULL_POINTER} or {@code AR4J_ERROR_MISALIGNED}
     *                                  for a bad pointer, {@code AR4J_ERROR_INVALID_ARGUMENT} if a row's
     *                                  own entry is not the recorded input
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

    /**
     * Reads the kernels' timeout record ({@code ar4j_read_timeout}). A context whose kernels timed out
     * stays failed even after a clear: dispose it and make a new group. {@link #readFailure()}
     * reports the same record and more.
     *
     * @param clear {@code true} to reset the record after reading it
     * @return the record; {@link KernelTimeout#timedOut()} is false if no wait gave up since the last clear
     * @throws IllegalStateException if this context is closed
     * @throws CustomAllReduceException     for a status the library returns
     */
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

    /**
     * The CUDA error behind the last {@code AR4J_ERROR_CUDA} of this context ({@code ar4j_last_cuda_error}).
     *
     * @return the {@code cudaError_t} of the last failed CUDA call this context made, 0 if none
     * @throws IllegalStateException if this context is closed
     */
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

    /**
     * Destroys the context and what it allocated ({@code ar4j_context_destroy}); later calls do nothing.
     * Not concurrently with {@link #poison(int)} or {@link #readFailure()}.
     *
     * @throws CustomAllReduceException if the library reports a failure while destroying
     */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            CustomAllReduceKernels.check(custom_all_reduce_h.ar4j_context_destroy(context), "ar4j_context_destroy");
        }
    }

    @Override
    public String toString() {
        return "CustomAllReduceContext[rank " + rank + " of " + worldSize + "]";
    }
}
