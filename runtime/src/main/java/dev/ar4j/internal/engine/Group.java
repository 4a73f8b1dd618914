package dev.ar4j.internal.engine;

import dev.ar4j.OutOfStepException;
import dev.ar4j.cuda.Cuda;
import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.cuda.P2PAttribute;
import dev.ar4j.dispatch.Topology;
import dev.ar4j.internal.peer.PeerInfo;
import dev.ar4j.internal.peer.PeerMemory;
import dev.ar4j.internal.rendezvous.HostIdentity;
import dev.ar4j.rendezvous.Rendezvous;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Group setup and the buffers every rank shares: the rendezvous (and the sequence of its
 * collective keys), the peer-info exchange, the link probe that yields the {@link Topology}, and
 * the signal block and staging buffer shared through {@link PeerMemory}. Owns the shared buffers
 * and the peer mappings; owns the rendezvous only when the communicator made it.
 */
final class Group {

    final Rendezvous rendezvous;
    final boolean ownsRendezvous;
    final Duration timeout;
    final int rank;
    final int worldSize;
    final int device;
    final List<PeerInfo> peers;
    final boolean sameProcess;
    final Topology topology;
    private int sequence;
    // Shared buffers; null until openSharedBuffers (and when the topology rules the kernels out).
    private PeerMemory peerMemory;
    private DeviceBuffer signal;
    private DeviceBuffer staging;
    private SharedBufferLease lease;  // ranks of one process: their buffers outlive every rank's close
    private final java.util.concurrent.atomic.AtomicBoolean rendezvousClosed = new java.util.concurrent.atomic.AtomicBoolean();
    private volatile Settings childSettings;  // what a split's children inherit; see ChildSettings

    private Group(Rendezvous rendezvous, boolean ownsRendezvous, Duration timeout, int device, List<PeerInfo> peers,
                  boolean sameProcess, Topology topology) {
        this.rendezvous = rendezvous;
        this.ownsRendezvous = ownsRendezvous;
        this.timeout = timeout;
        this.rank = rendezvous.rank();
        this.worldSize = rendezvous.worldSize();
        this.device = device;
        this.peers = peers;
        this.sameProcess = sameProcess;
        this.topology = topology;
    }

    /**
     * Makes {@code device} current, exchanges peer records and probes the links: collective.
     * Closes nothing on failure (the caller owns the rendezvous until this returns).
     */
    static Group join(Rendezvous rendezvous, boolean ownsRendezvous, Duration timeout, int device,
                      Boolean p2pOverride, Boolean nvlinkOverride) {
        Cuda.setDevice(device);
        Sequence keys = new Sequence();
        List<PeerInfo> peers = exchangePeerInfo(rendezvous, keys, timeout, device);
        boolean singleHost = peers.stream().map(PeerInfo::hostId).distinct().count() == 1;
        boolean sameProcess = singleHost && peers.stream().map(PeerInfo::pid).distinct().count() == 1;
        boolean[] links = singleHost ? probeLinks(rendezvous, keys, timeout, device, peers, sameProcess)
                : new boolean[] {false, false};
        boolean p2p = p2pOverride != null ? p2pOverride : links[0];
        boolean nvlink = nvlinkOverride != null ? nvlinkOverride : links[1];
        Topology topology = new Topology(rendezvous.worldSize(), nvlink, p2p, singleHost);
        Group g = new Group(rendezvous, ownsRendezvous, timeout, device, peers, sameProcess, topology);
        g.sequence = keys.next;
        return g;
    }

    /** A fresh key for the next collective rendezvous step; every rank draws them in the same order. */
    String key(String what) {
        return "ar4j/comm/" + what + "/" + (sequence++);
    }

    /** Keeps the settings the children of a {@code Communicator.split} inherit (set once, at build). */
    void inheritSettings(Settings snapshot) {
        this.childSettings = snapshot;
    }

    /** The settings a child inherits ({@link ChildSettings}). */
    Settings childSettings() {
        Settings s = childSettings;
        if (s == null) {
            throw new IllegalStateException("rank " + rank + ": this group kept no settings for a split");
        }
        return ChildSettings.copy(s);
    }

    /** The kernels are set up whenever the topology allows them, whatever the policy: per-call policies may use them. */
    boolean customKernelsPossible() {
        boolean ws = worldSize == 2 || worldSize == 4 || worldSize == 6 || worldSize == 8;
        return ws && topology.singleHost() && topology.p2pAllPairs();
    }

