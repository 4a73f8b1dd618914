package dev.ar4j.internal.engine;

import dev.ar4j.cuda.Cuda;
import dev.ar4j.internal.rendezvous.AbortSignal;
import dev.ar4j.internal.rendezvous.InProcessRendezvous;
import dev.ar4j.rendezvous.LaunchEnvironment;
import dev.ar4j.rendezvous.Rendezvous;
import dev.ar4j.internal.rendezvous.TcpRendezvous;

import java.util.Map;

/** Turns a builder's rank, world size and address (or the launcher's environment) into a TCP rendezvous. */
final class GroupRendezvous {

    private GroupRendezvous() {
    }

    /** The settings with the local rank resolved from the launch environment, and the rendezvous made. */
    record Connected(Settings settings, Rendezvous rendezvous) {
    }

    /** Connects (rank 0 serves); resolves the local rank from the launch environment. */
    static Connected connect(Settings b, AbortSignal abort) {
        LaunchEnvironment.Builder env = LaunchEnvironment.builder();
        if (b.rank() >= 0) {
            env.rank(b.rank());
        }
        if (b.worldSize() >= 0) {
            env.worldSize(b.worldSize());
        }
        boolean loopback = b.masterAddr() == null || b.masterAddr().equals("localhost") || b.masterAddr().startsWith("127.")
                || b.masterAddr().equals("::1");
        if (!b.fromEnvironment() && loopback && b.rank() >= 0 && b.worldSize() >= 1) {
            // One host: local rank = rank unless told otherwise.
            env.localRank(b.localRank() >= 0 ? b.localRank() : b.rank())
                    .localWorldSize(b.localWorldSize() >= 0 ? b.localWorldSize() : b.worldSize());
        } else {
            if (b.localRank() >= 0) {
                env.localRank(b.localRank());
            }
            if (b.localWorldSize() >= 0) {
                env.localWorldSize(b.localWorldSize());
            }
        }
        if (b.masterAddr() != null) {
            env.masterAddr(b.masterAddr()).masterPort(b.masterPort());
        }
        LaunchEnvironment launch;
        if (b.fromEnvironment()) {
            launch = b.environment() != null ? env.build(b.environment()) : env.build(System.getenv());
        } else {
            if (b.rank() < 0 || b.worldSize() < 1) {
                throw new IllegalArgumentException("set rank(..) and worldSize(..) (and masterAddress(..) for more "
                        + "than one rank), or call fromEnvironment(), or pass a rendezvous(..)");
            }
            launch = env.build(Map.of());
        }
        Settings resolved = b.localRank() < 0 ? b.withLocalRank(launch.localRank()) : b;
        // The GPU first: a rank that cannot drive its GPU fails now, with CUDA's reason, instead
        // of making the other ranks wait for it on the network until their rendezvous times out.
        requireDevice(resolved.resolvedDevice());
        return new Connected(resolved, rendezvousFor(launch, b.rendezvousTimeout(), abort));
    }

    /**
     * The rendezvous of {@code launch}: a world of one (fromEnvironment() without a launcher, or
     * worldSize(1)) meets nobody, so it gets an in-process one (no server, no port, no job token);
     * any other world a TCP rendezvous (rank 0 serves).
     */
    static Rendezvous rendezvousFor(LaunchEnvironment launch, java.time.Duration timeout, AbortSignal abort) {
        if (launch.worldSize() == 1) {
            return InProcessRendezvous.create(1).forRank(0);
        }
        return TcpRendezvous.connect(launch, timeout, abort);
    }

    /**
     * Checks that the CUDA driver is there, a GPU is visible and {@code device} is one of them, and
     * makes it current; before any network wait.
     *
     * @throws dev.ar4j.cuda.CudaException naming what is missing (the driver, any device, this ordinal)
     * @throws dev.ar4j.NativeLibraryException if the CUDA runtime cannot be loaded
     */
    static void requireDevice(int device) {
        Cuda.deviceCount();
        Cuda.setDevice(device);
    }
}
