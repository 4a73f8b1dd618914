package dev.ar4j;

/**
 * The ranks of a group do not agree: a peer sent a record that is malformed, truncated, forged or
 * from another ar4j version, or the ranks made different collective calls (captured different
 * all-reduces, registered buffers of different sizes, called different rendezvous steps) or gave
 * different settings (launch geometry). A communicator that threw it is failed: every rank must
 * run the same ar4j version and make the same collective calls in the same order; close it and
 * build a new group.
 */
public final class OutOfStepException extends Ar4jException {
    private static final long serialVersionUID = 1L;

    /**
     * An exception saying which ranks disagree on what.
     *
     * @param message what the ranks disagree on and what to do
     */
    public OutOfStepException(String message) {
        super(message);
    }

    /**
     * An exception saying which ranks disagree on what, with the failure that showed it.
     *
     * @param message what the ranks disagree on and what to do
     * @param cause   the failure that showed it (a parse error of the peer's record), or {@code null}
     */
    public OutOfStepException(String message, Throwable cause) {
        super(message, cause);
    }
}
