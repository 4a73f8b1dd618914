package dev.ar4j.internal.nccl;

import dev.ar4j.bindings.nccl.nccl_h;
import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.nccl.NcclWindow;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * An {@link NcclWindow} of one communicator: registered and deregistered under the communicator's
 * {@link NcclCallProtocol}. If the communicator was destroyed first, NCCL released the window with
 * it and close does nothing.
 */
final class RegisteredWindow implements NcclWindow {
    private final NcclCallProtocol protocol;
    private final MemorySegment window;
    private final DeviceBuffer buffer;
    private final AtomicBoolean closed = new AtomicBoolean();

    private RegisteredWindow(NcclCallProtocol protocol, MemorySegment window, DeviceBuffer buffer) {
        this.protocol = protocol;
        this.window = window;
        this.buffer = buffer;
    }

    /** {@code ncclCommWindowRegister} on the protocol's communicator. */
    static RegisteredWindow register(NcclCallProtocol protocol, DeviceBuffer buffer, int flags) {
        Objects.requireNonNull(buffer, "buffer");
        String call = "ncclCommWindowRegister(" + buffer + ", flags " + flags + ")";
        protocol.enter(call);
        int result;
        MemorySegment window;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            result = protocol.settle(nccl_h.ncclCommWindowRegister(protocol.comm(), buffer.segment(),
                    buffer.byteSize(), out, flags));
            window = out.get(ValueLayout.ADDRESS, 0);
        } finally {
            protocol.exit();
        }
        if (result != NcclErrors.SUCCESS) {
            throw protocol.fail(result, call);
        }
        return new RegisteredWindow(protocol, window, buffer);
    }

    @Override
    public MemorySegment handle() {
        if (closed.get()) {
            throw new IllegalStateException("this NCCL window is deregistered");
        }
        return window;
    }

    @Override
    public DeviceBuffer buffer() {
        return buffer;
    }

    @Override
    public boolean isOpen() {
        return !closed.get() && protocol.isOpen();
    }

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true) || !protocol.enterIfOpen()) {
            return; // deregistered already, or NCCL released the window with the communicator
        }
        int result;
        try { // entered above (enterIfOpen: no NCCL call once the communicator is closing)
            result = protocol.settle(nccl_h.ncclCommWindowDeregister(protocol.comm(), window));
        } finally {
            protocol.exit();
        }
        if (result != NcclErrors.SUCCESS) {
            throw protocol.fail(result, "ncclCommWindowDeregister");
        }
    }

    @Override
    public String toString() {
        return "NcclWindow[" + buffer + (isOpen() ? "" : ", closed") + "]";
    }
}
