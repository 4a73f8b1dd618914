package dev.ar4j.nccl;

import dev.ar4j.bindings.nccl.nccl_h;
import dev.ar4j.cuda.DeviceBuffer;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A buffer registered with a communicator ({@link NcclCommunicator#registerWindow}). Owned:
 * {@link #close()} deregisters it exactly once (a collective call, like the registration). If the
 * communicator was destroyed first, NCCL released the window with it and close does nothing.
 */
public final class NcclWindow implements AutoCloseable {

    /** {@code NCCL_WIN_DEFAULT}: a window with no special property. */
    public static final int DEFAULT = 0x00;
    /** {@code NCCL_WIN_COLL_SYMMETRIC}: every rank registers a buffer of the same size from {@code ncclMemAlloc}. */
    public static final int COLLECTIVE_SYMMETRIC = 0x01;
    /** {@code NCCL_WIN_STRICT_ORDERING}. */
    public static final int STRICT_ORDERING = 0x02;
    private final NcclCommunicator communicator;
    private final MemorySegment window;
    private final DeviceBuffer buffer;
    private final AtomicBoolean closed = new AtomicBoolean();

    NcclWindow(NcclCommunicator communicator, MemorySegment window, DeviceBuffer buffer) {
        this.communicator = communicator;
        this.window = window;
        this.buffer = buffer;
    }

    /** {@code ncclCommWindowRegister} on {@code communicator} (see {@link NcclCommunicator#registerWindow}). */
    static NcclWindow register(NcclCommunicator communicator, DeviceBuffer buffer, int flags) {
        Objects.requireNonNull(buffer, "buffer");
        String call = "ncclCommWindowRegister(" + buffer + ", flags " + flags + ")";
        communicator.enter(call);
        int result;
        MemorySegment window;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            result = communicator.settle(nccl_h.ncclCommWindowRegister(communicator.comm(), buffer.segment(),
                    buffer.byteSize(), out, flags));
            window = out.get(ValueLayout.ADDRESS, 0);
        } finally {
            communicator.exit();
        }
        if (result != NcclErrors.SUCCESS) {
            throw communicator.fail(result, call);
        }
        return new NcclWindow(communicator, window, buffer);
    }

    /**
     * The {@code ncclWindow_t} as a zero-length segment.
     *
     * @return the window handle, valid until {@link #close()}
     * @throws IllegalStateException if the window is deregistered
     */
    public MemorySegment handle() {
        if (closed.get()) {
            throw new IllegalStateException("this NCCL window is deregistered");
        }
        return window;
    }

    /**
     * The registered buffer.
     *
     * @return the buffer given to {@link NcclCommunicator#registerWindow}
     */
    public DeviceBuffer buffer() {
        return buffer;
    }

    /**
     * False once deregistered.
     *
     * @return {@code true} while neither the window is deregistered nor the communicator closed
     */
    public boolean isOpen() {
        return !closed.get() && communicator.isOpen();
    }

    /** Deregisters the window (once; collective). */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true) || !communicator.enterIfOpen()) {
            return; // deregistered already, or NCCL released the window with the communicator
        }
        int result;
        try {
            result = communicator.settle(nccl_h.ncclCommWindowDeregister(communicator.comm(), window));
        } finally {
            communicator.exit();
        }
        if (result != NcclErrors.SUCCESS) {
            throw communicator.fail(result, "ncclCommWindowDeregister");
        }
    }
}
