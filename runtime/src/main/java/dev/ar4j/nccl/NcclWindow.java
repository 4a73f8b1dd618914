package dev.ar4j.nccl;

import dev.ar4j.cuda.DeviceBuffer;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A buffer registered with a communicator ({@link NcclCommunicator#registerWindow}). Owned:
 * {@link #close()} deregisters it exactly once (a collective call, like the registration). If the
 * communicator was destroyed first, NCCL released the window with it and close does nothing.
 */
public final class NcclWindow implements AutoCloseable {
    private final NcclCommunicator communicator;
    private final MemorySegment window;
    private final DeviceBuffer buffer;
    private final AtomicBoolean closed = new AtomicBoolean();

    NcclWindow(NcclCommunicator communicator, MemorySegment window, DeviceBuffer buffer) {
        this.communicator = communicator;
        this.window = window;
        this.buffer = buffer;
    }

    /** The {@code ncclWindow_t} as a zero-length segment. */
    public MemorySegment handle() {
        if (closed.get()) {
            throw new IllegalStateException("this NCCL window is deregistered");
        }
        return window;
    }

    /** The registered buffer. */
    public DeviceBuffer buffer() {
        return buffer;
    }

    /** False once deregistered. */
    public boolean isOpen() {
        return !closed.get() && communicator.isOpen();
    }

    /** Deregisters the window (once; collective). */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            communicator.deregisterWindow(window);
        }
    }
}
