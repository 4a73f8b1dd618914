package dev.ar4j.internal.peer;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

/**
 * Opaque stand-ins for CUDA IPC, so the exchange protocol can be tested across processes with
 * no GPU. Rank r owns two "allocations" of 1 MiB at {@link #base(int, int)}; a handle is 64
 * bytes derived from (rank, allocation); opening a handle "maps" it at {@link #mappedBase}.
 */
final class FakeIpc {

    static final long ALLOCATION_BYTES = 1 << 20;

    final List<String> events = Collections.synchronizedList(new ArrayList<>());  // both ranks' threads open

    static long base(int rank, int allocation) {
        return 0x10_0000_0000L * (rank + 1) + allocation * 0x1000_0000L;
    }

    static byte[] handle(int rank, int allocation) {
        byte[] h = new byte[64];
        for (int i = 0; i < 64; i++) {
            h[i] = (byte) (rank * 31 + allocation * 7 + i * 13);
        }
        return h;
    }

    static long mappedBase(byte[] handle) {
        return 0x7f00_0000_0000L + ((long) Arrays.hashCode(handle) & 0xffff_ffffL) * 0x1000;
    }

    IpcPeerMemory.Exporter exporter(int rank) {
        return (pointer, offsetOut) -> {
            for (int a = 0; a < 2; a++) {
                long base = base(rank, a);
                if (pointer >= base && pointer < base + ALLOCATION_BYTES) {
                    offsetOut[0] = pointer - base;
                    return handle(rank, a);
                }
            }
            throw new IllegalArgumentException("not a fake allocation: " + Long.toHexString(pointer));
        };
    }

    IpcPeerMemory.Opener opener() {
        return handle -> {
            long base = mappedBase(handle);
            events.add("open " + Long.toHexString(base));
            return new IpcPeerMemory.Mapping() {
                @Override
                public long base() {
                    return base;
                }

                @Override
                public long size() {
                    return ALLOCATION_BYTES;
                }

                @Override
                public void close() {
                    events.add("close " + Long.toHexString(base));
                }
            };
        };
    }
}
