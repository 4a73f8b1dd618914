package dev.ar4j.benchmarks.perf;

import dev.ar4j.DType;

import java.util.Locale;

/**
 * The collective a sweep measures ({@code -o}), as nccl-tests' binaries do: {@code all_reduce_perf},
 * {@code all_gather_perf}, {@code reduce_scatter_perf}, {@code broadcast_perf}. Only the all-reduce has
 * ar4j kernels; the others run through NCCL ({@code Communicator#collectives()}).
 *
 * <p>Sizes follow nccl-tests: the size of a row is the whole buffer of the collective
 * (all-gather: the receive buffer, {@code nranks x sendCount} elements; reduce-scatter: the send
 * buffer, {@code nranks x receiveCount} elements; all-reduce and broadcast: the buffer), and a size
 * that is not a whole number of elements per rank is rounded down ({@link #effectiveBytes}).
 */
public enum Operation {
    /** {@code receive = sum over ranks of send}. */
    ALL_REDUCE("allreduce", "all-reduce"),
    /** {@code receive[r * c + i] = send of rank r [i]}. */
    ALL_GATHER("allgather", "all-gather"),
    /** {@code receive[i] = sum over ranks r of send of r [rank * c + i]}. */
    REDUCE_SCATTER("reducescatter", "reduce-scatter"),
    /** {@code receive = send of the root} (root 0, as in nccl-tests). */
    BROADCAST("broadcast", "broadcast");

    /** The names {@link #parse} accepts. */
    public static final String ACCEPTED = "allreduce, allgather, reducescatter, broadcast";
    /** The broadcast's root. */
    public static final int ROOT = 0;

    private final String label;
    private final String title;

    Operation(String label, String title) {
        this.label = label;
        this.title = title;
    }

    /**
     * The name in {@code -o}, the table, CSV and JSON.
     *
     * @return "allreduce", "allgather", "reducescatter" or "broadcast"
     */
    public String label() {
        return label;
    }

    /**
     * The name in titles.
     *
     * @return "all-reduce", "all-gather", "reduce-scatter" or "broadcast"
     */
    public String title() {
        return title;
    }

    /**
     * Whether ar4j has kernels for it; the others measure NCCL only.
     *
     * @return true for {@link #ALL_REDUCE} only
     */
    public boolean hasAr4jKernels() {
        return this == ALL_REDUCE;
    }

    /**
     * Parses {@code allreduce | allgather | reducescatter | broadcast}, case-insensitive, with or
     * without a dash or underscore ({@code all-gather}, {@code reduce_scatter}).
     *
     * @param text the value of {@code -o}; surrounding blanks are ignored, and {@code bcast} is
     *             accepted for broadcast
     * @return the operation named
     * @throws IllegalArgumentException if {@code text} names none, with a message naming the accepted values
     */
    public static Operation parse(String text) {
        String t = text.trim().toLowerCase(Locale.ROOT).replace("-", "").replace("_", "");
        return switch (t) {
            case "allreduce" -> ALL_REDUCE;
            case "allgather" -> ALL_GATHER;
            case "reducescatter" -> REDUCE_SCATTER;
            case "broadcast", "bcast" -> BROADCAST;
            default -> throw new IllegalArgumentException("-o: '" + text + "' is not an operation; accepted: " + ACCEPTED);
        };
    }

    /**
     * The bus-bandwidth factor of nccl-tests ({@code doc/PERFORMANCE.md}): busbw = algbw x factor,
     * {@code 2(n-1)/n} for all-reduce, {@code (n-1)/n} for all-gather and reduce-scatter, 1 for
     * broadcast; 1 on one rank.
     *
     * @param worldSize the number of ranks, at least 1
     * @return the factor, in (0, 2)
     * @throws IllegalArgumentException if {@code worldSize < 1}
     */
    public double busFactor(int worldSize) {
        if (worldSize < 1) {
            throw new IllegalArgumentException("world size must be at least 1, got " + worldSize);
        }
        if (worldSize == 1) {
            return 1.0;
        }
        double n = worldSize;
        return switch (this) {
            case ALL_REDUCE -> 2.0 * (n - 1) / n;
            case ALL_GATHER, REDUCE_SCATTER -> (n - 1) / n;
            case BROADCAST -> 1.0;
        };
    }

    /**
     * Ranks the buffer of a row is split over.
     *
     * @param worldSize the number of ranks, at least 1
     * @return {@code worldSize} for all-gather and reduce-scatter, else 1
     */
    public int chunks(int worldSize) {
        return this == ALL_GATHER || this == REDUCE_SCATTER ? worldSize : 1;
    }

    /**
     * The bytes a row measures: {@code bytes} rounded down to a whole number of elements per rank
     * ({@link #chunks}), or 0 if that leaves nothing (the row is skipped).
     *
     * @param bytes     the size asked for, at least 0
     * @param worldSize the number of ranks, at least 1
     * @param dtype     the element type
     * @return a multiple of {@code chunks(worldSize) * dtype.byteSize()} in [0, {@code bytes}]
     */
    public long effectiveBytes(long bytes, int worldSize, DType dtype) {
        long unit = (long) chunks(worldSize) * dtype.byteSize();
        return bytes / unit * unit;
    }

    /**
     * The count NCCL is called with: elements per rank for all-gather ({@code sendCount}) and
     * reduce-scatter ({@code receiveCount}), elements of the buffer otherwise.
     *
     * @param effectiveBytes the row's size from {@link #effectiveBytes}, a whole number of elements per rank
     * @param worldSize      the number of ranks, at least 1
     * @param dtype          the element type
     * @return the element count of the NCCL call
     */
    public long callCount(long effectiveBytes, int worldSize, DType dtype) {
        return effectiveBytes / dtype.byteSize() / chunks(worldSize);
    }

    /**
     * Elements of the send buffer of one call.
     *
     * @param effectiveBytes the row's size from {@link #effectiveBytes}, a whole number of elements per rank
     * @param worldSize      the number of ranks, at least 1
     * @param dtype          the element type
     * @return elements per rank for all-gather, the whole buffer's elements otherwise
     */
    public long sendElements(long effectiveBytes, int worldSize, DType dtype) {
        return this == ALL_GATHER ? callCount(effectiveBytes, worldSize, dtype) : effectiveBytes / dtype.byteSize();
    }

    /**
     * Elements of the receive buffer of one call.
     *
     * @param effectiveBytes the row's size from {@link #effectiveBytes}, a whole number of elements per rank
     * @param worldSize      the number of ranks, at least 1
     * @param dtype          the element type
     * @return elements per rank for reduce-scatter, the whole buffer's elements otherwise
     */
    public long receiveElements(long effectiveBytes, int worldSize, DType dtype) {
        return this == REDUCE_SCATTER ? callCount(effectiveBytes, worldSize, dtype) : effectiveBytes / dtype.byteSize();
    }

    /**
     * Element offset of the send buffer within the receive buffer (all-gather) or of the receive
     * buffer within the send buffer (reduce-scatter) when in place, as NCCL defines it; 0 for the
     * others (the same address).
     *
     * @param effectiveBytes the row's size from {@link #effectiveBytes}, a whole number of elements per rank
     * @param worldSize      the number of ranks, at least 1
     * @param rank           this rank, in [0, {@code worldSize})
     * @param dtype          the element type
     * @return {@code rank * callCount(...)} for all-gather and reduce-scatter, else 0
     */
    public long inPlaceOffsetElements(long effectiveBytes, int worldSize, int rank, DType dtype) {
        return this == ALL_GATHER || this == REDUCE_SCATTER ? rank * callCount(effectiveBytes, worldSize, dtype) : 0;
    }
}
