package dev.ar4j.internal.rendezvous;

import dev.ar4j.OutOfStepException;
import dev.ar4j.rendezvous.Rendezvous;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Who joins which sub-group in a {@code Communicator.split}: every rank of the parent contributes
 * (color, key), the members of a color are ordered by (key, parent rank), and a member's sub-rank
 * is its index in that order. The same answer on every rank, since it is computed from the same
 * all-gathered records; a refusal (a color below -1) is refused on every rank alike, so the
 * parent stays in step.
 *
 * @param color     this rank's color, or {@link #NO_COLOR} when it joins no sub-group
 * @param subRank   this rank's index among its color's members, or -1 with {@link #NO_COLOR}
 * @param members   the parent ranks of the members, in sub-rank order (empty with {@link #NO_COLOR})
 * @param namespace the prefix of every parent key the sub-group uses: the parent's split step, the color and
 *                  a random number drawn by the color's first member, so that no two splits share a key even
 *                  when two communicators share one rendezvous
 */
public record SplitPlan(int color, int subRank, int[] members, String namespace) {

    /** The color of a rank that joins no sub-group. */
    static final int NO_COLOR = -1;
    private static final byte VERSION = 1;
    private static final int RECORD_BYTES = 17;

    public SplitPlan {
        members = members.clone();
    }

    @Override
    public int[] members() {
        return members.clone();
    }

    /** Whether this rank joins a sub-group. */
    public boolean joins() {
        return color != NO_COLOR;
    }

    /**
     * All-gathers (color, key, a random number) over {@code parent} under {@code stepKey} (collective over the
     * parent) and works out this rank's sub-group.
     *
     * @param stepKey the parent's fresh collective key of this split; also the root of the namespace
     * @throws IllegalArgumentException on every rank, if any rank gave a color below -1
     * @throws IllegalStateException if a rank sent a malformed record (another ar4j version)
     */
    public static SplitPlan agree(Rendezvous parent, String stepKey, int color, int key, Duration timeout) {
        byte[] mine = ByteBuffer.allocate(RECORD_BYTES).put(VERSION).putInt(color).putInt(key)
                .putLong(ThreadLocalRandom.current().nextLong()).array();
        byte[][] all = parent.allGather(stepKey, mine, timeout);
        int[] colors = new int[all.length];
        int[] keys = new int[all.length];
        long[] nonces = new long[all.length];
        for (int r = 0; r < all.length; r++) {
            if (all[r].length != RECORD_BYTES || all[r][0] != VERSION) {
                throw new OutOfStepException("split: rank " + r + " sent a malformed split record (" + all[r].length
                        + " bytes, version " + (all[r].length > 0 ? all[r][0] : -1) + "; expected " + RECORD_BYTES
                        + " bytes, version " + VERSION + "); run the same ar4j version on every rank");
            }
            ByteBuffer b = ByteBuffer.wrap(all[r], 1, RECORD_BYTES - 1);
            colors[r] = b.getInt();
            keys[r] = b.getInt();
            nonces[r] = b.getLong();
        }
        return of(colors, keys, nonces, parent.rank(), stepKey);
    }

    /**
     * The plan of parent rank {@code me}, given every rank's color, key and random number (index = parent rank).
     *
     * @throws IllegalArgumentException naming the lowest rank whose color is below -1
     */
    static SplitPlan of(int[] colors, int[] keys, long[] nonces, int me, String stepKey) {
        for (int r = 0; r < colors.length; r++) {
            if (colors[r] < NO_COLOR) {
                throw new IllegalArgumentException("split refused on every rank: rank " + r + " gave color "
                        + colors[r] + "; a color is 0 or more (the ranks of one color form one sub-communicator), "
                        + "or -1 to join none");
            }
        }
        int color = colors[me];
        if (color == NO_COLOR) {
            return new SplitPlan(NO_COLOR, -1, new int[0], "");
        }
        List<Integer> members = new ArrayList<>();
        for (int r = 0; r < colors.length; r++) {
            if (colors[r] == color) {
                members.add(r);
            }
        }
        members.sort(Comparator.<Integer>comparingInt(r -> keys[r]).thenComparingInt(r -> r));
        int[] ordered = members.stream().mapToInt(Integer::intValue).toArray();
        int subRank = members.indexOf(me);
        return new SplitPlan(color, subRank, ordered, stepKey + "/" + color + "/"
                + Long.toHexString(nonces[ordered[0]]) + "/");
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof SplitPlan p && p.color == color && p.subRank == subRank
                && Arrays.equals(p.members, members) && p.namespace.equals(namespace);
    }

    @Override
    public int hashCode() {
        return 31 * (31 * Integer.hashCode(color) + Arrays.hashCode(members)) + namespace.hashCode();
    }

    @Override
    public String toString() {
        return joins() ? "SplitPlan[color " + color + ", sub-rank " + subRank + " of " + members.length
                + ", parent ranks " + Arrays.toString(members) + ", namespace '" + namespace + "']"
                : "SplitPlan[no color]";
    }
}
