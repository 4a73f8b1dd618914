package dev.ar4j.nccl;

import dev.ar4j.bindings.nccl.nccl_h;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * A group of NCCL calls ({@code ncclGroupStart} ... {@code ncclGroupEnd}) as a try-with-resources
 * scope on the calling thread: the collectives and sends/receives made inside it, on one or more
 * communicators, are launched together when it closes, which is what lets matching
 * {@link NcclCollectives#send send}s and {@link NcclCollectives#recv recv}s progress together and
 * a rank drive several communicators from one thread. Groups nest; only the outermost one launches.
 *
 * <pre>{@code
 * try (NcclGroup group = NcclGroup.start()) {
 *     comm.collectives().send(a, count, NcclDataType.FLOAT32, peer, stream);
 *     comm.collectives().recv(b, count, NcclDataType.FLOAT32, peer, stream);
 * }
 * }</pre>
 *
 * On close, a non-blocking communicator's {@code ncclInProgress} is waited out for every
 * communicator the group used, each bounded by its own timeout. Close on the thread that started it.
 */
public final class NcclGroup implements AutoCloseable {
    private static final ThreadLocal<NcclGroup> CURRENT = new ThreadLocal<>();

    private final NcclGroup outer;
    private final Thread owner;
    private final List<NcclCommunicator> members = new ArrayList<>(2);
    private boolean closed;

    private NcclGroup(NcclGroup outer, Thread owner) {
        this.outer = outer;
        this.owner = owner;
    }

    /**
     * Starts a group on the calling thread ({@code ncclGroupStart}).
     *
     * @return the open group, to be closed on this thread
     * @throws dev.ar4j.NativeLibraryException if libcudart or libnccl cannot be loaded
     * @throws NcclException if {@code ncclGroupStart} fails
     */
    public static NcclGroup start() {
        Nccl.ensureLoaded();
        NcclErrors.check(GroupCalls.START.apply(), "ncclGroupStart", MemorySegment.NULL);
        NcclGroup group = new NcclGroup(CURRENT.get(), Thread.currentThread());
        CURRENT.set(group);
        return group;
    }

    /**
     * A group scope on the calling thread without {@code ncclGroupStart}, ended by
     * {@link #leaveScope}: for testing how calls behave inside a group without NCCL.
     */
    static NcclGroup enterScope() {
        NcclGroup group = new NcclGroup(CURRENT.get(), Thread.currentThread());
        CURRENT.set(group);
        return group;
    }

    /** Ends a scope from {@link #enterScope()} without {@code ncclGroupEnd}. */
    static void leaveScope(NcclGroup group) {
        group.closed = true;
        CURRENT.set(group.outer);
    }

    /** The communicators the group's calls used, in order. */
    List<NcclCommunicator> members() {
        return List.copyOf(members);
    }

    /** The innermost group open on the calling thread, or null. */
    static NcclGroup current() {
        return CURRENT.get();
    }

    /** Records that a call on {@code communicator} was made inside this group. */
    void join(NcclCommunicator communicator) {
        for (NcclCommunicator member : members) {
            if (member == communicator) {
                return;
            }
        }
        members.add(communicator);
    }

    /**
     * True while the group is open.
     *
     * @return {@code true} until {@link #close()} was called
     */
    public boolean isOpen() {
        return !closed;
    }

    /**
     * Ends the group ({@code ncclGroupEnd}) once: the outermost group launches every call made in
     * it and waits out {@code ncclInProgress} on each communicator used.
     *
     * @throws IllegalStateException on another thread than the one that started it, or if an inner
     *                               group opened after this one is still open
     * @throws NcclException         if NCCL failed the group (a timeout aborts the communicator that timed out)
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        Thread caller = Thread.currentThread();
        if (caller != owner) {
            throw new IllegalStateException("an NcclGroup must be closed on the thread that started it (" + owner.getName()
                    + "), not on " + caller.getName() + ": NCCL's group state is per thread");
        }
        if (CURRENT.get() != this) {
            throw new IllegalStateException("close the inner NcclGroup opened inside this one first");
        }
        closed = true;
        CURRENT.set(outer);
        int result = GroupCalls.END.apply();
        if (outer != null) {
            members.forEach(outer::join);
            NcclErrors.check(result, "ncclGroupEnd (nested)", MemorySegment.NULL);
            return;
        }
        if (result != NcclErrors.SUCCESS && result != NcclErrors.IN_PROGRESS) {
            NcclException e = NcclErrors.exception(result, "ncclGroupEnd over " + members, MemorySegment.NULL);
            throw e;
        }
        RuntimeException first = null;
        for (NcclCommunicator member : members) {
            try {
                member.settleGroup();
            } catch (RuntimeException e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }

    @Override
    public String toString() {
        return "NcclGroup[" + (closed ? "closed" : "open") + ", " + members.size() + " communicator(s)]";
    }

    /** {@code ncclGroupStart} and {@code ncclGroupEnd}, linked once NCCL is loaded. */
    private static final class GroupCalls {
        static final nccl_h.ncclGroupStart START = nccl_h.ncclGroupStart.makeInvoker();
        static final nccl_h.ncclGroupEnd END = nccl_h.ncclGroupEnd.makeInvoker();
    }
}
