package dev.ar4j.internal.peer;

import dev.ar4j.OutOfStepException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * What each rank tells the others at init: where it runs (host identity, process id), which GPU
 * it drives (ordinal and PCI bus id), and whether that GPU can reach each other rank's GPU.
 * Serialised with a version byte and length-checked strings.
 */
public record PeerInfo(String hostId, long pid, int device, String pciBusId) {

    private static final byte VERSION = 1;

    public byte[] toBytes() {
        byte[] host = hostId.getBytes(StandardCharsets.UTF_8);
        byte[] bus = pciBusId.getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocate(1 + 4 + host.length + 8 + 4 + 4 + bus.length)
                .put(VERSION).putInt(host.length).put(host).putLong(pid).putInt(device).putInt(bus.length).put(bus)
                .array();
    }

    public static PeerInfo fromBytes(byte[] bytes, int fromRank) {
        try {
            ByteBuffer b = ByteBuffer.wrap(bytes);
            byte version = b.get();
            if (version != VERSION) {
                throw new OutOfStepException("rank " + fromRank + " speaks peer-info version " + version
                        + ", this rank " + VERSION + "; run the same ar4j version on every rank");
            }
            String host = string(b, fromRank);
            long pid = b.getLong();
            int device = b.getInt();
            String bus = string(b, fromRank);
            return new PeerInfo(host, pid, device, bus);
        } catch (java.nio.BufferUnderflowException e) {
            throw new OutOfStepException("rank " + fromRank + " sent a truncated peer-info record ("
                    + bytes.length + " bytes)", e);
        }
    }

    private static String string(ByteBuffer b, int fromRank) {
        int n = b.getInt();
        if (n < 0 || n > b.remaining() || n > 4096) {
            throw new OutOfStepException("rank " + fromRank + " sent a malformed peer-info string length " + n);
        }
        byte[] s = new byte[n];
        b.get(s);
        return new String(s, StandardCharsets.UTF_8);
    }
}
