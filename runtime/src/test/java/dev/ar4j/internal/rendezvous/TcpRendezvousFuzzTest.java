package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.*;

import dev.ar4j.rendezvous.RendezvousSettings;
import dev.ar4j.internal.rendezvous.RendezvousProtocol.Frame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * At least 100,000 fuzzed frames in at most 30 s, then a real group of 16 ranks forms on the
 * fuzzed server: 0 crashes, 0 exceptions escaping any thread, a bounded heap. Frames come in two
 * phases: strangers before the handshake (random bytes, truncated, oversized, bit-flipped and
 * valid-prefix frames, one connection each), and authenticated ranks of a second server sending
 * random well-formed and then a malformed frame on each connection. Seeded: a failure replays.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class TcpRendezvousFuzzTest {

    private static final long SEED = 0x5eed_0a4_2026L;
    private static final JobToken TOKEN = JobToken.of("fuzz-test-secret");
    private static final int TARGET_FRAMES = 100_000;
    private static final int STRANGER_CONNECTIONS = 12_000;
    private static final int FUZZ_SESSIONS = 200;
    private static final int FRAMES_PER_SESSION = 450;

    private final ConcurrentLinkedQueue<Throwable> escaped = new ConcurrentLinkedQueue<>();

    private static RendezvousSettings settings() {
        return RendezvousSettings.resolve(new Properties(), Map.of())
                .withHandshakeTimeout(Duration.ofSeconds(2)).withQuota(10_000, 1 << 20);
    }

    @Test
    void fuzzedFramesCrashNothingAndA16RankGroupFormsAfterwards() throws Exception {
        Thread.UncaughtExceptionHandler previous = Thread.getDefaultUncaughtExceptionHandler();
        Thread.setDefaultUncaughtExceptionHandler((t, e) -> escaped.add(e));
        try (TcpRendezvousServer server = TcpRendezvousServer.start(
                new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 16, TOKEN, settings());
             TcpRendezvousServer ranked = TcpRendezvousServer.start(
                     new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), FUZZ_SESSIONS + 16, TOKEN, settings())) {
            long start = System.nanoTime();
            long strangerFrames = strangers(server);
            long sessionFrames = authenticatedRanks(ranked);
            long elapsed = System.nanoTime() - start;
            long frames = strangerFrames + sessionFrames;
            System.gc();
            long heapUsed = Runtime.getRuntime().totalMemory() - Runtime.getRuntime().freeMemory();
            TcpRendezvousAttackTest.measured("fuzz: " + strangerFrames + " stranger frames + " + sessionFrames
                    + " authenticated frames (seed " + Long.toHexString(SEED) + ")", frames + " frames, "
                    + (STRANGER_CONNECTIONS + FUZZ_SESSIONS) + " connections", "0 crashes, 0 escaped, heap "
                    + (heapUsed >> 20) + " MiB after GC, 16-rank group formed", elapsed);
            assertTrue(frames >= TARGET_FRAMES, "only " + frames + " frames");
            assertTrue(elapsed <= TimeUnit.SECONDS.toNanos(30), "fuzzing took " + elapsed / 1_000_000 + " ms");
            assertTrue(heapUsed < 256L << 20, "heap after GC " + (heapUsed >> 20) + " MiB");
            assertTrue(server.framesRead() >= strangerFrames / 2, "the server read only " + server.framesRead() + " frames");
            groupOf16Forms(server);
            assertTrue(escaped.isEmpty(), () -> escaped.size() + " exceptions escaped, first: " + escaped.peek());
        } finally {
            Thread.setDefaultUncaughtExceptionHandler(previous);
        }
    }

    /** One fuzzed frame (two for valid-prefix) per connection, by 8 threads; returns the frames sent. */
    private long strangers(TcpRendezvousServer server) throws Exception {
        AtomicLong frames = new AtomicLong();
        AtomicInteger next = new AtomicInteger();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 8; t++) {
            SplittableRandom random = new SplittableRandom(SEED + t);
            threads.add(Thread.ofVirtual().start(() -> {
                while (next.getAndIncrement() < STRANGER_CONNECTIONS) {
                    try {
                        frames.addAndGet(oneStranger(server, random));
                    } catch (IOException e) {
                        // The server may reset a connection it refused; that is an outcome, not a failure.
                    } catch (Throwable e) {
                        escaped.add(e);
                    }
                }
            }));
        }
        for (Thread thread : threads) {
            assertTrue(thread.join(Duration.ofSeconds(60)), "a stranger thread hung");
        }
        return frames.get();
    }

    private static long oneStranger(TcpRendezvousServer server, SplittableRandom random) throws IOException {
        try (Socket socket = new Socket(server.address().getAddress(), server.port())) {
            socket.setSoTimeout(5_000);
            byte[] hello = WireClient.frame(RendezvousProtocol.HELLO, RendezvousProtocol.hello(random.nextInt(20), 16,
                    random.nextLong(), RendezvousAuth.nonce()));
            int kind = random.nextInt(5);
            byte[] bytes = switch (kind) {
                case 0 -> randomBytes(random, 1 + random.nextInt(64));
                case 1 -> java.util.Arrays.copyOf(hello, random.nextInt(hello.length));
                case 2 -> ByteBuffer.allocate(10).putInt(RendezvousProtocol.MAGIC).put(RendezvousProtocol.VERSION)
                        .put((byte) random.nextInt(256)).putInt(65 + random.nextInt(Integer.MAX_VALUE - 65)).array();
                case 3 -> flipBits(hello, random);
                default -> hello;
            };
            socket.getOutputStream().write(bytes);
            long sent = 1;
            if (kind == 4) {
                readFrameOrEnd(socket);
                byte[] proof = random.nextBoolean() ? randomBytes(random, 32) : randomBytes(random, random.nextInt(40));
                socket.getOutputStream().write(WireClient.frame(
                        random.nextInt(8) == 0 ? random.nextInt(256) : RendezvousProtocol.AUTH, proof));
                sent++;
            }
            socket.shutdownOutput();
            drain(socket.getInputStream());
            return sent;
        }
    }

    /** Authenticated ranks send random well-formed frames, then one malformed frame each; returns frames sent. */
    private long authenticatedRanks(TcpRendezvousServer server) throws Exception {
        AtomicLong frames = new AtomicLong();
        AtomicInteger next = new AtomicInteger(16);
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            SplittableRandom random = new SplittableRandom(SEED * 31 + t);
            threads.add(Thread.ofVirtual().start(() -> {
                int rank;
                while ((rank = next.getAndIncrement()) < FUZZ_SESSIONS + 16) {
                    try (WireClient client = WireClient.joined(server, rank, TOKEN)) {
                        frames.addAndGet(fuzzSession(client, rank, random));
                    } catch (java.net.SocketTimeoutException e) {
                        escaped.add(new AssertionError("fuzzing rank " + rank + " got no reply", e));
                    } catch (IOException e) {
                        // A reset after the final malformed frame is an outcome, not a failure.
                    } catch (Throwable e) {
                        escaped.add(e);
                    }
                }
            }));
        }
        for (Thread thread : threads) {
            assertTrue(thread.join(Duration.ofSeconds(60)), () -> "a fuzzing rank hung; escaped: " + escaped);
        }
        return frames.get();
    }

    private static long fuzzSession(WireClient client, int rank, SplittableRandom random) throws IOException {
        long sent = 0;
        for (int i = 0; i < FRAMES_PER_SESSION; i++) {
            int owner = random.nextInt(4) == 0 ? random.nextInt(FUZZ_SESSIONS + 16) : rank;
            String key = (random.nextInt(10) == 0 ? "*" : Integer.toString(owner)) + "/" + random.nextInt(1_000);
            int kind = random.nextInt(3);
            switch (kind) {
                case 0 -> client.send(RendezvousProtocol.SET, RendezvousProtocol.set(key, randomBytes(random, random.nextInt(64))));
                case 1 -> client.send(RendezvousProtocol.GET, RendezvousProtocol.get(0, List.of(key)));
                default -> client.send(RendezvousProtocol.HEARTBEAT, new byte[0]);
            }
            sent++;
            if (kind != 2) {
                // Heartbeats have no reply; a SET or GET has exactly one: OK, TIMEOUT or a refusal that keeps the session.
                Frame reply;
                try {
                    reply = client.receive();
                } catch (java.net.SocketTimeoutException e) {
                    throw new AssertionError("no reply to frame " + i + " kind " + kind + " key " + key, e);
                }
                assertTrue(reply != null, "the server closed a fuzz session after a well-formed frame");
            }
        }
        // The final frame is malformed: bit-flipped MAC, oversized or an unknown type.
        switch (random.nextInt(3)) {
            case 0 -> client.sendRaw(WireClient.frame(RendezvousProtocol.SET, randomBytes(random, 40)));
            case 1 -> client.sendRaw(ByteBuffer.allocate(10).putInt(RendezvousProtocol.MAGIC)
                    .put(RendezvousProtocol.VERSION).put(RendezvousProtocol.SET).putInt(Integer.MAX_VALUE).array());
            default -> client.send((byte) (0x40 + random.nextInt(64)), randomBytes(random, random.nextInt(16)));
        }
        sent++;
        Frame last = client.receive();
        assertTrue(last == null || last.type() == RendezvousProtocol.ERROR, "a malformed frame was answered with "
                + RendezvousProtocol.typeName(last.type()));
        return sent;
    }

    private void groupOf16Forms(TcpRendezvousServer server) throws Exception {
        List<Future<byte[][]>> results = new ArrayList<>();
        List<TcpRendezvous> ranks = new ArrayList<>();
        try (var pool = java.util.concurrent.Executors.newVirtualThreadPerTaskExecutor()) {
            for (int r = 0; r < 16; r++) {
                int rank = r;
                results.add(pool.submit(() -> {
                    TcpRendezvous rendezvous = TcpRendezvous.builder().rank(rank).worldSize(16).serve(false)
                            .serverPort(server.port()).token(TOKEN).connectTimeout(Duration.ofSeconds(10))
                            .closeLinger(Duration.ZERO).connect();
                    synchronized (ranks) {
                        ranks.add(rendezvous);
                    }
                    return rendezvous.allGather("after-fuzz", new byte[] {(byte) rank}, Duration.ofSeconds(20));
                }));
            }
            byte[][] expected = new byte[16][];
            for (int r = 0; r < 16; r++) {
                expected[r] = new byte[] {(byte) r};
            }
            for (Future<byte[][]> result : results) {
                assertArrayEquals(expected, result.get(30, TimeUnit.SECONDS));
            }
        } finally {
            for (TcpRendezvous rendezvous : ranks) {
                rendezvous.close();
            }
        }
        assertEquals(16, ranks.size());
    }

    private static byte[] randomBytes(SplittableRandom random, int length) {
        byte[] bytes = new byte[length];
        random.nextBytes(bytes);
        return bytes;
    }

    private static byte[] flipBits(byte[] frame, SplittableRandom random) {
        byte[] copy = frame.clone();
        for (int i = 0, n = 1 + random.nextInt(3); i < n; i++) {
            int bit = random.nextInt(copy.length * 8);
            copy[bit / 8] ^= (byte) (1 << (bit % 8));
        }
        return copy;
    }

    private static void readFrameOrEnd(Socket socket) throws IOException {
        byte[] header = new byte[RendezvousProtocol.HEADER_BYTES + RendezvousProtocol.NONCE_BYTES];
        socket.getInputStream().readNBytes(header, 0, header.length);
    }

    private static void drain(InputStream in) throws IOException {
        byte[] sink = new byte[256];
        while (in.read(sink) >= 0) {
            // until the server closes
        }
    }
}
