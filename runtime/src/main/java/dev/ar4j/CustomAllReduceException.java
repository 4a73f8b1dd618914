package dev.ar4j;


/**
 * A call into {@code libar4j_custom_ar} returned a non-zero {@code ar4j_status}. Carries the call,
 * the status code, its name ({@code ar4j_status_name}) and message ({@code ar4j_status_message}).
 */
public class CustomAllReduceException extends Ar4jException {
    private static final long serialVersionUID = 1L;

    /** The failed call with its main arguments, e.g. {@code ar4j_all_reduce(algorithm 3, FLOAT32, count 1024)}. */
    private final String call;
    /** The non-zero {@code ar4j_status} code the call returned. */
    private final int status;
    /** The status's name as {@code ar4j_status_name} gives it. */
    private final String statusName;
    /** The status's sentence as {@code ar4j_status_message} gives it. */
    private final String statusMessage;

    /**
     * A failed call of the kernels library.
     *
     * @param call          the call with its main arguments
     * @param status        the non-zero {@code ar4j_status} it returned
     * @param statusName    the status's name
     * @param statusMessage the status's sentence
     * @param detail        more about the failure (e.g. the CUDA error), or {@code null}
     */
    public CustomAllReduceException(String call, int status, String statusName, String statusMessage, String detail) {
        super(call + " failed: " + statusName + " (" + status + "): " + statusMessage
                + (detail == null ? "" : "; " + detail));
        this.call = call;
        this.status = status;
        this.statusName = statusName;
        this.statusMessage = statusMessage;
    }

    /**
     * The call that failed.
     *
     * @return the C function's name with its main arguments, e.g.
     *         {@code ar4j_context_create(rank 0, world size 2, ...)}
     */
    public String call() {
        return call;
    }

    /**
     * The status code the call returned.
     *
     * @return the non-zero {@code ar4j_status} code; see {@link #nameOf(int)}
     */
    public int status() {
        return status;
    }

    /**
     * The status's name as the library gives it ({@code ar4j_status_name}).
     *
     * @return e.g. {@code AR4J_ERROR_WORLD_SIZE}; {@code AR4J_UNKNOWN_STATUS} for a code the library does not know
     */
    public String statusName() {
        return statusName;
    }

    /**
     * The library's sentence about the status ({@code ar4j_status_message}).
     *
     * @return one sentence, never null
     */
    public String statusMessage() {
        return statusMessage;
    }

    /**
     * Whether the status is {@code AR4J_ERROR_PEER_TIMEOUT}: one of this rank's kernels gave up
     * waiting for a peer; the context stays failed.
     *
     * @return {@code true} for {@code AR4J_ERROR_PEER_TIMEOUT}
     */
    public boolean isPeerTimeout() {
        return status == 17;
    }

    /**
     * Whether the status is {@code AR4J_ERROR_GEOMETRY_MISMATCH}: the ranks' launch geometries differ
     * (or a peer published none).
     *
     * @return {@code true} for {@code AR4J_ERROR_GEOMETRY_MISMATCH}
     */
    public boolean isGeometryMismatch() {
        return status == 20;
    }

    /**
     * Whether the status is {@code AR4J_ERROR_POISONED}: the group is poisoned (by this rank or a peer).
     *
     * @return {@code true} for {@code AR4J_ERROR_POISONED}
     */
    public boolean isPoisoned() {
        return status == 21;
    }

    /**
     * Whether the status is {@code AR4J_ERROR_CONCURRENT_USE}: another host thread was inside a call
     * on the context. The context itself is not harmed; the call was refused.
     *
     * @return {@code true} for {@code AR4J_ERROR_CONCURRENT_USE}
     */
    public boolean isConcurrentUse() {
        return status == 22;
    }

    /**
     * Whether the group is unusable after this failure: dispose every context and make a new group.
     *
     * @return {@code true} for a peer timeout, a poisoned group or a geometry mismatch
     */
    public boolean groupFailed() {
        return isPeerTimeout() || isPoisoned() || isGeometryMismatch();
    }

    /**
     * The name of an {@code ar4j_status} code as the header spells it, without the native
     * library; equal to {@code ar4j_status_name}.
     *
     * @param status an {@code ar4j_status} code; any value is accepted
     * @return e.g. {@code "AR4J_ERROR_RANK"} for 3; {@code "AR4J_UNKNOWN_STATUS"} outside the known codes
     */
    public static String nameOf(int status) {
        return status >= 0 && status < NAMES.length ? NAMES[status] : "AR4J_UNKNOWN_STATUS";
    }

    private static final String[] NAMES = {
            "AR4J_SUCCESS", "AR4J_ERROR_NULL_POINTER", "AR4J_ERROR_WORLD_SIZE", "AR4J_ERROR_RANK",
            "AR4J_ERROR_SIZE_NOT_MULTIPLE_OF_16", "AR4J_ERROR_MISALIGNED", "AR4J_ERROR_EMPTY", "AR4J_ERROR_TOO_LARGE",
            "AR4J_ERROR_NOT_REGISTERED", "AR4J_ERROR_DTYPE", "AR4J_ERROR_ALGORITHM", "AR4J_ERROR_DEADLINE",
            "AR4J_ERROR_CAPACITY", "AR4J_ERROR_ALREADY_REGISTERED", "AR4J_ERROR_GRAPH_COUNT", "AR4J_ERROR_WRONG_DEVICE",
            "AR4J_ERROR_CUDA", "AR4J_ERROR_PEER_TIMEOUT", "AR4J_ERROR_LAUNCH_CONFIG", "AR4J_ERROR_INVALID_ARGUMENT",
            "AR4J_ERROR_GEOMETRY_MISMATCH", "AR4J_ERROR_POISONED", "AR4J_ERROR_CONCURRENT_USE",
            "AR4J_ERROR_ALREADY_LAUNCHED", "AR4J_ERROR_NOT_FUSED", "AR4J_ERROR_HIDDEN_TOO_LARGE",
            "AR4J_ERROR_ROW_NOT_MULTIPLE_OF_16", "AR4J_ERROR_SLOT_IN_USE"};
}
