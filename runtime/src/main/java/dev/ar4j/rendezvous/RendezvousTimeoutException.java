package dev.ar4j.rendezvous;

import java.time.Duration;
import java.util.List;

/**
 * A rendezvous wait ran out of time. It names the key waited on and the ranks that never
 * arrived, so the caller can tell a crashed or misconfigured rank from a slow one.
 *
 * <p>After a collective times out the ranks may disagree on how many times each key has been
 * used; treat the rendezvous as broken and close it.
 */
public class RendezvousTimeoutException extends RendezvousException {
    private static final long serialVersionUID = 1L;

    /** The user key of the operation that timed out. */
    private final String key;
    /** The ranks that never arrived, ascending. */
    private final List<Integer> missingRanks;
    /** The timeout that elapsed. */
    private final Duration timeout;

    /**
     * A timeout of the operation on {@code key}.
     *
     * @param message      the full message, naming the key and the missing ranks
     * @param key          the user key of the operation that timed out
     * @param missingRanks the ranks that never arrived, ascending; empty where the wait was not on
     *                     particular ranks (a {@link Rendezvous#get} of a key nobody set)
     * @param timeout      the timeout that elapsed
     */
    public RendezvousTimeoutException(String message, String key, List<Integer> missingRanks, Duration timeout) {
        super(message);
        this.key = key;
        this.missingRanks = List.copyOf(missingRanks);
        this.timeout = timeout;
    }

    /**
     * The user key of the operation that timed out.
     *
     * @return the key
     */
    public String key() {
        return key;
    }

    /**
     * The ranks that never arrived, ascending; empty where the wait was not on particular ranks.
     *
     * @return an unmodifiable list of ranks, possibly empty
     */
    public List<Integer> missingRanks() {
        return missingRanks;
    }

    /**
     * The timeout that elapsed.
     *
     * @return the timeout
     */
    public Duration timeout() {
        return timeout;
    }
}
