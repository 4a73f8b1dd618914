package dev.ar4j.cuda;

import dev.ar4j.bindings.cudart.cuda_runtime_api_h;

/** Whether a stream is capturing a graph ({@code cudaStreamCaptureStatus}). */
public enum CaptureStatus {
    /** Not capturing. */
    NONE(cuda_runtime_api_h.cudaStreamCaptureStatusNone()),
    /** Capturing. */
    ACTIVE(cuda_runtime_api_h.cudaStreamCaptureStatusActive()),
    /** Part of a capture that was invalidated and not yet ended. */
    INVALIDATED(cuda_runtime_api_h.cudaStreamCaptureStatusInvalidated());

    private final int code;

    CaptureStatus(int code) {
        this.code = code;
    }

    /**
     * The {@code cudaStreamCaptureStatus} value.
     *
     * @return the runtime's value of this status
     */
    public int code() {
        return code;
    }

    /**
     * The constant for a {@code cudaStreamCaptureStatus} value.
     *
     * @param code a {@code cudaStreamCaptureStatus} value: 0, 1 or 2
     * @return the matching constant
     * @throws IllegalArgumentException if {@code code} is not a known status
     */
    public static CaptureStatus ofCode(int code) {
        for (CaptureStatus status : values()) {
            if (status.code == code) {
                return status;
            }
        }
        throw new IllegalArgumentException("unknown cudaStreamCaptureStatus " + code + "; known: 0 (none), 1 (active),"
                + " 2 (invalidated)");
    }
}
