package dev.ar4j.nccl;

import dev.ar4j.cuda.DeviceBuffer;

import java.lang.foreign.MemorySegment;

/**
 * A buffer registered with a communicator ({@link NcclCollectives#registerWindow}). Owned:
 * {@link #close()} deregisters it exactly once (a collective call, like the registration). If the
 * communicator was destroyed first, NCCL released the window with it and close does nothing.
 */
public interface NcclWindow extends AutoCloseable {

    /** {@code NCCL_WIN_DEFAULT}: a window with no special property. */
    int DEFAULT = 0x00;
    /** {@code NCCL_WIN_COLL_SYMMETRIC}: every rank registers a buffer of the same size from {@code ncclMemAlloc}. */
    int COLLECTIVE_SYMMETRIC = 0x01;
    /** {@code NCCL_WIN_STRICT_ORDERING}. */
    int STRICT_ORDERING = 0x02;

    /**
     * The {@code ncclWindow_t} as a zero-length segment.
     *
     * @return the window handle, valid until {@link #close()}
     * @throws IllegalStateException if the window is deregistered
     */
    MemorySegment handle();

    /**
     * The registered buffer.
     *
     * @return the buffer given to {@link NcclCollectives#registerWindow}
     */
    DeviceBuffer buffer();

    /**
     * False once deregistered.
     *
     * @return {@code true} while neither the window is deregistered nor the communicator closed
     */
    boolean isOpen();

    /**
     * Deregisters the window (once; collective).
     *
     * @throws NcclException if NCCL refuses the deregistration
     */
    @Override
    void close();
}
