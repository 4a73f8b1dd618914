package dev.ar4j;

/**
 * A communicator's build was ended by {@link BuildAbort#abort(String)} before the group formed.
 * Everything the build had made (rendezvous connection or server, NCCL communicator, device
 * memory, IPC mappings) was freed before this was thrown; the peers' builds that waited for this
 * rank end with a {@link PeerLostException} naming it. Build a new group to try again.
 */
public final class BuildAbortedException extends Ar4jException {
    private static final long serialVersionUID = 1L;

    /**
     * An exception saying why and where the build ended.
     *
     * @param message the abort's reason and the step the build was in
     * @param cause   the failure the abort caused in that step (a wait that ended), or {@code null}
     */
    public BuildAbortedException(String message, Throwable cause) {
        super(message, cause);
    }
}
