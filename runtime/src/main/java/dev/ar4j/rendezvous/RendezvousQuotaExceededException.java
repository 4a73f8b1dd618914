package dev.ar4j.rendezvous;

/**
 * The rendezvous server refused a value because this rank's share of its store is used up: its
 * quota of keys or bytes, or its reserve and what is left of the common part of the server's
 * memory budget. Other ranks go on; the message names the limit, what this rank holds, and what
 * to change.
 */
public class RendezvousQuotaExceededException extends RendezvousRefusedException {
    private static final long serialVersionUID = 1L;

    /**
     * A refusal described by {@code message}.
     *
     * @param message what was refused, the share and what this rank holds, and what to change
     */
    public RendezvousQuotaExceededException(String message) {
        super(message);
    }
}
