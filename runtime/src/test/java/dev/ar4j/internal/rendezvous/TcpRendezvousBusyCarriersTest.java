package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.RendezvousSettings;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The server keeps its heartbeats and answers while the serving JVM's application occupies every
 * carrier of the virtual-thread scheduler, as an LLM engine whose virtual threads sit in long
 * native calls does: the server's liveness runs on platform threads of its own.
 *
 * <p>Seven ranks (threads of this JVM, as in a serving rank's process) have published their keys
 * and wait for rank 0's; then as many virtual threads as the scheduler has carriers spin, or sit in
 * a blocking native call through FFM, for three heartbeat timeouts; when they end rank 0 publishes
 * and every rank must complete, no rank reported lost. On a server whose threads are virtual the
 * server sends nothing while the carriers are taken and every waiting rank fails with "nothing
 * heard from the server".
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TcpRendezvousBusyCarriersTest {

    private static final JobToken TOKEN = JobToken.of("busy-carriers-test");
    private static final Duration HEARTBEAT_TIMEOUT = Duration.ofMillis(600);
    private static final RendezvousSettings SETTINGS = RendezvousSettings.resolve(new Properties(), java.util.Map.of())
            .withHeartbeat(Duration.ofMillis(100), HEARTBEAT_TIMEOUT);
    private static final int WORLD = 8;
    private static final Duration WAIT = Duration.ofSeconds(30);

    /** How the application occupies a carrier. */
    enum Occupation {
        /** A CPU-bound loop: a virtual thread that never parks. */
        SPIN,
        /** A blocking native call through FFM ({@code poll(NULL, 0, ms)}), which pins the carrier. */
        NATIVE_CALL
    }

    @ParameterizedTest
    @EnumSource(Occupation.class)
    void theGroupSurvivesWhileTheApplicationOccupiesEveryCarrier(Occupation occupation) throws Exception {
        try (TcpRendezvousServer server = TcpRendezvousServer.start(
                new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), WORLD, TOKEN, SETTINGS)) {
            ConcurrentLinkedQueue<String> losses = new ConcurrentLinkedQueue<>();
            server.onPeerLost((rank, reason) -> losses.add("server: rank " + rank + ": " + reason));
            ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
            CountDownLatch published = new CountDownLatch(WORLD - 1);
            CountDownLatch carriersFree = new CountDownLatch(1);
            List<Thread> ranks = new ArrayList<>();
            for (int r = 0; r < WORLD; r++) {
                int rank = r;
                ranks.add(Thread.ofPlatform().name("busy-carriers-rank-" + r).start(() -> {
                    try (TcpRendezvous rendezvous = TcpRendezvous.builder().rank(rank).worldSize(WORLD).serve(false)
                            .serverPort(server.port()).token(TOKEN).settings(SETTINGS).connectTimeout(WAIT)
                            .closeLinger(Duration.ZERO).connect()) {
                        rendezvous.onPeerLost((lost, reason) -> losses.add("rank " + rank + " heard: " + reason));
                        if (rank == 0) {
                            carriersFree.await();
                            rendezvous.set("go", "go".getBytes(StandardCharsets.UTF_8));
                        } else {
                            rendezvous.set("ready-" + rank, new byte[] {(byte) rank});
                            published.countDown();
                            assertArrayEquals("go".getBytes(StandardCharsets.UTF_8), rendezvous.get("go", WAIT));
                        }
                        rendezvous.barrier("after", WAIT);
                    } catch (Throwable failure) {
                        failures.add(failure);
                    }
                }));
            }
            assertTrue(published.await(30, TimeUnit.SECONDS), "the ranks did not publish: " + failures);
            occupyEveryCarrier(occupation, HEARTBEAT_TIMEOUT.multipliedBy(3));
            carriersFree.countDown();
            for (Thread rank : ranks) {
                assertTrue(rank.join(Duration.ofSeconds(40)), rank.getName() + " hung");
            }
            assertEquals(List.of(), failures.stream().map(String::valueOf).toList(), "ranks failed");
            assertEquals(List.of(), List.copyOf(losses), "ranks were reported lost");
        }
    }

    /** Occupies every carrier of this JVM's virtual-thread scheduler for {@code duration}; returns when they are free. */
    private static void occupyEveryCarrier(Occupation occupation, Duration duration) throws Exception {
        int carriers = Integer.getInteger("jdk.virtualThreadScheduler.parallelism",
                Runtime.getRuntime().availableProcessors());
        CountDownLatch allOnCarriers = new CountDownLatch(carriers);
        long millis = duration.toMillis();
        MethodHandle poll = occupation == Occupation.NATIVE_CALL ? nativePoll() : null;
        List<Thread> occupiers = new ArrayList<>();
        for (int i = 0; i < carriers; i++) {
            occupiers.add(Thread.ofVirtual().name("application-" + i).start(() -> {
                allOnCarriers.countDown();
                if (poll != null) {
                    try {
                        int ignored = (int) poll.invokeExact(MemorySegment.NULL, 0L, (int) millis);
                    } catch (Throwable e) {
                        throw new AssertionError(e);
                    }
                } else {
                    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
                    while (System.nanoTime() < end) {
                        Thread.onSpinWait();
                    }
                }
            }));
        }
        // Each occupier counts down on its carrier and never parks until it is done: once all have, every carrier is taken.
        assertTrue(allOnCarriers.await(30, TimeUnit.SECONDS), "the occupying virtual threads did not all start");
        for (Thread occupier : occupiers) {
            assertTrue(occupier.join(Duration.ofSeconds(30)), "an occupying thread did not end");
        }
    }

    /** libc's {@code int poll(struct pollfd *, nfds_t, int timeout)}: with no descriptors, a blocking sleep in native code. */
    private static MethodHandle nativePoll() {
        Linker linker = Linker.nativeLinker();
        MemorySegment address = linker.defaultLookup().find("poll").orElseThrow();
        return linker.downcallHandle(address, FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS,
                ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT));
    }
}
