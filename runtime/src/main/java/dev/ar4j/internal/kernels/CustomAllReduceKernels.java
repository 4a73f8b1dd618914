package dev.ar4j.internal.kernels;

import dev.ar4j.internal.cuda.CudaErrors;

import dev.ar4j.CustomAllReduceException;
import dev.ar4j.bindings.customar.custom_all_reduce_h;
import dev.ar4j.internal.platform.NativeLibraries;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Objects;

/**
 * The Java face of {@code libar4j_custom_ar}'s C ABI ({@code ar4j/custom_all_reduce.h}): every
 * non-zero status becomes a {@link CustomAllReduceException} with the status's name and message. Mechanism
 * only: callers choose the algorithm and pass it in; nothing here decides.
 *
 * <p>Loads libcudart and the kernels library (extracted from the {@code ar4j-cuda} jar) on the first
 * call that needs them; {@link #poisonReasonName(int)} and the constants need neither. A library that
 * cannot be loaded fails that call with {@link dev.ar4j.NativeLibraryException}.
 */
public final class CustomAllReduceKernels {
    /** {@code AR4J_ALGO_ONE_STAGE}: every rank reads every peer's input and reduces all of it. */
    public static final int ALGO_ONE_STAGE = custom_all_reduce_h.AR4J_ALGO_ONE_STAGE();
    /** {@code AR4J_ALGO_TWO_STAGE}: reduce-scatter into the signal scratch, then all-gather. */
    public static final int ALGO_TWO_STAGE = custom_all_reduce_h.AR4J_ALGO_TWO_STAGE();
    /**
     * {@code AR4J_ALGO_PUSH}: each rank stores its input into every peer's push buffer and
     * readers poll for the data; any local input, no registration; up to {@link #PUSH_MAX_BYTES}.
     */
    public static final int ALGO_PUSH = custom_all_reduce_h.AR4J_ALGO_PUSH();
    /** {@code AR4J_PUSH_MAX_BYTES}: the largest push call in bytes. */
    public static final int PUSH_MAX_BYTES = custom_all_reduce_h.AR4J_PUSH_MAX_BYTES();
    /** {@code AR4J_ERROR_PEER_TIMEOUT}: a kernel gave up waiting for a peer; the context is failed. */
    public static final int STATUS_PEER_TIMEOUT = custom_all_reduce_h.AR4J_ERROR_PEER_TIMEOUT();
    /** {@code AR4J_ERROR_GEOMETRY_MISMATCH}: a peer publishes another launch geometry (or none). */
    public static final int STATUS_GEOMETRY_MISMATCH = custom_all_reduce_h.AR4J_ERROR_GEOMETRY_MISMATCH();
    /** {@code AR4J_ERROR_POISONED}: the group is poisoned; see {@link CustomAllReduceContext#readFailure()}. */
    public static final int STATUS_POISONED = custom_all_reduce_h.AR4J_ERROR_POISONED();
    /** {@code AR4J_ERROR_CONCURRENT_USE}: another host thread is inside a call on the context. */
    public static final int STATUS_CONCURRENT_USE = custom_all_reduce_h.AR4J_ERROR_CONCURRENT_USE();
    /** {@code AR4J_ERROR_ALREADY_LAUNCHED}: geometry or debug seed after the context's first all-reduce. */
    public static final int STATUS_ALREADY_LAUNCHED = custom_all_reduce_h.AR4J_ERROR_ALREADY_LAUNCHED();
    /** {@code AR4J_ERROR_NOT_FUSED}: the algorithm (two-stage) has no fused all-reduce + residual + RMSNorm kernel. */
    public static final int STATUS_NOT_FUSED = custom_all_reduce_h.AR4J_ERROR_NOT_FUSED();
    /** {@code AR4J_ERROR_HIDDEN_TOO_LARGE}: hidden exceeds {@link #FUSED_MAX_HIDDEN}. */
    public static final int STATUS_HIDDEN_TOO_LARGE = custom_all_reduce_h.AR4J_ERROR_HIDDEN_TOO_LARGE();
    /** {@code AR4J_ERROR_ROW_NOT_MULTIPLE_OF_16}: a row of the fused call is not a multiple of 16 bytes. */
    public static final int STATUS_ROW_NOT_MULTIPLE_OF_16 = custom_all_reduce_h.AR4J_ERROR_ROW_NOT_MULTIPLE_OF_16();
    /** {@code AR4J_ERROR_NOT_REGISTERED}: no registration starts at the pointer given to {@code ar4j_unregister_buffer}. */
    public static final int STATUS_NOT_REGISTERED = custom_all_reduce_h.AR4J_ERROR_NOT_REGISTERED();
    /** {@code AR4J_ERROR_SLOT_IN_USE}: a captured CUDA graph still names the buffer to unregister. */
    public static final int STATUS_SLOT_IN_USE = custom_all_reduce_h.AR4J_ERROR_SLOT_IN_USE();
    /** {@code AR4J_FUSED_MAX_HIDDEN}: the largest row (elements) of the fused all-reduce + residual + RMSNorm. */
    public static final int FUSED_MAX_HIDDEN = custom_all_reduce_h.AR4J_FUSED_MAX_HIDDEN();

