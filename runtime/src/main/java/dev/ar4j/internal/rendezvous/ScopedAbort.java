package dev.ar4j.internal.rendezvous;

/**
 * A rendezvous that can end the waits of one key scope without declaring the rank lost to the
 * whole group: what a sub-communicator's abort needs, since its keys live in its parent's store
 * (see {@link SubGroupRendezvous}). Implemented by the TCP and in-process rendezvous.
 */
public interface ScopedAbort {

    /**
     * Declares that this rank gave up on every key whose user key starts with {@code prefix}: every
     * wait for a missing key in that scope (the peers' and this rank's own) ends at once with a
     * {@code PeerLostException} naming this rank and carrying {@code reason}. Nothing is reported to
     * the peer-loss listeners. Must not block.
     *
     * @param prefix the scope, not empty (a sub-group's namespace)
     * @param reason what happened, for the peers' messages
     */
    void abortScope(String prefix, String reason);
}
