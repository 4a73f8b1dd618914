package dev.ar4j.internal.rendezvous;

import dev.ar4j.PeerLostException;

import java.util.ArrayList;
import java.util.List;

/**
 * The key scopes that ranks of one store have aborted ({@link ScopedAbort}): a scope is a prefix
 * of the user keys (the part of a stored key after its owner, operation and use count; see
 * {@link StoreKeys#userKey}), such as a sub-group's namespace. Once a rank aborted scope
 * {@code s}, every wait that misses a key inside {@code s} ends at once, naming that rank: the rank
 * gave up on that scope, not on the whole group, so nothing is reported as a loss. Bounded: at most {@link #MAX_SCOPES_PER_RANK}
 * scopes per rank (a rank of the job that sends more gets them dropped, with the caller's warning).
 */
final class AbortedScopes {

    /** The most scopes one rank may abort; a job makes one per aborted sub-communicator. */
    static final int MAX_SCOPES_PER_RANK = 256;
    /** The longest reason kept, in characters. */
    static final int MAX_REASON_CHARS = 1000;

    private record Scope(int rank, String prefix, String reason) {
    }

    private final int worldSize;
    private final int[] perRank;
    private volatile List<Scope> scopes = List.of();  // copy on write, read by every waiter check

    AbortedScopes(int worldSize) {
        this.worldSize = worldSize;
        this.perRank = new int[worldSize];
    }

    /**
     * Records that {@code rank} aborted {@code prefix}.
     *
     * @return false if the rank has aborted {@link #MAX_SCOPES_PER_RANK} scopes already (nothing recorded)
     */
    synchronized boolean add(int rank, String prefix, String reason) {
        if (rank < 0 || rank >= worldSize || prefix.isEmpty()) {
            throw new IllegalArgumentException("scope abort of rank " + rank + " with prefix '" + prefix + "'");
        }
        for (Scope s : scopes) {
            if (s.rank == rank && s.prefix.equals(prefix)) {
                return true;  // the first reason stays
            }
        }
        if (perRank[rank] >= MAX_SCOPES_PER_RANK) {
            return false;
        }
        perRank[rank]++;
        List<Scope> next = new ArrayList<>(scopes);
        next.add(new Scope(rank, prefix, reason.length() <= MAX_REASON_CHARS ? reason
                : reason.substring(0, MAX_REASON_CHARS) + "..."));
        scopes = List.copyOf(next);
        return true;
    }

    /**
     * Why a wait for {@code keys} must end, or null: one of its missing keys lies inside a scope some
     * rank aborted. A scope is a sub-group's namespace, and only its members wait on its keys, so
     * every member's wait there ends, whichever member it waits for (the aborting one itself too).
     *
     * @param missing the positions of the keys still absent
     */
    PeerLostException check(List<String> keys, int[] missing, int waitingRank) {
        List<Scope> now = scopes;
        if (now.isEmpty()) {
            return null;
        }
        for (int index : missing) {
            String user = StoreKeys.userKey(keys.get(index));
            for (Scope s : now) {
                if (user.startsWith(s.prefix)) {
                    return new PeerLostException(s.reason + "; this wait of rank " + waitingRank + " for '"
                            + GroupState.shorten(keys.get(index)) + "' ended with it", s.rank, null);
                }
            }
        }
        return null;
    }
}