    /** How many ranks of the group drive this rank's GPU (including this one): they share its SMs. */
    int ranksOnThisGpu() {
        String mine = peers.get(rank).hostId() + "/" + peers.get(rank).pciBusId();
        int n = 0;
        for (PeerInfo p : peers) {
            if ((p.hostId() + "/" + p.pciBusId()).equalsIgnoreCase(mine)) {
                n++;
            }
        }
        return n;
    }

    /** The most ranks any one GPU of the group carries (the same answer on every rank). */
    int maxRanksPerGpu() {
        int most = 1;
        for (PeerInfo p : peers) {
            int n = 0;
            for (PeerInfo q : peers) {
                if ((q.hostId() + "/" + q.pciBusId()).equalsIgnoreCase(p.hostId() + "/" + p.pciBusId())) {
                    n++;
                }
            }
            most = Math.max(most, n);
        }
        return most;
    }

    /**
     * Allocates the signal block and the staging buffer and shares both (collective).
     *
     * @return {signal pointers per rank, staging pointers per rank}
     */
    long[][] openSharedBuffers(long signalBytes, long stagingBytes) {
        if (sameProcess) {
            for (PeerInfo peer : peers) {
                if (peer.device() != device) {
                    Cuda.enablePeerAccess(peer.device());
                }
            }
        }
        peerMemory = PeerMemory.create(sameProcess, rendezvous, timeout);
        signal = DeviceBuffer.allocate(signalBytes);
        signal.fill(0);
        staging = DeviceBuffer.allocate(stagingBytes);
        Cuda.deviceSynchronize();
        long[][] shared = peerMemory.exchange(new long[] {signal.address(), staging.address()},
                new long[] {signalBytes, stagingBytes});
        if (sameProcess) {
            lease = SharedBufferLease.join(shared[0]);
        }
        return shared;
    }

    /** Shares buffers with every rank (collective); see {@link PeerMemory#exchange}. */
    long[][] share(long[] pointers, long[] bytes) {
        return peerMemory.exchange(pointers, bytes);
    }

    /**
     * The collective step of an unregister: every rank says how large its buffer is and whether
     * it is registered there; any disagreement is refused on every rank alike (so the group stays
     * in step).
     *
     * @throws IllegalArgumentException naming the first rank that disagrees
     */
    void agreeUnregister(long bytes, boolean registeredHere) {
        byte[][] all = rendezvous.allGather(key("unregister"),
                java.nio.ByteBuffer.allocate(9).putLong(bytes).put((byte) (registeredHere ? 1 : 0)).array(), timeout);
        for (int r = 0; r < all.length; r++) {
            if (all[r].length != 9) {
                throw new OutOfStepException("rank " + r + " sent a malformed unregister record (" + all[r].length
                        + " bytes); run the same ar4j version on every rank");
            }
            java.nio.ByteBuffer rec = java.nio.ByteBuffer.wrap(all[r]);
            long size = rec.getLong();
            boolean registered = rec.get() != 0;
            if (size != bytes) {
                throw new IllegalArgumentException("unregister refused on every rank: rank " + r + " unregisters "
                        + size + " bytes, rank " + rank + " " + bytes + "; unregister the buffers registered before, "
                        + "in the same order");
            }
            if (!registered) {
                throw new IllegalArgumentException("unregister refused on every rank: rank " + r + " has no such "
                        + "registered buffer (" + bytes + " bytes); unregister each registered buffer once, in the "
                        + "same order on every rank");
            }
        }
    }

    /**
     * A collective yes/no: every rank says whether it must refuse the step {@code what}.
     *
     * @return the lowest rank that refuses, or -1 when none does (the same answer on every rank)
     */
    int agreeOnRefusal(String what, boolean refuseHere) {
        byte[][] all = rendezvous.allGather(key(what + "-refusal"), new byte[] {(byte) (refuseHere ? 1 : 0)}, timeout);
        for (int r = 0; r < all.length; r++) {
            if (all[r].length != 1) {
                throw new OutOfStepException("rank " + r + " sent a malformed " + what + " record; run the same "
                        + "ar4j version on every rank");
            }
            if (all[r][0] != 0) {
                return r;
            }
        }
        return -1;
    }

    /** This rank's staging buffer; null when the kernels are not set up. */
    DeviceBuffer staging() {
        return staging;
    }

