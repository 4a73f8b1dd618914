package dev.ar4j.nccl;

/**
 * A group of NCCL calls ({@code ncclGroupStart} ... {@code ncclGroupEnd}) as a try-with-resources
 * scope on the calling thread, opened by {@link NcclCollectives#startGroup()}: the collectives and
 * sends/receives made inside it, on one or more communicators, are launched together when it
 * closes, which is what lets matching {@link NcclCollectives#send send}s and
 * {@link NcclCollectives#recv recv}s progress together and a rank drive several communicators from
 * one thread. Groups nest; only the outermost one launches.
 *
 * <pre>{@code
 * NcclCollectives nccl = comm.collectives();
 * try (NcclGroup group = nccl.startGroup()) {
 *     nccl.send(a, count, NcclDataType.FLOAT32, peer, stream);
 *     nccl.recv(b, count, NcclDataType.FLOAT32, peer, stream);
 * }
 * }</pre>
 *
 * On close, a non-blocking communicator's {@code ncclInProgress} is waited out for every
 * communicator the group used, each bounded by its own timeout. Close on the thread that started it.
 */
public interface NcclGroup extends AutoCloseable {

    /**
     * False once closed.
     *
     * @return {@code true} until {@link #close()}
     */
    boolean isOpen();

    /**
     * Ends the group ({@code ncclGroupEnd}); the outermost group launches its calls and waits out
     * every used non-blocking communicator's {@code ncclInProgress}. Does nothing if already closed.
     *
     * @throws IllegalStateException if called on another thread than the one that started the group,
     *     or while a group opened inside this one is still open
     * @throws NcclException if {@code ncclGroupEnd} or a communicator's wait fails
     */
    @Override
    void close();
}
