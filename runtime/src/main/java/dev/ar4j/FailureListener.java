package dev.ar4j;

/**
 * Told once when a communicator fails ({@link Communicator.Builder#onFailure}): a peer was lost, a
 * kernel gave up waiting, NCCL reported an error, or the ranks fell out of step (or
 * {@link Communicator#abort()} was called). By then the custom kernels are poisoned and NCCL is
 * aborted; calls on the communicator throw. Called on the thread that saw the failure (often the
 * communicator's watchdog): return quickly and never block; close the communicator from another
 * thread.
 */
@FunctionalInterface
public interface FailureListener {

    /**
     * Called once, with the first failure of {@code communicator}; later failures are not reported.
     *
     * @param communicator the communicator that failed
     * @param failure      what failed, naming the rank where known
     *                     ({@link PeerLostException#peer()}, {@link PeerTimeoutException#peer()})
     */
    void failed(Communicator communicator, RuntimeException failure);
}
