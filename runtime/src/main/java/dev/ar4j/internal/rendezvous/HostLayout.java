package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.Rendezvous;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Which ranks share a host, from every rank's {@link HostIdentity}. Hosts are numbered in the
 * order of their lowest rank, so every rank computes the same numbering.
 */
public final class HostLayout {

    private final List<HostIdentity> hostOfRank;
    private final int[] hostIndexOfRank;
    private final List<List<Integer>> ranksOfHost;

    private HostLayout(List<HostIdentity> hostOfRank) {
        this.hostOfRank = List.copyOf(hostOfRank);
        this.hostIndexOfRank = new int[hostOfRank.size()];
        Map<HostIdentity, List<Integer>> byHost = new LinkedHashMap<>();
        for (int rank = 0; rank < hostOfRank.size(); rank++) {
            byHost.computeIfAbsent(hostOfRank.get(rank), h -> new ArrayList<>()).add(rank);
        }
        List<List<Integer>> groups = new ArrayList<>();
        for (List<Integer> ranks : byHost.values()) {
            for (int rank : ranks) {
                hostIndexOfRank[rank] = groups.size();
            }
            groups.add(List.copyOf(ranks));
        }
        this.ranksOfHost = List.copyOf(groups);
    }

    /**
     * The layout of the given identities, element {@code r} being rank {@code r}'s host.
     *
     * @param hostOfRank every rank's host, indexed by rank; copied
     * @return the layout
     * @throws IllegalArgumentException if the list is empty
     * @throws NullPointerException if {@code hostOfRank} is {@code null} or holds {@code null}
     */
    public static HostLayout of(List<HostIdentity> hostOfRank) {
        Objects.requireNonNull(hostOfRank, "hostOfRank");
        if (hostOfRank.isEmpty()) {
            throw new IllegalArgumentException("a host layout needs at least one rank");
        }
        return new HostLayout(hostOfRank);
    }

    /**
     * All-gathers {@link HostIdentity#local()} under {@code key} and returns the layout. Every rank
     * must call it with the same key.
     *
     * @param rendezvous the group's rendezvous
     * @param key the all-gather's key, the same on every rank
     * @param timeout how long to wait for the other ranks; positive
     * @return the layout, the same on every rank
     * @throws RendezvousTimeoutException naming the ranks that did not take part in time
     * @throws IllegalArgumentException   if a rank sent something that is not a host identity
     * @throws dev.ar4j.PeerLostException if a rank is lost before it took part
     */
    public static HostLayout exchange(Rendezvous rendezvous, String key, Duration timeout) {
        byte[][] gathered = rendezvous.allGather(key, HostIdentity.local().toBytes(), timeout);
        List<HostIdentity> hosts = new ArrayList<>(gathered.length);
        for (int rank = 0; rank < gathered.length; rank++) {
            try {
                hosts.add(HostIdentity.fromBytes(gathered[rank]));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("rank " + rank + " sent no host identity under '" + key + "': "
                        + e.getMessage(), e);
            }
        }
        return new HostLayout(hosts);
    }

    /**
     * How many ranks the layout covers.
     *
     * @return the number of ranks, at least 1
     */
    public int worldSize() {
        return hostOfRank.size();
    }

    /**
     * How many distinct hosts the ranks run on.
     *
     * @return the number of hosts, 1 to {@link #worldSize()}
     */
    public int hostCount() {
        return ranksOfHost.size();
    }

    /**
     * Whether all ranks run on one host.
     *
     * @return {@code true} if there is one host
     */
    public boolean isSingleHost() {
        return ranksOfHost.size() == 1;
    }

    /**
     * The host of {@code rank}.
     *
     * @param rank a rank, 0 to {@link #worldSize()} - 1
     * @return that rank's host identity
     * @throws IndexOutOfBoundsException if {@code rank} is out of range
     */
    public HostIdentity host(int rank) {
        return hostOfRank.get(checkRank(rank));
    }

    /**
     * The index of {@code rank}'s host, 0 for the host of rank 0.
     *
     * @param rank a rank, 0 to {@link #worldSize()} - 1
     * @return the host's index, 0 to {@link #hostCount()} - 1
     * @throws IndexOutOfBoundsException if {@code rank} is out of range
     */
    public int hostIndex(int rank) {
        return hostIndexOfRank[checkRank(rank)];
    }

    /**
     * The ranks on host {@code hostIndex}, ascending.
     *
     * @param hostIndex a host index, 0 to {@link #hostCount()} - 1
     * @return an unmodifiable list of the host's ranks, never empty
     * @throws IndexOutOfBoundsException if {@code hostIndex} is out of range
     */
    public List<Integer> ranksOnHost(int hostIndex) {
        if (hostIndex < 0 || hostIndex >= ranksOfHost.size()) {
            throw new IndexOutOfBoundsException("host index " + hostIndex + " is out of range; there are "
                    + ranksOfHost.size() + " hosts");
        }
        return ranksOfHost.get(hostIndex);
    }

    /**
     * The ranks on {@code rank}'s host, itself included, ascending.
     *
     * @param rank a rank, 0 to {@link #worldSize()} - 1
     * @return an unmodifiable list of the ranks on the same host
     * @throws IndexOutOfBoundsException if {@code rank} is out of range
     */
    public List<Integer> ranksSharingHostWith(int rank) {
        return ranksOfHost.get(hostIndex(rank));
    }

    /**
     * {@code rank}'s position among the ranks of its host.
     *
     * @param rank a rank, 0 to {@link #worldSize()} - 1
     * @return the local index, 0 to the number of ranks on the host - 1 (the local rank)
     * @throws IndexOutOfBoundsException if {@code rank} is out of range
     */
    public int localIndex(int rank) {
        return ranksSharingHostWith(rank).indexOf(rank);
    }

    private int checkRank(int rank) {
        if (rank < 0 || rank >= hostOfRank.size()) {
            throw new IndexOutOfBoundsException("rank " + rank + " is out of range for world size " + hostOfRank.size());
        }
        return rank;
    }

    @Override
    public String toString() {
        StringBuilder text = new StringBuilder("HostLayout[");
        for (int h = 0; h < ranksOfHost.size(); h++) {
            if (h > 0) {
                text.append("; ");
            }
            List<Integer> ranks = ranksOfHost.get(h);
            text.append(hostOfRank.get(ranks.getFirst()).hostname()).append(": ")
                    .append(StoreBackedRendezvous.describeRanks(ranks));
        }
        return text.append(']').toString();
    }
}