    /** {@code AR4J_POISON_TIMEOUT}: a kernel of the origin rank gave up waiting for a peer (set by kernels). */
    public static final int POISON_TIMEOUT = custom_all_reduce_h.AR4J_POISON_TIMEOUT();
    /** {@code AR4J_POISON_ABORT}: the origin rank's host aborted the group. */
    public static final int POISON_ABORT = custom_all_reduce_h.AR4J_POISON_ABORT();
    /** {@code AR4J_POISON_PEER_LOST}: the origin rank's host learnt that a peer is gone. */
    public static final int POISON_PEER_LOST = custom_all_reduce_h.AR4J_POISON_PEER_LOST();
    /** {@code AR4J_POISON_CONCURRENT_USE}: two launches of one context overlapped (set by kernels). */
    public static final int POISON_CONCURRENT_USE = custom_all_reduce_h.AR4J_POISON_CONCURRENT_USE();
    /** {@code AR4J_POISON_GEOMETRY}: the origin rank found a peer with another launch geometry. */
    public static final int POISON_GEOMETRY = custom_all_reduce_h.AR4J_POISON_GEOMETRY();
    /**
     * {@code AR4J_POISON_UNREGISTERED}: a kernel of the origin rank ran a captured graph input whose
     * pointers were never registered (a replay before {@code ar4j_register_graph_inputs}; set by kernels).
     */
    public static final int POISON_UNREGISTERED = custom_all_reduce_h.AR4J_POISON_UNREGISTERED();

    /** {@code AR4J_MAX_RANKS}: the largest world size the signal layout supports. */
    public static final int MAX_RANKS = custom_all_reduce_h.AR4J_MAX_RANKS();
    /** {@code AR4J_MAX_BLOCKS}: the most CUDA blocks per launch. */
    public static final int MAX_BLOCKS = custom_all_reduce_h.AR4J_MAX_BLOCKS();
    /** {@code AR4J_MAX_THREADS}: the most threads per block. */
    public static final int MAX_THREADS = custom_all_reduce_h.AR4J_MAX_THREADS();

    private CustomAllReduceKernels() {
    }

    static void ensureLoaded() {
        NativeLibraries.customAllReduce();
    }

    /** Throws unless {@code status} is {@code AR4J_SUCCESS}. */
    static void check(int status, String call) {
        if (status != 0) {
            throw exception(status, call, null);
        }
    }

    static CustomAllReduceException exception(int status, String call, String detail) {
        return new CustomAllReduceException(call, status, statusName(status), statusMessage(status), detail);
    }

