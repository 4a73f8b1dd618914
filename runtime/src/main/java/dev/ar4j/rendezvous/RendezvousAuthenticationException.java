package dev.ar4j.rendezvous;

/**
 * A rendezvous handshake failed authentication: the peer does not know this job's token. On the
 * server side that is "another job's rank (token mismatch)"; on a client, the server it reached
 * belongs to another job. Check that every rank of the job sees the same {@code AR4J_RDZV_TOKEN}
 * (or the same launcher job id) and that MASTER_ADDR / MASTER_PORT point at this job's server.
 */
public class RendezvousAuthenticationException extends RendezvousException {
    private static final long serialVersionUID = 1L;

    /**
     * A failure described by {@code message}.
     *
     * @param message what failed, on which side, and what to check
     */
    public RendezvousAuthenticationException(String message) {
        super(message);
    }
}
