package dev.ar4j.examples.llama.text;

/**
 * The merge ranks of a BPE model: an open-addressing hash map from a pair of token ids (packed in a
 * long) to the merge's rank, with the keys mixed before hashing ({@code Long.hashCode} of a packed pair
 * is {@code a ^ b}, which collides for most pairs). Written once while loading, then read-only.
 */
final class PairRanks {

    private static final long EMPTY = -1L;

    private final long[] keys;
    private final int[] ranks;
    private final int mask;

    /** A map with room for {@code count} pairs. */
    PairRanks(int count) {
        int capacity = Integer.highestOneBit(Math.max(4, count) * 2 - 1) << 1;
        keys = new long[capacity];
        ranks = new int[capacity];
        mask = capacity - 1;
        java.util.Arrays.fill(keys, EMPTY);
    }

    /** The key of the pair (a, b), ids not negative. */
    static long pair(int a, int b) {
        return ((long) a << 32) | (b & 0xFFFFFFFFL);
    }

    /** Sets the rank of a pair, replacing an earlier one (a later duplicate merge wins, as in Hugging Face). */
    void put(long key, int rank) {
        int i = slot(key);
        while (keys[i] != EMPTY && keys[i] != key) {
            i = (i + 1) & mask;
        }
        keys[i] = key;
        ranks[i] = rank;
    }

    /** The rank of a pair, or -1 if it is not merged. */
    int get(long key) {
        int i = slot(key);
        while (true) {
            long k = keys[i];
            if (k == key) {
                return ranks[i];
            }
            if (k == EMPTY) {
                return -1;
            }
            i = (i + 1) & mask;
        }
    }

    private int slot(long key) {
        long h = key;
        h ^= h >>> 33;
        h *= 0xff51afd7ed558ccdL;
        h ^= h >>> 33;
        h *= 0xc4ceb9fe1a85ec53L;
        h ^= h >>> 33;
        return (int) h & mask;
    }
}
