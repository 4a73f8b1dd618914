package dev.ar4j.internal.rendezvous;

/**
 * The owner of a stored key. Every stored key starts with the rank that may write it, or with
 * {@code *} for the shared {@link Rendezvous#set}/{@link Rendezvous#get} keys any rank of the job
 * may write: {@code <rank>/<namespace>/...} or {@code *}{@code /kv/<user key>}. The server checks
 * that a SET names the connection's own rank and knows which rank a waiting read depends on.
 */
final class StoreKeys {
    /** The owner of a shared key. */
    static final int SHARED = -1;
    /** The prefix of a shared key. */
    static final String SHARED_PREFIX = "*/";

    private StoreKeys() {
    }

    static String owned(int rank, String rest) {
        return rank + "/" + rest;
    }

    static String shared(String rest) {
        return SHARED_PREFIX + rest;
    }

    /**
     * The rank that owns {@code key}, {@link #SHARED} for a shared key, or -2 if the key does not
     * start with an owner in {@code 0..worldSize-1} or {@code *}.
     */
    static int owner(String key, int worldSize) {
        if (key.startsWith(SHARED_PREFIX)) {
            return SHARED;
        }
        int slash = key.indexOf('/');
        if (slash < 1 || slash > 10) {
            return -2;
        }
        int rank = 0;
        for (int i = 0; i < slash; i++) {
            char c = key.charAt(i);
            if (c < '0' || c > '9' || (i == 0 && c == '0' && slash > 1)) {
                return -2;
            }
            rank = rank * 10 + (c - '0');
            if (rank >= worldSize) {
                return -2;
            }
        }
        return rank;
    }

    /**
     * The user's part of a stored key: what follows {@code <owner>/<operation>/<use>/}, or
     * {@code *}{@code /kv/} for a shared key; a key of another shape is returned whole.
     */
    static String userKey(String storeKey) {
        if (storeKey.startsWith(SHARED_PREFIX + "kv/")) {
            return storeKey.substring(SHARED_PREFIX.length() + 3);
        }
        int at = -1;
        for (int i = 0; i < 3; i++) {
            at = storeKey.indexOf('/', at + 1);
            if (at < 0) {
                return storeKey;
            }
        }
        return storeKey.substring(at + 1);
    }
}