    /**
     * The ABI version these bindings were generated for, in the encoding of {@link #abiVersion()}
     * (0.3.0: poison, geometry, PDL; 0.4.0: the fused all-reduce + residual + RMSNorm; 0.5.0: also for the
     * one-stage algorithm; 0.6.0: buffer unregistration, status 27, a new signal block layout; 0.7.0:
     * the kernel variants, {@code ar4j_set_variants}, device identity and variants word in the signal block;
     * 0.8.0: {@code ar4j_residual_rmsnorm_ex} with programmatic dependent launch, {@code ar4j_rmsnorm_pdl_capable}).
     */
    public static final int EXPECTED_ABI_VERSION = 800;

    /**
     * The name of a poison reason: {@code "TIMEOUT"}, {@code "ABORT"}, {@code "PEER_LOST"},
     * {@code "CONCURRENT_USE"}, {@code "GEOMETRY"}, {@code "UNREGISTERED"}, {@code "NONE"} for 0, {@code "REASON_<n>"} for
     * a caller's own code. Needs no native library.
     *
     * @param reason a poison reason, {@code AR4J_POISON_*} or a caller's own code; any value is accepted
     * @return the reason's name, never null
     */
    public static String poisonReasonName(int reason) {
        return switch (reason) {
            case 0 -> "NONE";
            case 1 -> "TIMEOUT";
            case 2 -> "ABORT";
            case 3 -> "PEER_LOST";
            case 4 -> "CONCURRENT_USE";
            case 5 -> "GEOMETRY";
            case 6 -> "UNREGISTERED";
            default -> "REASON_" + reason;
        };
    }

    /**
     * The loaded library's ABI version ({@code ar4j_abi_version}); compare it with
     * {@link #EXPECTED_ABI_VERSION}.
     *
     * @return {@code major * 10000 + minor * 100 + patch}, e.g. 400 for 0.4.0
     * @throws dev.ar4j.NativeLibraryException if libcudart or the kernels library cannot be loaded
     */
    public static int abiVersion() {
        ensureLoaded();
        return custom_all_reduce_h.ar4j_abi_version();
    }

    /**
     * The name of a status code as the library gives it ({@code ar4j_status_name}); see
     * {@link CustomAllReduceException#nameOf(int)} for the same without the native library.
     *
     * @param status an {@code ar4j_status} code; any value is accepted
     * @return e.g. {@code "AR4J_ERROR_RANK"}; {@code "AR4J_UNKNOWN_STATUS"} for unknown codes
     * @throws dev.ar4j.NativeLibraryException if libcudart or the kernels library cannot be loaded
     */
    public static String statusName(int status) {
        ensureLoaded();
        return cString(custom_all_reduce_h.ar4j_status_name(status));
    }

    /**
     * One sentence describing a status code ({@code ar4j_status_message}).
     *
     * @param status an {@code ar4j_status} code; any value is accepted
     * @return the library's sentence, never null
     * @throws dev.ar4j.NativeLibraryException if libcudart or the kernels library cannot be loaded
     */
    public static String statusMessage(int status) {
        ensureLoaded();
        return cString(custom_all_reduce_h.ar4j_status_message(status));
    }

    /**
     * The size of one rank's signal block ({@code ar4j_signal_size}): control block, two-stage scratch
     * and the push buffers. Allocate every rank's block with this size and zero-fill it
     * before {@link #createContext}.
     *
     * @param maxBytes the largest two-stage call in bytes, at least 0; pass the same value to
     *                 {@link #createContext}
     * @return the signal block's size in bytes
     * @throws IllegalArgumentException if {@code maxBytes} is negative
     * @throws dev.ar4j.NativeLibraryException if libcudart or the kernels library cannot be loaded
     */
    public static long signalSize(long maxBytes) {
        if (maxBytes < 0) {
            throw new IllegalArgumentException("maxBytes must be >= 0, got " + maxBytes);
        }
        ensureLoaded();
        return custom_all_reduce_h.ar4j_signal_size(maxBytes);
    }

