package dev.ar4j.cuda;

import dev.ar4j.bindings.cudart.cuda_runtime_api_h;

/** How strictly stream capture forbids unsafe calls in other threads ({@code cudaStreamCaptureMode}). */
public enum CaptureMode {
    /** Unsafe calls from any thread fail while a global capture is under way. */
    GLOBAL(cuda_runtime_api_h.cudaStreamCaptureModeGlobal()),
    /** Unsafe calls fail only in the capturing thread. */
    THREAD_LOCAL(cuda_runtime_api_h.cudaStreamCaptureModeThreadLocal()),
    /** Nothing is forbidden; the caller makes sure the capture is valid. */
    RELAXED(cuda_runtime_api_h.cudaStreamCaptureModeRelaxed());

    private final int code;

    CaptureMode(int code) {
        this.code = code;
    }

    /**
     * The {@code cudaStreamCaptureMode} value.
     *
     * @return the runtime's value of this mode
     */
    public int code() {
        return code;
    }
}
