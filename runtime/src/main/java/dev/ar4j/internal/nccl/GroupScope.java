package dev.ar4j.internal.nccl;

import dev.ar4j.bindings.nccl.nccl_h;
import dev.ar4j.nccl.NcclException;
import dev.ar4j.nccl.NcclGroup;
import dev.ar4j.internal.platform.NativeLibraries;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * The {@link NcclGroup} of the calling thread: {@code ncclGroupStart} at {@link #start()},
 * {@code ncclGroupEnd} at {@link #close()}, and in between the call protocols of the
 * communicators whose calls joined it, whose {@code ncclInProgress} the outermost close waits out.
 */
final class GroupScope implements NcclGroup {
    private static final ThreadLocal<GroupScope> CURRENT = new ThreadLocal<>();

    private final GroupScope outer;
    private final Thread owner;
    private final List<NcclCallProtocol> members = new ArrayList<>(2);
    private boolean closed;

    private GroupScope(GroupScope outer, Thread owner) {
        this.outer = outer;
        this.owner = owner;
    }

    /** Starts a group on the calling thread ({@code ncclGroupStart}). */
    static GroupScope start() {
        NativeLibraries.cudart();
        NativeLibraries.nccl();
        NcclErrors.check(GroupCalls.START.apply(), "ncclGroupStart", MemorySegment.NULL);
        return enterScope();
    }

    /**
     * A group scope on the calling thread without {@code ncclGroupStart}, ended by
     * {@link #leaveScope}: for testing how calls behave inside a group without NCCL.
     */
    static GroupScope enterScope() {
        GroupScope group = new GroupScope(CURRENT.get(), Thread.currentThread());
        CURRENT.set(group);
        return group;
    }

    /** Ends a scope from {@link #enterScope()} without {@code ncclGroupEnd}. */
    static void leaveScope(GroupScope group) {
        group.closed = true;
        CURRENT.set(group.outer);
    }

    /** The call protocols of the communicators the group's calls used, in order. */
    List<NcclCallProtocol> members() {
        return List.copyOf(members);
    }

    /** The innermost group open on the calling thread, or null. */
    static GroupScope current() {
        return CURRENT.get();
    }

    /** Records that a call under {@code protocol} was made inside this group. */
    void join(NcclCallProtocol protocol) {
        for (NcclCallProtocol member : members) {
            if (member == protocol) {
                return;
            }
        }
        members.add(protocol);
    }

    @Override
    public boolean isOpen() {
        return !closed;
    }

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
        for (NcclCallProtocol member : members) {
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