    /**
     * Creates this rank's context on the calling thread's current device ({@code ar4j_context_create}).
     * Every rank must have created its context before any rank's first all-reduce: creation fills
     * this rank's push buffers.
     *
     * @param signals       one device pointer per rank: {@code signals[r]} is rank r's signal block as
     *                      addressable from this device ({@code signals[rank]} is this rank's own), each
     *                      zero-filled, of {@link #signalSize(long) signalSize(maxBytes)} bytes
     * @param rank          this rank, in [0, {@code worldSize})
     * @param worldSize     number of ranks, 2, 4, 6 or 8 (at most {@link #MAX_RANKS}); must equal
     *                      {@code signals.length}
     * @param maxBytes      the largest two-stage call in bytes, greater than 0 and a multiple of 16; the value the signal
     *                      blocks were sized for with {@link #signalSize(long)}
     * @param maxBuffers    capacity of the registration table (buffers plus graph inputs), at least 1
     * @param deadlineNanos how long a kernel waits for a peer before giving up, greater than 0
     * @return the new context, open; the caller owns it and must {@link CustomAllReduceContext#close() close} it
     * @throws NullPointerException     if {@code signals} is null
     * @throws IllegalArgumentException if {@code signals.length != worldSize}
     * @throws CustomAllReduceException        for what the library rejects ({@code AR4J_ERROR_WORLD_SIZE},
     *                                  {@code AR4J_ERROR_RANK}, {@code AR4J_ERROR_DEADLINE},
     *                                  {@code AR4J_ERROR_INVALID_ARGUMENT} for {@code maxBytes} or
     *                                  {@code maxBuffers}, ...), or
     *                                  {@code AR4J_ERROR_CUDA} with the CUDA error in the message
     * @throws dev.ar4j.NativeLibraryException if libcudart or the kernels library cannot be loaded
     */
    public static CustomAllReduceContext createContext(long[] signals, int rank, int worldSize, long maxBytes, int maxBuffers,
                                                long deadlineNanos) {
        Objects.requireNonNull(signals, "signals");
        if (signals.length != worldSize) {
            throw new IllegalArgumentException("one signal pointer per rank: worldSize is " + worldSize + " but "
                    + signals.length + " signal pointers were given");
        }
        ensureLoaded();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            MemorySegment pointers = pointerArray(arena, signals);
            int status = custom_all_reduce_h.ar4j_context_create(out, pointers, rank, worldSize, maxBytes, maxBuffers,
                    deadlineNanos);
            if (status != 0) {
                String detail = null;
                if (status == custom_all_reduce_h.AR4J_ERROR_CUDA()) {
                    int cuda = custom_all_reduce_h.ar4j_last_cuda_error(MemorySegment.NULL);
                    detail = "the CUDA error was " + CudaErrors.name(cuda) + " (" + cuda + "): " + CudaErrors.description(cuda);
                }
                throw exception(status, "ar4j_context_create(rank " + rank + ", world size " + worldSize + ", max bytes "
                        + maxBytes + ", max buffers " + maxBuffers + ", deadline " + deadlineNanos + " ns)", detail);
            }
            return new CustomAllReduceContext(out.get(ValueLayout.ADDRESS, 0), rank, worldSize);
        }
    }

    /** A native {@code void*[]} holding {@code addresses}, from {@code arena}. */
    static MemorySegment pointerArray(Arena arena, long[] addresses) {
        MemorySegment array = arena.allocate(ValueLayout.ADDRESS, Math.max(1, addresses.length));
        for (int i = 0; i < addresses.length; i++) {
            array.setAtIndex(ValueLayout.ADDRESS, i, MemorySegment.ofAddress(addresses[i]));
        }
        return array;
    }

    private static String cString(MemorySegment pointer) {
        return pointer.address() == 0 ? "" : pointer.reinterpret(Long.MAX_VALUE).getString(0);
    }
}
