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
}
