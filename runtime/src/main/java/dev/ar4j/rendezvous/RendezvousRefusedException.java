package dev.ar4j.rendezvous;

/**
 * The rendezvous server refused a request it understood: a rank already connected (two processes
 * claim it), a key of another rank, a quota exceeded, too many keys in one read, a world size or
 * rank that does not fit the group. The message names the limit and what to change.
 */
public class RendezvousRefusedException extends RendezvousException {
    private static final long serialVersionUID = 1L;

    /**
     * A refusal described by {@code message}.
     *
     * @param message what was refused, the limit, and what to change
     */
    public RendezvousRefusedException(String message) {
        super(message);
    }
}