    /**
     * Tells the group that this rank gave up ({@link Rendezvous#abortRank}): through the TCP and
     * in-process rendezvous the peers' rendezvous waits (register, capture close, a build's steps)
     * and this rank's own end at once, and the peers are told of a loss; a sub-group's view aborts
     * only its own scope. The custom kernels learn it from the poison word, NCCL from its abort.
     * The rendezvous is not closed here: its close says goodbye. Must not block (called from
     * {@code abort()}).
     */
    void announceAbort(String reason) {
        rendezvous.abortRank(reason);
    }

    /**
     * Frees the shared buffers and the peer mappings, once; failures are added to
     * {@code collector}. For ranks of one process the buffers are handed to their
     * {@link SharedBufferLease}, which frees them when the last rank of the group closed.
     */
    void closeSharedBuffers(Throwable collector) {
        if (lease != null) {
            Closing.quietly(collector, peerMemory);
            lease.release(collector, staging, signal);
            lease = null;
        } else {
            Closing.quietly(collector, peerMemory, staging, signal);
        }
        peerMemory = null;
        staging = null;
        signal = null;
    }

    /** Closes the rendezvous if the communicator made it, once. */
    void closeRendezvous(Throwable collector) {
        if (ownsRendezvous && rendezvousClosed.compareAndSet(false, true)) {
            Closing.quietly(collector, rendezvous);
        }
    }

    private static final class Sequence {
        int next;
    }

    private static List<PeerInfo> exchangePeerInfo(Rendezvous rendezvous, Sequence keys, Duration timeout, int device) {
        PeerInfo mine = new PeerInfo(HostIdentity.local().key(), ProcessHandle.current().pid(), device,
                Cuda.pciBusId(device));
        byte[][] all = rendezvous.allGather("ar4j/comm/peer-info/" + (keys.next++), mine.toBytes(), timeout);
        List<PeerInfo> peers = new ArrayList<>(all.length);
        for (int r = 0; r < all.length; r++) {
            peers.add(PeerInfo.fromBytes(all[r], r));
        }
        return peers;
    }

    /**
     * Probes this rank's links to every peer and all-gathers the rows: {p2p between every pair,
     * NVLink between every pair}. NVLink is inferred from native P2P atomics, which NVLink peers
     * support and PCIe peers do not (NVML is not needed). Ranks sharing one GPU reach each other's
     * memory directly. Ranks sharing one GPU reach each other's memory directly: P2P and NVLink
     * for the dispatcher (the kernels run there with a grid that leaves room for every rank, see
     * {@link CustomKernelPath#agreeGeometry}).
     */
    private static boolean[] probeLinks(Rendezvous rendezvous, Sequence keys, Duration timeout, int device,
                                        List<PeerInfo> peers, boolean sameProcess) {
        int rank = rendezvous.rank();
        byte[] row = new byte[peers.size()];
        for (int r = 0; r < peers.size(); r++) {
            if (r == rank) {
                row[r] = 3;
                continue;
            }
            int peerDevice = sameProcess ? peers.get(r).device() : localOrdinalOf(peers.get(r).pciBusId());
            if (peerDevice < 0) {
                row[r] = 0;
                continue;
            }
            if (peerDevice == device) {
                row[r] = 3;  // ranks sharing one GPU reach each other's memory directly
                continue;
            }
            boolean p2p = Cuda.canAccessPeer(device, peerDevice);
            boolean nvlink = p2p && Cuda.p2pAttribute(P2PAttribute.NATIVE_ATOMIC_SUPPORTED, device, peerDevice) == 1;
            row[r] = (byte) ((p2p ? 1 : 0) | (nvlink ? 2 : 0));
        }
        byte[][] rows = rendezvous.allGather("ar4j/comm/links/" + (keys.next++), row, timeout);
        boolean p2pAll = true;
        boolean nvlinkAll = true;
        for (byte[] r : rows) {
            for (byte v : r) {
                p2pAll &= (v & 1) != 0;
                nvlinkAll &= (v & 2) != 0;
            }
        }
        return new boolean[] {p2pAll, nvlinkAll};
    }

    private static int localOrdinalOf(String pciBusId) {
        int n = Cuda.deviceCount();
        for (int d = 0; d < n; d++) {
            if (Cuda.pciBusId(d).equalsIgnoreCase(pciBusId)) {
                return d;
            }
        }
        return -1;
    }
}
