package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.*;

import java.io.IOException;

/**
 * A rank of a {@link TcpRendezvousServer} group that joins (handshake, no heartbeats) and can then
 * drop its connection without goodbye, so that the server reports it lost: for tests outside this
 * package that need a real rank loss over TCP in one JVM.
 */
public final class DroppableRank implements AutoCloseable {

    private final WireClient client;

    private DroppableRank(WireClient client) {
        this.client = client;
    }

    /**
     * Joins {@code server}'s group as {@code rank} with the job token of this process.
     *
     * @param server the server, started with {@link JobToken#fromSystem()}
     * @param rank the rank to claim
     * @return the joined rank
     * @throws IOException if the connection fails
     */
    public static DroppableRank join(TcpRendezvousServer server, int rank) throws IOException {
        return new DroppableRank(WireClient.joined(server, rank, JobToken.fromSystem()));
    }

    /** Drops the connection without goodbye: the server reports the rank lost. */
    public void drop() {
        client.close();
    }

    @Override
    public void close() {
        drop();
    }
}
