package dev.ar4j.kernels;

import dev.ar4j.Ar4jException;

/**
 * A call into {@code libar4j_custom_ar} returned a non-zero {@code ar4j_status}. Carries the call,
 * the status code, its name ({@code ar4j_status_name}) and message ({@code ar4j_status_message}).
 */
public class CustomArException extends Ar4jException {
    private static final long serialVersionUID = 1L;

    private final String call;
    private final int status;
    private final String statusName;
    private final String statusMessage;

    CustomArException(String call, int status, String statusName, String statusMessage, String detail) {
        super(call + " failed: " + statusName + " (" + status + "): " + statusMessage
                + (detail == null ? "" : "; " + detail));
        this.call = call;
        this.status = status;
        this.statusName = statusName;
        this.statusMessage = statusMessage;
    }

    /** The call that failed. */
    public String call() {
        return call;
    }

    /** The {@code ar4j_status} code. */
    public int status() {
        return status;
    }

    /** The status's name, e.g. {@code AR4J_ERROR_WORLD_SIZE}. */
    public String statusName() {
        return statusName;
    }

    /** The library's sentence about the status. */
    public String statusMessage() {
        return statusMessage;
    }

    /** {@code AR4J_ERROR_PEER_TIMEOUT}: one of this rank's kernels gave up waiting for a peer. */
    public boolean isPeerTimeout() {
        return status == 17;
    }

    /** {@code AR4J_ERROR_GEOMETRY_MISMATCH}: the ranks' launch geometries differ. */
    public boolean isGeometryMismatch() {
        return status == 20;
    }

    /** {@code AR4J_ERROR_POISONED}: the group is poisoned (by this rank or a peer). */
    public boolean isPoisoned() {
        return status == 21;
    }

    /** {@code AR4J_ERROR_CONCURRENT_USE}: another host thread was inside a call on the context. */
    public boolean isConcurrentUse() {
        return status == 22;
    }

    /** Whether the group is unusable after this failure (timeout, poison, geometry): dispose it. */
    public boolean groupFailed() {
        return isPeerTimeout() || isPoisoned() || isGeometryMismatch();
    }

    /**
     * The name of an {@code ar4j_status} code as the header spells it, without the native
     * library ({@code "AR4J_UNKNOWN_STATUS"} for others); equal to {@code ar4j_status_name}.
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
            "AR4J_ERROR_ROW_NOT_MULTIPLE_OF_16"};
}
