package dev.ar4j.cuda;

import org.junit.jupiter.api.Assumptions;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.concurrent.TimeoutException;

/**
 * Shared pieces of the GPU integration tests. Without enough GPUs a test is skipped with the
 * reason, or fails when the GPU script asked for GPUs with {@code -Dar4j.gpu.required=true}.
 */
public final class GpuTestSupport {
    private GpuTestSupport() {
    }

    /**
     * Returns the device count if it is at least {@code needed}; otherwise skips the test with the
     * reason (or fails it under {@code -Dar4j.gpu.required=true}).
     */
    public static int requireGpus(int needed) {
        String reason;
        Throwable cause = null;
        try {
            int count = Cuda.deviceCount();
            if (count >= needed) {
                return count;
            }
            reason = "needs " + needed + " CUDA devices, this machine has " + count;
        } catch (RuntimeException e) {
            reason = "needs " + needed + " CUDA device(s), none usable: " + e.getMessage();
            cause = e;
        }
        if (Boolean.getBoolean("ar4j.gpu.required")) {
            throw new AssertionError(reason + " (and -Dar4j.gpu.required=true is set)", cause);
        }
        Assumptions.abort(reason + " (set -Dar4j.gpu.required=true to make this a failure)");
        throw new IllegalStateException("unreachable");
    }

    /** Writes {@code bytes} to {@code file} so that a reader never sees a partial file. */
    public static void writeAtomically(Path file, byte[] bytes) throws IOException {
        Path temporary = file.resolveSibling(file.getFileName() + ".tmp");
        Files.write(temporary, bytes);
        Files.move(temporary, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    /** Waits until {@code file} exists and returns its bytes. */
    public static byte[] awaitFile(Path file, Duration timeout) throws IOException, InterruptedException, TimeoutException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!Files.exists(file)) {
            if (System.nanoTime() > deadline) {
                throw new TimeoutException("no " + file + " after " + timeout.toSeconds() + " s: the peer process did not"
                        + " get that far (see its output)");
            }
            Thread.sleep(20);
        }
        return Files.readAllBytes(file);
    }
}
